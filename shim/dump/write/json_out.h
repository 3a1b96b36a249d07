// Output for bundle files: a RapidJSON-compatible stream that writes through
// a caller-provided buffer straight to a file descriptor. No allocation per
// write; the first write error (ENOSPC, EFBIG, EIO) sticks and is reported by
// finish(), so a bundle with any failed file is discarded whole.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#define RAPIDJSON_HAS_STDSTRING 1
#include <rapidjson/writer.h>

#include <cstdlib>
#include <new>

#include "shim/base/dump_memory.h"
#include "shim/base/dump_progress.h"
#include "shim/base/fd_io.h"
#include "shim/dump/write/zstd_out.h"

namespace gpumemrec {

class FdOut {
 public:
  typedef char Ch;
  FdOut(int fd, char* buf, size_t cap) : fd_(fd), buf_(buf), cap_(cap) {}
  ~FdOut() = default;

  void Put(char c) {
    if (len_ == cap_) drain();
    buf_[len_++] = c;
  }
  void Flush() {}  // RapidJSON calls this at the end of a document; finish() drains
  void write(const char* s, size_t n) {
    while (n) {
      if (len_ == cap_) drain();
      size_t k = cap_ - len_ < n ? cap_ - len_ : n;
      std::memcpy(buf_ + len_, s, k);
      len_ += k;
      s += k;
      n -= k;
    }
  }
  void write(const char* s) { write(s, std::strlen(s)); }

  // GPUMEMREC_COMPRESS: every drained block goes through `z` (zstd_out.h).
  void compress_with(ZstdOut* z) { z_ = z; }

  // Drains the buffer; true if every byte reached the file.
  bool finish() {
    drain();
    if (z_ && error_ == 0) error_ = z_->end();
    return error_ == 0;
  }
  int error() const { return error_; }
  uint64_t bytes_written() const { return total_; }

 private:
  void drain() {
    if (error_ == 0 && len_ > 0) {
      error_ = z_ ? z_->write(buf_, len_) : fd_write_all(fd_, buf_, len_);
      if (error_ == 0) total_ += len_;
      dump_progress_step();  // the exit wait follows the writer (dump_progress.h)
    }
    len_ = 0;
  }

  int fd_;
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  uint64_t total_ = 0;  // before compression
  int error_ = 0;
  ZstdOut* z_ = nullptr;
};

// The writer's nesting stack: malloc, or the dump path's emergency arena when
// malloc fails (rapidjson's default CrtAllocator does not check for NULL:
// a host out-of-memory during a dump crashed the program). Throws
// std::bad_alloc when both are exhausted; the dumper catches it and removes
// the half-written bundle.
struct DumpJsonAllocator {
  static const bool kNeedFree = true;
  void* Malloc(size_t size) {
    if (!size) return nullptr;
    if (void* p = std::malloc(size)) return p;
    if (void* p = dump_memory_alloc(size)) return p;
    throw std::bad_alloc();
  }
  void* Realloc(void* old, size_t old_size, size_t new_size) {
    if (new_size == 0) {
      Free(old);
      return nullptr;
    }
    if (old && !dump_memory_owns(old)) {
      if (void* p = std::realloc(old, new_size)) return p;
    }
    void* p = Malloc(new_size);
    if (old) {
      std::memcpy(p, old, old_size < new_size ? old_size : new_size);
      Free(old);
    }
    return p;
  }
  static void Free(void* p) {
    if (p && !dump_memory_owns(p)) std::free(p);
  }
};

using JsonWriter = rapidjson::Writer<FdOut, rapidjson::UTF8<>, rapidjson::UTF8<>, DumpJsonAllocator>;

}  // namespace gpumemrec
