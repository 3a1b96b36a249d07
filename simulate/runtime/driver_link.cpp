// The runtime's link to the driver (internal.h): loading it, the primary
// context of each thread's device, and the thread's last error.
#include <dlfcn.h>

#include <mutex>

#include "core/config.h"
#include "runtime/internal.h"

namespace rt {

Driver g_drv;

namespace {

using PFN_gpa_v2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

cudaError_t g_init_error = cudaSuccess;
std::once_flag g_init_once;

std::mutex g_ctx_mu;
CUcontext g_primary[sim::kMaxDevices] = {};

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;
thread_local int t_bound_device = -1;  // device whose primary context is current on this thread

template <typename F>
bool lookup(PFN_gpa_v2 gpa, const char* name, int version, F* out) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa(name, &p, version, 0, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr) {
    *out = nullptr;
    return false;
  }
  *out = reinterpret_cast<F>(p);
  return true;
}

// What must be there (else the runtime reports an insufficient driver) and
// what only the calls that need it miss.
bool resolve_all(PFN_gpa_v2 gpa, Driver* d) {
  bool ok = true;
  ok &= lookup(gpa, "cuInit", 2000, &d->cuInit);
  ok &= lookup(gpa, "cuDriverGetVersion", 2020, &d->cuDriverGetVersion);
  ok &= lookup(gpa, "cuDeviceGet", 2000, &d->cuDeviceGet);
  ok &= lookup(gpa, "cuDeviceGetCount", 2000, &d->cuDeviceGetCount);
  ok &= lookup(gpa, "cuDevicePrimaryCtxRetain", 7000, &d->cuDevicePrimaryCtxRetain);
  ok &= lookup(gpa, "cuCtxSetCurrent", 4000, &d->cuCtxSetCurrent);
  ok &= lookup(gpa, "cuMemAlloc", 3020, &d->cuMemAlloc);
  ok &= lookup(gpa, "cuMemFree", 3020, &d->cuMemFree);
  ok &= lookup(gpa, "cuMemGetInfo", 3020, &d->cuMemGetInfo);
  if (!ok) return false;
  lookup(gpa, "cuCtxSynchronize", 2000, &d->cuCtxSynchronize);
  lookup(gpa, "cuMemAllocAsync", 11020, &d->cuMemAllocAsync);
  lookup(gpa, "cuMemFreeAsync", 11020, &d->cuMemFreeAsync);
  lookup(gpa, "cuMemAllocFromPoolAsync", 11020, &d->cuMemAllocFromPoolAsync);
  lookup(gpa, "cuMemAllocManaged", 6000, &d->cuMemAllocManaged);
  lookup(gpa, "cuMemAllocPitch", 3020, &d->cuMemAllocPitch);
  lookup(gpa, "cuDeviceGetDefaultMemPool", 11020, &d->cuDeviceGetDefaultMemPool);
  lookup(gpa, "cuMemPoolTrimTo", 11020, &d->cuMemPoolTrimTo);
  lookup(gpa, "cuMemPoolGetAttribute", 11020, &d->cuMemPoolGetAttribute);
  lookup(gpa, "cuMemPoolSetAttribute", 11020, &d->cuMemPoolSetAttribute);
  lookup(gpa, "cuStreamCreate", 2000, &d->cuStreamCreate);
  lookup(gpa, "cuStreamDestroy", 4000, &d->cuStreamDestroy);
  lookup(gpa, "cuStreamSynchronize", 2000, &d->cuStreamSynchronize);
  lookup(gpa, "cuDevicePrimaryCtxReset", 11000, &d->cuDevicePrimaryCtxReset);
  lookup(gpa, "cuPointerGetAttribute", 4000, &d->cuPointerGetAttribute);
  d->cuGetProcAddress = gpa;
  return true;
}

void init_once() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  auto gpa_entry = h != nullptr ? reinterpret_cast<PFN_gpa_v2>(dlsym(h, "cuGetProcAddress_v2")) : nullptr;
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa_entry == nullptr || gpa_entry("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS || p == nullptr) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  Driver d;
  if (!resolve_all(reinterpret_cast<PFN_gpa_v2>(p), &d)) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  const CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_init_error = map_drv(r);
    return;
  }
  g_drv = d;
}

}  // namespace

cudaError_t map_drv(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_STUB_LIBRARY: return cudaErrorStubLibrary;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
    case CUDA_ERROR_NOT_PERMITTED: return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t ensure_init() {
  std::call_once(g_init_once, init_once);
  return g_init_error;
}

// Makes the current device's primary context current on this thread, as the
// real runtime does lazily.
cudaError_t ensure_ctx() {
  if (cudaError_t e = ensure_init()) return e;
  if (t_bound_device == t_device) return cudaSuccess;
  if (t_device < 0 || t_device >= sim::kMaxDevices) return cudaErrorInvalidDevice;
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ctx_mu);
    if (g_primary[t_device] == nullptr) {
      CUdevice dev = 0;
      CUresult r = g_drv.cuDeviceGet(&dev, t_device);
      if (r == CUDA_SUCCESS) r = g_drv.cuDevicePrimaryCtxRetain(&g_primary[t_device], dev);
      if (r != CUDA_SUCCESS) return map_drv(r);
    }
    ctx = g_primary[t_device];
  }
  const CUresult r = g_drv.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) return map_drv(r);
  t_bound_device = t_device;
  return cudaSuccess;
}

int current_device() { return t_device; }
void set_current_device(int device) { t_device = device; }
void unbind_context() { t_bound_device = -1; }

int device_count() {
  int n = 0;
  if (ensure_init() != cudaSuccess || g_drv.cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

cudaError_t take_last_error() {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t peek_last_error() { return t_last_error; }

}  // namespace rt
