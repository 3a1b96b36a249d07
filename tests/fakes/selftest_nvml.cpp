// Self-test of the fake libnvidia-ml.so.1. Run with FAKEGPU_CAPACITY=67108864
// FAKEGPU_DEVICES=2 FAKEGPU_NVML_PROCS=4242:1000:python3,4343:2000.
#include <cuda.h>  // types only: the fake driver is dlopen'ed mid-test
#include <dlfcn.h>
#include <unistd.h>

#include <cstring>

#include "selftest_check.h"

extern "C" {
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int*);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int, char*, unsigned int);
const char* nvmlErrorString(nvmlReturn_t);
}

int main() {
  unsigned int n = 0;
  CHECK_EQ(nvmlDeviceGetCount_v2(&n), 1);  // uninitialized
  CHECK_EQ(nvmlInit_v2(), 0);
  CHECK_EQ(nvmlDeviceGetCount_v2(&n), 0);
  CHECK_EQ(n, 2);
  nvmlDevice_t d0 = nullptr, d1 = nullptr;
  CHECK_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d0), 0);
  CHECK_EQ(nvmlDeviceGetHandleByIndex_v2(1, &d1), 0);
  CHECK_EQ(nvmlDeviceGetHandleByIndex_v2(2, &d1), 2);

  // libcuda not loaded: only the environment's processes.
  nvmlProcessInfo_t infos[8];
  unsigned int count = 0;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, nullptr), 7);  // insufficient size
  CHECK_EQ(count, 2);
  count = 8;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos), 0);
  CHECK_EQ(count, 2);
  CHECK_EQ(infos[0].pid, 4242);
  CHECK_EQ(infos[0].usedGpuMemory, 1000);
  CHECK_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);
  CHECK_EQ(infos[1].pid, 4343);
  CHECK_EQ(infos[1].usedGpuMemory, 2000);
  count = 8;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d1, &count, infos), 0);
  CHECK_EQ(count, 0);

  // Load the fake driver and allocate: this process shows up with its bytes.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CHECK(h != nullptr);
  if (h) {
    auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(dlsym(h, "cuMemAlloc_v2"));
    CUdeviceptr p = 0;
    CHECK(alloc != nullptr && alloc(&p, 1 << 20) == CUDA_SUCCESS);
  }
  count = 8;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos), 0);
  CHECK_EQ(count, 3);
  CHECK_EQ(infos[2].pid, static_cast<unsigned int>(getpid()));
  CHECK_EQ(infos[2].usedGpuMemory, 1 << 20);
  count = 1;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos), 7);
  CHECK_EQ(count, 3);
  nvmlProcessInfo_v1_t v1[4];
  count = 4;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses(d0, &count, v1), 0);
  CHECK_EQ(count, 3);
  CHECK_EQ(v1[1].pid, 4343);
  CHECK_EQ(v1[2].usedGpuMemory, 1 << 20);
  count = 8;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d1, &count, infos), 0);
  CHECK_EQ(count, 1);  // device 1: only this process (0 bytes there)
  CHECK_EQ(infos[0].usedGpuMemory, 0);

  nvmlMemory_t mem{};
  CHECK_EQ(nvmlDeviceGetMemoryInfo(d0, &mem), 0);
  CHECK_EQ(mem.total, 64ull << 20);
  CHECK_EQ(mem.used, 3000 + (1 << 20));
  CHECK_EQ(mem.free, mem.total - mem.used);

  char name[256];
  CHECK_EQ(nvmlSystemGetProcessName(4242, name, sizeof name), 0);
  CHECK(strcmp(name, "python3") == 0);
  CHECK_EQ(nvmlSystemGetProcessName(static_cast<unsigned int>(getpid()), name, sizeof name), 0);
  CHECK(strstr(name, "selftest_nvml") != nullptr);
  CHECK(strcmp(nvmlErrorString(7), "Insufficient Size") == 0);
  CHECK_EQ(nvmlShutdown(), 0);
  CHECK_EQ(nvmlShutdown(), 1);
  return selftest_finish("selftest_nvml");
}
