// A stand-in for the GPU libraries behind our wrappers, for the hooks' unit
// tests: the same names and ABIs as libcuda / libcudart (cuda.h,
// cuda_runtime_api.h), with the result, errno and calls under the test's
// control. Loaded with dlopen(RTLD_LOCAL) like Python and the static runtime
// load libcuda, so the wrappers find it through dlsym(handle, ...) or
// cuGetProcAddress, never by name.
//
// cudaMalloc calls "the driver" through a pointer the test sets, as the
// shared runtime calls cuMemAlloc_v2 through its entry-point table (which,
// under the shim, holds our wrapper): the nested call the re-entrancy guard
// keeps out of the record.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#undef cuGetProcAddress

#define STUB_API extern "C" __attribute__((visibility("default")))

namespace {

// Atomic: the threads of Wrap.ThreadsRacing* call in at once, as a real
// driver's callers do (a plain counter handed two threads one address).
std::atomic<int> g_rc{0};     // what the next calls return
std::atomic<int> g_errno{0};  // what they leave in errno (0: untouched)
std::atomic<int> g_calls{0};  // allocation and free calls that reached us
int g_proc_mode = 0;  // cuGetProcAddress: 0 the exported function, 1 an internal entry
int g_call_line = 0;  // the line of the call in stub_call_back
std::atomic<uint64_t> g_last_size{0};  // the size of the last allocation asked for
std::atomic<uint64_t> g_next{0x7f1000000000ull};
CUresult (*g_inner)(CUdeviceptr*, size_t) = nullptr;

CUresult finish(CUresult rc) {
  if (g_errno) errno = g_errno;
  return rc;
}

// What an internal (non-exported) entry point of the driver looks like.
CUresult internal_alloc(CUdeviceptr* dptr, size_t bytesize) {
  ++g_calls;
  g_last_size = bytesize;
  if (g_rc) return finish(CUresult(g_rc.load()));
  if (bytesize > (uint64_t(1) << 50)) return finish(CUDA_ERROR_OUT_OF_MEMORY);  // more than any device
  *dptr = g_next.fetch_add((bytesize + 0xfff) & ~uint64_t(0xfff));
  return finish(CUDA_SUCCESS);
}

}  // namespace

STUB_API void stub_behave(int rc, int errno_value) {
  g_rc = rc;
  g_errno = errno_value;
}
STUB_API int stub_calls() { return g_calls; }
STUB_API uint64_t stub_last_size() { return g_last_size; }
STUB_API void stub_set_inner(void* fn) { g_inner = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn); }
STUB_API void stub_set_proc_mode(int mode) { g_proc_mode = mode; }
STUB_API void* stub_internal_alloc() { return reinterpret_cast<void*>(&internal_alloc); }

STUB_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (!dptr) {
    ++g_calls;
    return finish(CUDA_ERROR_INVALID_VALUE);  // the driver checks its out-parameter
  }
  return internal_alloc(dptr, bytesize);
}

STUB_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  ++g_calls;
  (void)dptr;
  return finish(CUresult(g_rc.load()));
}

STUB_API cudaError_t cudaMalloc(void** devPtr, size_t size) {
  ++g_calls;
  g_last_size = size;
  if (!g_inner) return cudaErrorInitializationError;
  CUdeviceptr p = 0;
  const CUresult rc = g_inner(&p, size);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return cudaErrorMemoryAllocation;
  if (rc != CUDA_SUCCESS) return cudaErrorInvalidValue;
  *devPtr = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

// cuGetProcAddress_v2 as the driver answers it: the address for the name
// asked (the _v2 ABI for "cuMemAlloc"), exported or internal.
STUB_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult* status) {
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  if (std::strcmp(symbol, "cuMemAlloc") == 0) {
    *pfn = g_proc_mode ? reinterpret_cast<void*>(&internal_alloc) : reinterpret_cast<void*>(&cuMemAlloc_v2);
    return CUDA_SUCCESS;
  }
  if (std::strcmp(symbol, "cuMemFree") == 0) {
    *pfn = reinterpret_cast<void*>(&cuMemFree_v2);
    return CUDA_SUCCESS;
  }
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// For the symbolizer's test: calls `cb`, whose return address then lies in
// this library, in this function, at the line of the call.
STUB_API int stub_call_line() { return g_call_line; }
STUB_API __attribute__((noinline)) uint64_t stub_call_back(uint64_t (*cb)()) {
  const uint64_t ip = cb(); g_call_line = __LINE__;
  asm volatile("" ::: "memory");
  return ip;
}
