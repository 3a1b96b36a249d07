// A rapidjson input stream over a byte range of a file, read in fixed-size
// blocks: the streamed readers of the large bundle files (events.json,
// allocations.json) parse through it.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/bundle_read_json.h"

namespace gpumemrec::model::read {

// events.json in blocks of kBlockBytes read with pread: bounded memory
// whatever the file's size, no mapping (a file truncated under us is a
// short read, not a SIGBUS). A rapidjson input stream (Peek/Take/Tell);
// '\0' at the end, and at the first read error (then `failed` is set).
class BlockStream {
 public:
  using Ch = char;
  static constexpr size_t kBlockBytes = size_t(1) << 20;
  BlockStream(int fd, uint64_t start, uint64_t end) : fd_(fd), origin_(start), next_(start), end_(end) {
    buf_.resize(kBlockBytes);
    data_ = buf_.data();
  }
  __attribute__((always_inline)) char Peek() {
    if (__builtin_expect(pos_ == len_, 0) && !refill()) return '\0';
    return data_[pos_];
  }
  __attribute__((always_inline)) char Take() {
    if (__builtin_expect(pos_ == len_, 0) && !refill()) return '\0';
    return data_[pos_++];
  }
  size_t Tell() const { return static_cast<size_t>(next_ - len_ + pos_ - origin_); }
  uint64_t offset() const { return next_ - len_ + pos_; }  // in the file
  bool failed = false;
  // Output functions rapidjson's concept requires; never called by Reader.
  char* PutBegin() { return nullptr; }
  void Put(char) {}
  void Flush() {}
  size_t PutEnd(char*) { return 0; }

 private:
  __attribute__((noinline)) bool refill() {
    if (next_ >= end_) return false;
    size_t want = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, end_ - next_));
    ssize_t got = pread_full(fd_, buf_.data(), want, next_);
    if (got <= 0) {
      failed = got < 0;
      end_ = next_;
      return false;
    }
    pos_ = 0;
    len_ = static_cast<size_t>(got);
    next_ += len_;
    return true;
  }
  int fd_;
  uint64_t origin_, next_, end_;
  std::vector<char> buf_;
  char* data_ = nullptr;
  size_t pos_ = 0, len_ = 0;
};

// Closes the file descriptor it holds when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace gpumemrec::model::read
