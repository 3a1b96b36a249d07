// A rapidjson input stream over a byte range of a file, read in fixed-size
// blocks: the streamed readers of the large bundle files (events.json,
// allocations.json) parse through it. A file written with
// GPUMEMREC_COMPRESS=zstd (<name>.zst) is decompressed block by block
// (libzstd.so.1 loaded at run time, common/zstd_dl.h): memory is the same
// two blocks whatever the file's size.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bundle_read_json.h"

namespace gpumemrec::model::read {

// events.json in blocks of kBlockBytes read with pread: bounded memory
// whatever the file's size, no mapping (a file truncated under us is a
// short read, not a SIGBUS). A rapidjson input stream (Peek/Take/Tell);
// '\0' at the end, and at the first read error (then `failed` is set, and
// `zstd_error` for a compressed file that is not valid zstd).
class BlockStream {
 public:
  using Ch = char;
  static constexpr size_t kBlockBytes = size_t(1) << 20;
  // `zstd`: the range is a zstd stream; Tell() then counts decompressed bytes.
  BlockStream(int fd, uint64_t start, uint64_t end, bool zstd = false);
  ~BlockStream();
  BlockStream(const BlockStream&) = delete;
  BlockStream& operator=(const BlockStream&) = delete;
  __attribute__((always_inline)) char Peek() {
    if (__builtin_expect(pos_ == len_, 0) && !refill()) return '\0';
    return data_[pos_];
  }
  __attribute__((always_inline)) char Take() {
    if (__builtin_expect(pos_ == len_, 0) && !refill()) return '\0';
    return data_[pos_++];
  }
  size_t Tell() const { return static_cast<size_t>(block_at_ + pos_ - origin_); }
  uint64_t offset() const { return block_at_ + pos_; }  // in the file (plain files)
  // The next block of data as it is (for reading a whole file); 0 at the end.
  size_t next_block(const char** data);
  bool failed = false;
  std::string zstd_error;  // the file is not valid zstd (or libzstd is missing)
  // Output functions rapidjson's concept requires; never called by Reader.
  char* PutBegin() { return nullptr; }
  void Put(char) {}
  void Flush() {}
  size_t PutEnd(char*) { return 0; }

 private:
  __attribute__((noinline)) bool refill();
  bool refill_plain();
  bool refill_zstd();
  int fd_;
  uint64_t origin_, next_, end_;
  uint64_t block_at_;  // where data_[0] is in the stream
  std::vector<char> buf_;
  char* data_ = nullptr;
  size_t pos_ = 0, len_ = 0;
  void* dctx_ = nullptr;  // zstd: the decompression context, the compressed block
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  bool frame_done_ = true;
};

// True when `path` names a compressed bundle file (<name>.zst).
bool is_zstd_path(const std::string& path);

// Closes the file descriptor it holds when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace gpumemrec::model::read
