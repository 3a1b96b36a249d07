// Fake NVIDIA shared runtime: libcudart.so.13.
//
// Never linked against libcuda. Like NVIDIA's runtime it loads the driver at
// first use with dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL), takes
// cuGetProcAddress_v2 with dlsym, asks it for ("cuGetProcAddress", 12000) and
// resolves every driver entry point through that pointer with the versions
// the real runtime uses (e.g. ("cuMemAlloc", 3020, 0) -> cuMemAlloc_v2).
// Every device allocation is a call through one of those pointers, so the
// driver's ledger is the single truth. Host-pinned memory is plain malloc.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace {

using PFN_gpa_v2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct Driver {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)(void) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool, CUstream) = nullptr;
  CUresult (*cuMemAllocManaged)(CUdeviceptr*, size_t, unsigned int) = nullptr;
  CUresult (*cuMemAllocPitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool*, CUdevice) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice) = nullptr;
};

Driver g_drv;
cudaError_t g_init_error = cudaSuccess;
std::once_flag g_init_once;

constexpr int kMaxDevices = 64;
std::mutex g_ctx_mu;
CUcontext g_primary[kMaxDevices] = {};

std::mutex g_host_mu;
std::unordered_set<void*>* g_host = new std::unordered_set<void*>();  // never destroyed

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;
thread_local int t_bound_device = -1;  // device whose primary context is current on this thread

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
    case CUDA_ERROR_NOT_PERMITTED: return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

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

void init_once() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  auto gpa_entry = reinterpret_cast<PFN_gpa_v2>(dlsym(h, "cuGetProcAddress_v2"));
  if (gpa_entry == nullptr) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa_entry("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS || p == nullptr) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  auto gpa = reinterpret_cast<PFN_gpa_v2>(p);

  Driver d;
  bool ok = true;
  ok &= lookup(gpa, "cuInit", 2000, &d.cuInit);
  ok &= lookup(gpa, "cuDriverGetVersion", 2020, &d.cuDriverGetVersion);
  ok &= lookup(gpa, "cuDeviceGet", 2000, &d.cuDeviceGet);
  ok &= lookup(gpa, "cuDeviceGetCount", 2000, &d.cuDeviceGetCount);
  ok &= lookup(gpa, "cuDevicePrimaryCtxRetain", 7000, &d.cuDevicePrimaryCtxRetain);
  ok &= lookup(gpa, "cuCtxSetCurrent", 4000, &d.cuCtxSetCurrent);
  ok &= lookup(gpa, "cuMemAlloc", 3020, &d.cuMemAlloc);
  ok &= lookup(gpa, "cuMemFree", 3020, &d.cuMemFree);
  ok &= lookup(gpa, "cuMemGetInfo", 3020, &d.cuMemGetInfo);
  if (!ok) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  // Optional: a missing one makes only the calls that need it fail.
  lookup(gpa, "cuCtxSynchronize", 2000, &d.cuCtxSynchronize);
  lookup(gpa, "cuMemAllocAsync", 11020, &d.cuMemAllocAsync);
  lookup(gpa, "cuMemFreeAsync", 11020, &d.cuMemFreeAsync);
  lookup(gpa, "cuMemAllocFromPoolAsync", 11020, &d.cuMemAllocFromPoolAsync);
  lookup(gpa, "cuMemAllocManaged", 6000, &d.cuMemAllocManaged);
  lookup(gpa, "cuMemAllocPitch", 3020, &d.cuMemAllocPitch);
  lookup(gpa, "cuDeviceGetDefaultMemPool", 11020, &d.cuDeviceGetDefaultMemPool);
  lookup(gpa, "cuStreamCreate", 2000, &d.cuStreamCreate);
  lookup(gpa, "cuStreamDestroy", 4000, &d.cuStreamDestroy);
  lookup(gpa, "cuDevicePrimaryCtxReset", 11000, &d.cuDevicePrimaryCtxReset);

  const CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_init_error = map_drv(r);
    return;
  }
  g_drv = d;
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t ensure_init() {
  std::call_once(g_init_once, init_once);
  return g_init_error;
}

