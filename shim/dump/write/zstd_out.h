// GPUMEMREC_COMPRESS=zstd: a bundle file compressed as it is written. The
// file's buffer (FdOut) hands each full block to ZstdOut instead of write(2);
// ZstdOut compresses it into its own output block and writes that.
// libzstd.so.1 is loaded at the first compressed dump (common/zstd_dl.h):
// when it is missing, or memory is too short for its context, make() returns
// null and the file is written as plain JSON under its plain name (the
// manifest lists what was written, so readers follow).
#pragma once
#include <cstddef>
#include <memory>

namespace gpumemrec {

class ZstdOut {
 public:
  // Level 1: the figures in docs/performance.md ("Compressed bundles").
  static constexpr int kLevel = 1;
  // Null when zstd cannot be used (the reason in *why, static text).
  static std::unique_ptr<ZstdOut> make(const char** why);
  ~ZstdOut();
  ZstdOut(const ZstdOut&) = delete;
  ZstdOut& operator=(const ZstdOut&) = delete;

  void set_fd(int fd) { fd_ = fd; }
  // Compresses and writes; an errno value (EIO for a zstd error), 0 when done.
  int write(const char* data, size_t n);
  int end();  // the end of the frame

 private:
  ZstdOut() = default;
  int run(const char* data, size_t n, int mode);
  void* cctx_ = nullptr;
  char* out_ = nullptr;
  int fd_ = -1;
};

}  // namespace gpumemrec
