// A process on the simulated devices, driven line by line on stdin by
// test_shared_devices.py: it allocates and frees through the simulated
// driver and reads what the driver and NVML say of the device.
//
//   device D        make device D's primary context current
//   alloc BYTES     cuMemAlloc_v2         -> "ok" or "error <CUresult>"
//   free            frees everything this probe allocated -> "ok"
//   info            cuMemGetInfo_v2       -> "free <bytes> total <bytes>"
//   nvml D          NVML's process list of device D -> "<pid> <bytes>" lines, then "end"
//   exit            exit(0) (destructors run); "_exit": _exit(0) (they do not)
//   kill            SIGKILL itself
// Every answer ends with a newline and is flushed.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void* lib(const char* name) {
  void* h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    printf("error no %s\n", name);
    fflush(stdout);
    exit(2);
  }
  return h;
}

template <typename F>
F sym(void* h, const char* name) {
  return reinterpret_cast<F>(dlsym(h, name));
}

struct NvmlProc {  // nvmlProcessInfo_t (v2/v3): 24 bytes
  unsigned int pid;
  unsigned long long used;
  unsigned int gi, ci;
};

void nvml_list(void* nvml, int device) {
  auto init = sym<int (*)()>(nvml, "nvmlInit_v2");
  auto handle = sym<int (*)(unsigned, void**)>(nvml, "nvmlDeviceGetHandleByIndex_v2");
  auto list = sym<int (*)(void*, unsigned*, NvmlProc*)>(nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
  void* dev = nullptr;
  NvmlProc procs[64];
  unsigned n = 64;
  if (init() == 0 && handle(static_cast<unsigned>(device), &dev) == 0 && list(dev, &n, procs) == 0)
    for (unsigned i = 0; i < n; ++i) printf("%u %llu\n", procs[i].pid, procs[i].used);
  printf("end\n");
}

}  // namespace

int main() {
  void* cuda = lib("libcuda.so.1");
  auto cu_init = sym<CUresult (*)(unsigned)>(cuda, "cuInit");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(cuda, "cuDevicePrimaryCtxRetain");
  auto set_ctx = sym<CUresult (*)(CUcontext)>(cuda, "cuCtxSetCurrent");
  auto alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(cuda, "cuMemAlloc_v2");
  auto mem_free = sym<CUresult (*)(CUdeviceptr)>(cuda, "cuMemFree_v2");
  auto info = sym<CUresult (*)(size_t*, size_t*)>(cuda, "cuMemGetInfo_v2");
  cu_init(0);
  std::vector<CUdeviceptr> held;
  char line[256];
  while (fgets(line, sizeof line, stdin) != nullptr) {
    char cmd[32] = "";
    unsigned long long arg = 0;
    sscanf(line, "%31s %llu", cmd, &arg);
    const std::string c = cmd;
    if (c == "device") {
      CUcontext ctx = nullptr;
      const CUresult r = retain(&ctx, static_cast<CUdevice>(arg));
      printf(r == CUDA_SUCCESS && set_ctx(ctx) == CUDA_SUCCESS ? "ok\n" : "error %d\n", r);
    } else if (c == "alloc") {
      CUdeviceptr p = 0;
      const CUresult r = alloc(&p, arg);
      if (r == CUDA_SUCCESS) held.push_back(p);
      printf(r == CUDA_SUCCESS ? "ok\n" : "error %d\n", r);
    } else if (c == "free") {
      for (CUdeviceptr p : held) mem_free(p);
      held.clear();
      printf("ok\n");
    } else if (c == "info") {
      size_t f = 0, t = 0;
      info(&f, &t);
      printf("free %zu total %zu\n", f, t);
    } else if (c == "nvml") {
      nvml_list(lib("libnvidia-ml.so.1"), static_cast<int>(arg));
    } else if (c == "exit") {
      fflush(stdout);
      exit(0);
    } else if (c == "_exit") {
      fflush(stdout);
      _exit(0);
    } else if (c == "kill") {
      raise(SIGKILL);
    } else {
      printf("error unknown command\n");
    }
    fflush(stdout);
  }
  return 0;
}