// Initialises the runtime and makes the current device's primary context
// current on this thread (as the real runtime does lazily).
cudaError_t ensure_ctx() {
  if (cudaError_t e = ensure_init()) return e;
  if (t_bound_device == t_device) return cudaSuccess;
  if (t_device < 0 || t_device >= kMaxDevices) return cudaErrorInvalidDevice;
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

cudaError_t finish_alloc(CUresult r, CUdeviceptr p, void** out) {
  *out = r == CUDA_SUCCESS ? reinterpret_cast<void*>(static_cast<uintptr_t>(p)) : nullptr;
  return record(map_drv(r));
}

cudaError_t host_alloc(void** ptr, size_t size) {
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0) {
    *ptr = nullptr;
    return record(cudaErrorMemoryAllocation);
  }
  {
    std::lock_guard<std::mutex> lock(g_host_mu);
    g_host->insert(p);
  }
  *ptr = p;
  return cudaSuccess;
}

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorStubLibrary, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorCallRequiresNewerDriver, "cudaErrorCallRequiresNewerDriver",
     "API call is not supported in the installed CUDA driver"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAlloc(&p, size);
  return finish_alloc(r, p, devPtr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (devPtr == nullptr) return cudaSuccess;
  return record(map_drv(g_drv.cuMemFree(reinterpret_cast<uintptr_t>(devPtr))));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocAsync(&p, size, hStream);
  return finish_alloc(r, p, devPtr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemFreeAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (devPtr == nullptr) return cudaSuccess;
  return record(map_drv(g_drv.cuMemFreeAsync(reinterpret_cast<uintptr_t>(devPtr), hStream)));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                          cudaStream_t stream) {
  if (ptr == nullptr || memPool == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocFromPoolAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocFromPoolAsync(&p, size, memPool, stream);
  return finish_alloc(r, p, ptr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocManaged == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocManaged(&p, size, flags);
  return finish_alloc(r, p, devPtr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (devPtr == nullptr || pitch == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocPitch == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (width == 0 || height == 0) {
    *devPtr = nullptr;
    *pitch = 0;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  size_t pt = 0;
  const CUresult r = g_drv.cuMemAllocPitch(&p, &pt, width, height, 4);
  if (r == CUDA_SUCCESS) *pitch = pt;
  return finish_alloc(r, p, devPtr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (pitchedDevPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocPitch == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  pitchedDevPtr->xsize = extent.width;
  pitchedDevPtr->ysize = extent.height;
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) {
    pitchedDevPtr->ptr = nullptr;
    pitchedDevPtr->pitch = 0;
    return cudaSuccess;
  }
  if (extent.height > SIZE_MAX / extent.depth) return record(cudaErrorMemoryAllocation);
  CUdeviceptr p = 0;
  size_t pt = 0;
  const CUresult r = g_drv.cuMemAllocPitch(&p, &pt, extent.width, extent.height * extent.depth, 4);
  pitchedDevPtr->pitch = r == CUDA_SUCCESS ? pt : 0;
  return finish_alloc(r, p, &pitchedDevPtr->ptr);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) { return host_alloc(ptr, size); }

FAKE_EXPORT cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return host_alloc(pHost, size);
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_host_mu);
    if (g_host->erase(ptr) == 0) return record(cudaErrorInvalidValue);
  }
  free(ptr);
  return cudaSuccess;
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  return record(map_drv(g_drv.cuMemGetInfo(free, total)));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) {
    *count = 0;
    return record(e);
  }
  int n = 0;
  const CUresult r = g_drv.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return record(map_drv(r));
  *count = n;
  return n == 0 ? record(cudaErrorNoDevice) : cudaSuccess;
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  *device = t_device;
  return cudaSuccess;
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaSetDevice(int device) {
  if (cudaError_t e = ensure_init()) return record(e);
  int n = 0;
  if (g_drv.cuDeviceGetCount(&n) != CUDA_SUCCESS || device < 0 || device >= n || device >= kMaxDevices)
    return record(cudaErrorInvalidDevice);
  t_device = device;
  return record(ensure_ctx());
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuCtxSynchronize == nullptr) return cudaSuccess;
  return record(map_drv(g_drv.cuCtxSynchronize()));
}

// "Destroy all allocations and reset all state on the current device in the
// current process": NVIDIA's runtime is closed source; this one resets the
// device's primary context through the driver call documented to do that
// (cuDevicePrimaryCtxReset; UCX's maintainers note that cudaDeviceReset
// behaves as cuDevicePrimaryCtxReset when the primary context is current,
// openucx/ucx#9359), keeps its reference to the context, and binds it again
// at the thread's next call.
FAKE_EXPORT cudaError_t CUDARTAPI cudaDeviceReset(void) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuDevicePrimaryCtxReset == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  CUdevice dev = 0;
  CUresult r = g_drv.cuDeviceGet(&dev, t_device);
  if (r == CUDA_SUCCESS) r = g_drv.cuDevicePrimaryCtxReset(dev);
  t_bound_device = -1;
  return record(map_drv(r));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuDeviceGetDefaultMemPool == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  CUdevice dev = 0;
  CUresult r = g_drv.cuDeviceGet(&dev, device);
  if (r == CUDA_SUCCESS) r = g_drv.cuDeviceGetDefaultMemPool(memPool, dev);
  return record(map_drv(r));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
  if (pStream == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuStreamCreate == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  return record(map_drv(g_drv.cuStreamCreate(pStream, 0)));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuStreamDestroy == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  return record(map_drv(g_drv.cuStreamDestroy(stream)));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  ensure_init();
  if (g_drv.cuDriverGetVersion == nullptr) {  // no (usable) driver: 0, like the real runtime
    *driverVersion = 0;
    return cudaSuccess;
  }
  return record(map_drv(g_drv.cuDriverGetVersion(driverVersion)));
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = 13000;
  return cudaSuccess;
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaGetLastError(void) {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

FAKE_EXPORT cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return t_last_error; }

FAKE_EXPORT const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
  for (const auto& t : kErrors)
    if (t.code == error) return t.name;
  return "cudaErrorUnknown";
}

FAKE_EXPORT const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  for (const auto& t : kErrors)
    if (t.code == error) return t.text;
  return "unrecognized error code";
}
