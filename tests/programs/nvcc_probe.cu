// nvcc_probe: a tiny CUDA program built with the REAL nvcc twice:
//   nvcc_static  (nvcc's default: static runtime, libcudart_static)
//   nvcc_shared  (-cudart shared: /usr/local/cuda/lib64/libcudart.so.13,
//                 DT_RPATH to /usr/local/cuda/lib64 so LD_LIBRARY_PATH cannot
//                 swap in the fake runtime)
// Host code only. Prints every return code; always exits 0. Without a driver
// the calls fail with 35 (cudaErrorInsufficientDriver) or 34 (stub library);
// with the fake libcuda.so.1 on LD_LIBRARY_PATH NVIDIA's runtime fails at
// cuGetExportTable, which the fake does not support.
//
// Output:
//   START prog=nvcc_probe
//   CALL api=<name> rc=<code> name=<cudaGetErrorName> [value=...]
//   DONE
#include <cuda_runtime.h>

#include <cstdio>

extern "C" __attribute__((noinline)) void report_call_nvcc(const char* api, cudaError_t e, const char* extra) {
  printf("CALL api=%s rc=%d name=%s%s%s\n", api, static_cast<int>(e), cudaGetErrorName(e), extra[0] ? " " : "",
         extra);
}

extern "C" __attribute__((noinline)) void probe_allocation_nvcc() {
  char buf[128];
  int v = -1;
  cudaError_t e = cudaRuntimeGetVersion(&v);
  snprintf(buf, sizeof buf, "value=%d", v);
  report_call_nvcc("cudaRuntimeGetVersion", e, buf);
  v = -1;
  e = cudaDriverGetVersion(&v);
  snprintf(buf, sizeof buf, "value=%d", v);
  report_call_nvcc("cudaDriverGetVersion", e, buf);
  int count = -1;
  e = cudaGetDeviceCount(&count);
  snprintf(buf, sizeof buf, "value=%d", count);
  report_call_nvcc("cudaGetDeviceCount", e, buf);
  void* p = nullptr;
  e = cudaMalloc(&p, 1 << 20);
  snprintf(buf, sizeof buf, "ptr=%p size=%d", p, 1 << 20);
  report_call_nvcc("cudaMalloc", e, buf);
  e = cudaFree(p);
  report_call_nvcc("cudaFree", e, "");
  size_t free_b = 0, total_b = 0;
  e = cudaMemGetInfo(&free_b, &total_b);
  snprintf(buf, sizeof buf, "free=%zu total=%zu", free_b, total_b);
  report_call_nvcc("cudaMemGetInfo", e, buf);
  e = cudaGetLastError();
  report_call_nvcc("cudaGetLastError", e, "");
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  printf("START prog=nvcc_probe\n");
  probe_allocation_nvcc();
  printf("DONE\n");
  return 0;
}
