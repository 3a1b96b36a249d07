// Copies and fills. Device memory is address space only (docs/simulate.md):
// a copy into it or a fill of it is dropped, a copy out of it gives zeros, a
// copy between host buffers is made. So a program's `.item()` and other
// reads of what kernels computed see 0. A small copy or fill is kept until
// the next kernel launch and read back meanwhile (kept_bytes.h).
#include <cstdint>
#include <cstring>

#include "runtime/internal.h"
#include "runtime/kept_bytes.h"

namespace rt {
namespace {

bool kind_ok(cudaMemcpyKind k) { return k >= cudaMemcpyHostToHost && k <= cudaMemcpyDefault; }

// Where the bytes of one side of a copy live, from the kind the caller gave
// or, for cudaMemcpyDefault, from the address.
bool on_device(const void* p, cudaMemcpyKind kind, bool is_dst) {
  switch (kind) {
    case cudaMemcpyHostToHost: return false;
    case cudaMemcpyHostToDevice: return is_dst;
    case cudaMemcpyDeviceToHost: return !is_dst;
    case cudaMemcpyDeviceToDevice: return true;
    default: return where(p) == Where::Device;
  }
}

// One row of `width` bytes.
void copy_row(void* dst, const void* src, size_t width, cudaMemcpyKind kind) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const bool into = on_device(dst, kind, true), out_of = on_device(src, kind, false);
  if (into && out_of)
    kept::copy(d, s, width);
  else if (into)
    kept::write(d, src, width);  // kept when small, else dropped
  else if (out_of)
    kept::read(dst, s, width);   // zeros, or what a small copy left there
  else
    memmove(dst, src, width);
}

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (!kind_ok(kind)) return record(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  copy_row(dst, src, count, kind);
  return cudaSuccess;
}

cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind) {
  if (!kind_ok(kind)) return record(cudaErrorInvalidMemcpyDirection);
  if (width == 0 || height == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr || width > dpitch || width > spitch) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  for (size_t r = 0; r < height; ++r)
    copy_row(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width, kind);
  return cudaSuccess;
}

// A fill of `height` rows of `width` bytes, `pitch` apart: of device memory,
// kept when small (kept_bytes.h); of other memory (managed memory the host
// cannot touch here is device memory too), refused as the runtime does.
cudaError_t fill(void* p, int value, size_t width, size_t pitch = 0, size_t height = 1) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (where(p) != Where::Device) return record(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r)
    kept::fill(reinterpret_cast<uintptr_t>(p) + r * pitch, static_cast<unsigned char>(value), width);
  return cudaSuccess;
}

}  // namespace
}  // namespace rt

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return rt::copy(dst, src, count, kind);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                                 cudaStream_t stream) {
  return rt::copy(dst, src, count, kind);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                              size_t height, enum cudaMemcpyKind kind) {
  return rt::copy_2d(dst, dpitch, src, spitch, width, height, kind);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                                   cudaStream_t stream) {
  return rt::copy_2d(dst, dpitch, src, spitch, width, height, kind);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                                     size_t count, cudaStream_t stream) {
  const int n = rt::device_count();
  if (dstDevice < 0 || dstDevice >= n || srcDevice < 0 || srcDevice >= n) return rt::record(cudaErrorInvalidDevice);
  return rt::copy(dst, src, count, cudaMemcpyDeviceToDevice);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice,
                                                size_t count) {
  return cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, count, nullptr);
}

// A __device__ variable's copy: the variable lives in device memory.
SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                                    enum cudaMemcpyKind kind) {
  if (symbol == nullptr) return rt::record(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return rt::record(cudaErrorInvalidMemcpyDirection);
  if (cudaError_t e = rt::ensure_ctx()) return rt::record(e);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                                         size_t offset, enum cudaMemcpyKind kind,
                                                         cudaStream_t stream) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  return rt::fill(devPtr, value, count);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return rt::fill(devPtr, value, count);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width,
                                                   size_t height, cudaStream_t stream) {
  return rt::fill(devPtr, value, width, pitch, height);
}
