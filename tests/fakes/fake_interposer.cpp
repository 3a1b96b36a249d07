// Preloadable test library: interposes cuMemAlloc_v2 and counts the calls it
// sees, forwarding to the next definition (the fake libcuda). Used by
// `selftest_cuda interposed` to prove that the fake driver's cuGetProcAddress
// hands out its own functions (as dlsym on its handle does), never the
// interposed ones, and that the fake runtime's calls through those pointers
// bypass exported-symbol interposition, exactly like NVIDIA's libraries.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>

static std::atomic<int> g_calls{0};

extern "C" __attribute__((visibility("default"))) int fake_interposer_calls(void) { return g_calls.load(); }

extern "C" __attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t);
  static Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cuMemAlloc_v2"));
  ++g_calls;
  if (next == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return next(dptr, bytesize);
}
