// The null driver: a CUDA runtime (SONAME libcudart.so.13) whose cudaMalloc
// and cudaFree do almost nothing and share nothing between threads, so that
// a benchmark through it shows only the recorder's own cost (and whatever
// the recorder shares between threads), not the fake driver's ledger mutex.
//
// Each thread hands out addresses from its own 1 TiB window (a thread-local
// bump pointer; the window index is taken once per thread), never reuses
// one, and cudaFree returns success without looking. cudaMalloc of more than
// kCapacity bytes fails with cudaErrorMemoryAllocation (the out-of-memory
// the shim records). Nothing else of the runtime is emulated: the functions
// below are the ones alloc_bench and the shim's runtime hooks call.
//
// bench/CMakeLists.txt builds alloc_bench twice from one source: alloc_bench
// against the fake runtime (tests/fakes) and alloc_bench_null against this
// library (RPATH to bench/null/); run_bench.py's null-driver rows run the
// second.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#define NULL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t kBase = 0x100000000000ull;  // where the fake driver's device 0 starts
constexpr uint64_t kWindow = 1ull << 40;       // per thread
constexpr uint64_t kCapacity = 1ull << 36;     // one allocation larger than this is an out-of-memory

std::atomic<uint64_t> g_windows{0};  // touched once per thread, never on the per-call path
thread_local uint64_t t_next = 0;
thread_local uint64_t t_end = 0;
thread_local cudaError_t t_last = cudaSuccess;

cudaError_t fail(cudaError_t e) {
  t_last = e;
  return e;
}

}  // namespace

NULL_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  const uint64_t bytes = (uint64_t(size) + 255) & ~uint64_t(255);
  if (size > kCapacity) {
    *devPtr = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  // At most 64 windows: a 65th thread would share the first (the bench runs
  // at most 16).
  if (t_next + bytes > t_end) {  // first call of this thread, or its window is used up
    const uint64_t w = g_windows.fetch_add(1, std::memory_order_relaxed);
    t_next = kBase + (w % 64) * kWindow;
    t_end = t_next + kWindow;
  }
  *devPtr = reinterpret_cast<void*>(t_next);
  t_next += bytes;
  return cudaSuccess;
}

NULL_EXPORT cudaError_t cudaFree(void*) { return cudaSuccess; }

NULL_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

NULL_EXPORT cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }

NULL_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

NULL_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes) *free_bytes = kCapacity;
  if (total_bytes) *total_bytes = kCapacity;
  return cudaSuccess;
}

NULL_EXPORT cudaError_t cudaGetLastError() {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}

NULL_EXPORT cudaError_t cudaPeekAtLastError() { return t_last; }

NULL_EXPORT const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "null driver error"; }

NULL_EXPORT const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : "cudaErrorNullDriver";
}
