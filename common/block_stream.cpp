#include "common/block_stream.h"

#include "common/zstd_dl.h"

namespace gpumemrec::model::read {

BlockStream::BlockStream(int fd, uint64_t start, uint64_t end, bool zstd)
    : fd_(fd), origin_(start), next_(start), end_(end), block_at_(start) {
  buf_.resize(kBlockBytes);
  data_ = buf_.data();
  if (!zstd) return;
  origin_ = block_at_ = 0;  // Tell() counts decompressed bytes
  const zstd::Api* z = zstd::api();
  if (!z) {
    zstd_error = std::string("compressed with zstd, and ") + zstd::kLibrary + " cannot be loaded (install libzstd1)";
  } else if (!(dctx_ = z->createDCtx())) {
    zstd_error = "no memory to decompress";
  } else {
    in_.resize(kBlockBytes);
  }
  if (!zstd_error.empty()) {
    failed = true;
    end_ = next_;
  }
}

BlockStream::~BlockStream() {
  if (dctx_) zstd::api()->freeDCtx(dctx_);
}

bool BlockStream::refill() { return dctx_ ? refill_zstd() : refill_plain(); }

bool BlockStream::refill_plain() {
  if (next_ >= end_) return false;
  size_t want = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, end_ - next_));
  ssize_t got = pread_full(fd_, buf_.data(), want, next_);
  if (got <= 0) {
    failed = got < 0;
    end_ = next_;
    return false;
  }
  block_at_ = next_;
  pos_ = 0;
  len_ = static_cast<size_t>(got);
  next_ += len_;
  return true;
}

// Decompresses until at least one byte comes out, or the input ends (a
// stream cut inside a frame is an error: the file was truncated).
bool BlockStream::refill_zstd() {
  const zstd::Api* z = zstd::api();
  block_at_ += len_;
  pos_ = len_ = 0;
  for (;;) {
    if (in_pos_ == in_len_) {
      if (next_ >= end_) {
        if (!frame_done_) zstd_error = "truncated zstd stream";
        failed = !frame_done_;
        return false;
      }
      ssize_t got = pread_full(fd_, in_.data(), std::min<uint64_t>(in_.size(), end_ - next_), next_);
      if (got <= 0) {
        failed = true;
        end_ = next_;
        return false;
      }
      next_ += static_cast<uint64_t>(got);
      in_pos_ = 0;
      in_len_ = static_cast<size_t>(got);
    }
    zstd::InBuffer in{in_.data(), in_len_, in_pos_};
    zstd::OutBuffer out{buf_.data(), buf_.size(), 0};
    size_t r = z->decompressStream(dctx_, &out, &in);
    in_pos_ = in.pos;
    if (z->isError(r)) {
      zstd_error = std::string("not a valid zstd stream (") + z->getErrorName(r) + ")";
      failed = true;
      end_ = next_ = 0;
      in_pos_ = in_len_ = 0;
      return false;
    }
    frame_done_ = r == 0;
    if (out.pos > 0) {
      len_ = out.pos;
      return true;
    }
  }
}

size_t BlockStream::next_block(const char** data) {
  if (pos_ == len_ && !refill()) return 0;
  *data = data_ + pos_;
  size_t n = len_ - pos_;
  pos_ = len_;
  return n;
}

bool is_zstd_path(const std::string& path) {
  const size_t n = std::char_traits<char>::length(zstd::kSuffix);
  return path.size() > n && path.compare(path.size() - n, n, zstd::kSuffix) == 0;
}

}  // namespace gpumemrec::model::read
