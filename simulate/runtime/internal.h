// Internals shared by the simulated runtime's files (libcudart.so.13).
//
// Like NVIDIA's runtime it is not linked to the driver: at first use it
// dlopens libcuda.so.1 (RTLD_NOW | RTLD_GLOBAL), takes cuGetProcAddress_v2
// with dlsym, asks it for ("cuGetProcAddress", 12000) and resolves every
// driver entry point through that pointer with the versions NVIDIA's runtime
// uses (e.g. ("cuMemAlloc", 3020) -> cuMemAlloc_v2). Every device allocation
// is a call through one of those pointers, so the driver's ledger is the one
// truth, and the recorder, which hooks cuGetProcAddress, sees each call the
// way it sees NVIDIA's runtime's.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace rt {

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
  CUresult (*cuMemPoolTrimTo)(CUmemoryPool, size_t) = nullptr;
  CUresult (*cuMemPoolGetAttribute)(CUmemoryPool, CUmemPool_attribute, void*) = nullptr;
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void*) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice) = nullptr;
  CUresult (*cuPointerGetAttribute)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
  // The driver's own cuGetProcAddress_v2, for cudaGetDriverEntryPoint*.
  CUresult (*cuGetProcAddress)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) = nullptr;
};

extern Driver g_drv;

// Loads the driver once; the error every call returns if that failed.
cudaError_t ensure_init();
// ensure_init, then makes the thread's device's primary context current.
cudaError_t ensure_ctx();
// Records a failure as the thread's last error (cudaGetLastError) and returns it.
cudaError_t record(cudaError_t e);
cudaError_t map_drv(CUresult r);
// cudaGetLastError / cudaPeekAtLastError.
cudaError_t take_last_error();
cudaError_t peek_last_error();

// The thread's current device (cudaSetDevice), and forgetting the bound
// context after a reset.
int current_device();
void set_current_device(int device);
void unbind_context();
int device_count();

// Where an address lives: device memory of the simulated driver, pinned host
// memory of this runtime, or ordinary host memory.
enum class Where { Device, PinnedHost, Host };
Where where(const void* p);
bool is_pinned(const void* p);

}  // namespace rt
