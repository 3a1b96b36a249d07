#include "shim/dump/write/zstd_out.h"

#include <cerrno>
#include <cstdlib>
#include <new>

#include "common/zstd_dl.h"
#include "shim/base/fd_io.h"

namespace gpumemrec {

namespace {
// Above ZSTD_CStreamOutSize() (128 KiB + a block header): one compressed
// block always fits.
constexpr size_t kOutBytes = size_t(256) << 10;
}  // namespace

std::unique_ptr<ZstdOut> ZstdOut::make(const char** why) {
  const zstd::Api* z = zstd::api();
  if (!z) {
    *why = "libzstd.so.1 could not be loaded";
    return nullptr;
  }
  std::unique_ptr<ZstdOut> o(new (std::nothrow) ZstdOut);
  if (o) o->out_ = static_cast<char*>(malloc(kOutBytes));
  if (o && o->out_) o->cctx_ = z->createCCtx();
  if (!o || !o->out_ || !o->cctx_ || z->isError(z->CCtx_setParameter(o->cctx_, zstd::kLevelParameter, kLevel))) {
    *why = "no memory for the compressor";
    return nullptr;
  }
  return o;
}

ZstdOut::~ZstdOut() {
  if (cctx_) zstd::api()->freeCCtx(cctx_);
  free(out_);
}

int ZstdOut::run(const char* data, size_t n, int mode) {
  const zstd::Api* z = zstd::api();
  zstd::InBuffer in{data, n, 0};
  for (;;) {
    zstd::OutBuffer out{out_, kOutBytes, 0};
    size_t left = z->compressStream2(cctx_, &out, &in, mode);
    if (z->isError(left)) return EIO;
    if (out.pos > 0)
      if (int e = fd_write_all(fd_, out_, out.pos)) return e;
    bool done = mode == zstd::kEnd ? left == 0 : in.pos == in.size;
    if (done) return 0;
  }
}

int ZstdOut::write(const char* data, size_t n) { return run(data, n, zstd::kContinue); }
int ZstdOut::end() { return run(nullptr, 0, zstd::kEnd); }

}  // namespace gpumemrec
