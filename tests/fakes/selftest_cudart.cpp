// Self-test of the fake libcudart.so.13. Run with FAKEGPU_CAPACITY=67108864
// FAKEGPU_DEVICES=2. (The no-driver case: selftest_cudart_nodriver.cpp.)
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include "selftest_check.h"

namespace {

constexpr uint64_t kCap = 64ull << 20;
constexpr uint64_t kDev0 = 0x100000000000ull;

bool in_dev(const void* p, int d) {
  const uint64_t a = reinterpret_cast<uintptr_t>(p);
  const uint64_t base = kDev0 + (static_cast<uint64_t>(d) << 40);
  return a >= base && a < base + (1ull << 34);  // the used part of the device range
}

using LiveFn = unsigned long long (*)(int);
LiveFn live_fn() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(h != nullptr);
  return h ? reinterpret_cast<LiveFn>(dlsym(h, "fakegpu_cuda_live_bytes")) : nullptr;
}

// Copies (simulate/runtime/kept_bytes.h): a small copy into device memory is
// read back until a kernel is launched or the memory is freed; a large one
// reads as zeros; a small fill is kept too; a copy between host buffers is
// made.
void check_kept_copies() {
  void* d = nullptr;
  CHECK_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  long long in[4] = {3, 512, 512, -7}, out[4] = {1, 1, 1, 1};
  CHECK_EQ(cudaMemcpyAsync(static_cast<char*>(d) + 100, in, sizeof in, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, static_cast<char*>(d) + 100, sizeof out, cudaMemcpyDefault), cudaSuccess);
  CHECK(memcmp(in, out, sizeof in) == 0);
  unsigned char wider[40];  // around what was copied in: zeros
  CHECK_EQ(cudaMemcpy(wider, static_cast<char*>(d) + 96, sizeof wider, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(wider[0] == 0 && wider[3] == 0 && memcmp(wider + 4, in, sizeof in) == 0 && wider[36] == 0);
  CHECK_EQ(cudaMemcpy(static_cast<char*>(d) + 4096, static_cast<char*>(d) + 100, sizeof in,
                      cudaMemcpyDeviceToDevice), cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, static_cast<char*>(d) + 4096, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(memcmp(in, out, sizeof in) == 0);
  CHECK_EQ(cudaMemsetAsync(d, 0xab, 8, nullptr), cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, d, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK_EQ(static_cast<unsigned long long>(out[0]), 0xababababababababull);
  // A kernel launch forgets what was kept: its writes are not followed.
  CHECK_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&in_dev), dim3(1), dim3(32), nullptr, 0, nullptr),
           cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, static_cast<char*>(d) + 100, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(out[0] == 0 && out[3] == 0);
  // A large copy in is dropped and reads as zeros; so does freed memory.
  static char big[128 << 10];
  memset(big, 1, sizeof big);
  CHECK_EQ(cudaMemcpy(d, big, sizeof big, cudaMemcpyHostToDevice), cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(out[0] == 0);
  CHECK_EQ(cudaMemcpy(d, in, sizeof in, cudaMemcpyHostToDevice), cudaSuccess);
  CHECK_EQ(cudaFree(d), cudaSuccess);
  CHECK_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  CHECK_EQ(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(out[0] == 0 && out[1] == 0);
  CHECK_EQ(cudaFree(d), cudaSuccess);
  long long host[4] = {0, 0, 0, 0};
  CHECK_EQ(cudaMemcpy(host, in, sizeof in, cudaMemcpyHostToHost), cudaSuccess);
  CHECK(memcmp(in, host, sizeof in) == 0);
}

}  // namespace

int main() {
  // The runtime does not link the driver: nothing has loaded it yet.
  CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr);

  // Argument errors set the sticky per-thread last error.
  CHECK_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);

  void* p = reinterpret_cast<void*>(0x1);
  CHECK_EQ(cudaMalloc(&p, 0), cudaSuccess);
  CHECK(p == nullptr);
  LiveFn live = live_fn();  // the runtime has now dlopen'ed the fake driver
  CHECK(live != nullptr);
  if (!live) return selftest_finish("selftest_cudart");

  int n = 0, v = 0;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  CHECK_EQ(n, 2);
  CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);

  void* a = nullptr;
  void* b = nullptr;
  CHECK_EQ(cudaMalloc(&a, 1 << 20), cudaSuccess);
  CHECK(in_dev(a, 0));
  CHECK_EQ(live(0), 1 << 20);  // recorded in the driver's ledger
  b = reinterpret_cast<void*>(0x1);
  CHECK_EQ(cudaMalloc(&b, kCap), cudaErrorMemoryAllocation);
  CHECK(b == nullptr);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  size_t fr = 0, tot = 0;
  CHECK_EQ(cudaMemGetInfo(&fr, &tot), cudaSuccess);
  CHECK_EQ(tot, kCap);
  CHECK_EQ(fr, kCap - (1 << 20));
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(cudaFree(a), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaFree(nullptr), cudaSuccess);
  CHECK_EQ(live(0), 0);

  // Host memory is not device memory.
  void* h1 = nullptr;
  void* h2 = nullptr;
  CHECK_EQ(cudaMallocHost(&h1, 1 << 20), cudaSuccess);
  CHECK_EQ(cudaHostAlloc(&h2, 1 << 20, cudaHostAllocDefault), cudaSuccess);
  CHECK(h1 != nullptr && h2 != nullptr);
  memset(h1, 0xab, 1 << 20);  // real memory
  CHECK_EQ(live(0), 0);
  CHECK_EQ(cudaFreeHost(h1), cudaSuccess);
  CHECK_EQ(cudaFreeHost(h2), cudaSuccess);
  CHECK_EQ(cudaFreeHost(h2), cudaErrorInvalidValue);

  // Pitch / 3D / managed / async / pool.
  size_t pitch = 0;
  CHECK_EQ(cudaMallocPitch(&a, &pitch, 1000, 10), cudaSuccess);
  CHECK_EQ(pitch, 1024);
  CHECK_EQ(live(0), 10240);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  cudaPitchedPtr pp{};
  cudaExtent ext{1000, 4, 2};
  CHECK_EQ(cudaMalloc3D(&pp, ext), cudaSuccess);
  CHECK_EQ(pp.pitch, 1024);
  CHECK_EQ(pp.xsize, 1000);
  CHECK_EQ(pp.ysize, 4);
  CHECK_EQ(live(0), 1024 * 8);
  CHECK_EQ(cudaFree(pp.ptr), cudaSuccess);
  CHECK_EQ(cudaMallocManaged(&a, 4096, cudaMemAttachGlobal), cudaSuccess);
  CHECK(in_dev(a, 0));
  CHECK_EQ(cudaFree(a), cudaSuccess);
  cudaStream_t s = nullptr;
  CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK_EQ(cudaMallocAsync(&a, 4096, s), cudaSuccess);
  CHECK_EQ(live(0), 4096);
  CHECK_EQ(cudaFreeAsync(a, s), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool, 1), cudaSuccess);
  CHECK_EQ(cudaMallocFromPoolAsync(&a, 4096, pool, s), cudaSuccess);
  CHECK(in_dev(a, 1));
  CHECK_EQ(live(1), 4096);
  CHECK_EQ(cudaFreeAsync(a, s), cudaSuccess);
  CHECK_EQ(cudaMallocAsync(&a, kCap + 1, s), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // Devices are per thread.
  int dev = -1;
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaGetDevice(&dev), cudaSuccess);
  CHECK_EQ(dev, 1);
  CHECK_EQ(cudaMalloc(&a, 512), cudaSuccess);
  CHECK(in_dev(a, 1));
  CHECK_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  std::thread t([&] {
    void* q = nullptr;
    int d = -1;
    CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
    CHECK_EQ(d, 0);
    CHECK_EQ(cudaMalloc(&q, 256), cudaSuccess);
    CHECK(in_dev(q, 0));
    CHECK_EQ(cudaFree(q), cudaSuccess);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);  // the main thread's error is not visible here
  });
  t.join();
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(live(0), 0);
  CHECK_EQ(live(1), 0);

  check_kept_copies();
  CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
  return selftest_finish("selftest_cudart");
}
