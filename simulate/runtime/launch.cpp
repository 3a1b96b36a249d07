// Kernels: the registration calls nvcc's generated code makes when a library
// loads (__cudaRegisterFatBinary, __cudaRegisterFunction, ...), launches,
// function attributes and occupancy, libraries loaded at run time.
//
// Nothing is run: a launch checks its configuration as the runtime does
// (cudaErrorInvalidConfiguration for an empty or too-large block or grid) and
// succeeds. Fat binaries are kept opaque (they are compressed in PyTorch's
// libraries); only the host stub -> kernel name map is kept.
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/card.h"
#include "runtime/internal.h"
#include "runtime/kept_bytes.h"

using rt::ensure_ctx;
using rt::record;

namespace rt {
namespace {

struct FatBinary {
  const void* image;
};

std::mutex g_mu;
std::unordered_map<const void*, std::string>* g_kernels = new std::unordered_map<const void*, std::string>();

thread_local struct {
  dim3 grid, block;
  size_t shared = 0;
  void* stream = nullptr;
} t_config;

cudaError_t check_launch(dim3 grid, dim3 block, size_t shared) {
  const unsigned long long threads =
      static_cast<unsigned long long>(block.x) * block.y * static_cast<unsigned long long>(block.z);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 || block.z > 64 ||
      grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u)
    return record(cudaErrorInvalidConfiguration);
  if (shared > static_cast<size_t>(sim::card().shared_per_block_optin)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  kept::kernel_ran();  // what it would write is not followed (kept_bytes.h)
  return cudaSuccess;
}

}  // namespace
}  // namespace rt

SIM_EXPORT void** CUDARTAPI __cudaRegisterFatBinary(void* fatCubin) {
  return reinterpret_cast<void**>(new rt::FatBinary{fatCubin});
}

SIM_EXPORT void CUDARTAPI __cudaRegisterFatBinaryEnd(void** fatCubinHandle) {}

SIM_EXPORT void CUDARTAPI __cudaUnregisterFatBinary(void** fatCubinHandle) {
  delete reinterpret_cast<rt::FatBinary*>(fatCubinHandle);
}

SIM_EXPORT void CUDARTAPI __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                                 const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                                 dim3* bDim, dim3* gDim, int* wSize) {
  std::lock_guard<std::mutex> lock(rt::g_mu);
  (*rt::g_kernels)[hostFun] = deviceName != nullptr ? deviceName : "";
}

SIM_EXPORT void CUDARTAPI __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress,
                                            const char* deviceName, int ext, size_t size, int constant, int global) {}

SIM_EXPORT void CUDARTAPI __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress,
                                                   char* deviceAddress, const char* deviceName, int ext, size_t size,
                                                   int constant, int global) {}

SIM_EXPORT char CUDARTAPI __cudaInitModule(void** fatCubinHandle) { return 1; }

SIM_EXPORT unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                                          struct CUstream_st* stream) {
  rt::t_config.grid = gridDim;
  rt::t_config.block = blockDim;
  rt::t_config.shared = sharedMem;
  rt::t_config.stream = stream;
  return 0;
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                            void* stream) {
  *gridDim = rt::t_config.grid;
  *blockDim = rt::t_config.block;
  *sharedMem = rt::t_config.shared;
  *static_cast<void**>(stream) = rt::t_config.stream;
  return cudaSuccess;
}

// A kernel handle is its host stub's address.
SIM_EXPORT cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* funcAddr) {
  if (kernel == nullptr || funcAddr == nullptr) return record(cudaErrorInvalidValue);
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(funcAddr));
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t* functionPtr, const void* symbolPtr) {
  if (functionPtr == nullptr || symbolPtr == nullptr) return record(cudaErrorInvalidValue);
  *functionPtr = reinterpret_cast<cudaFunction_t>(const_cast<void*>(symbolPtr));
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                                    size_t sharedMem, cudaStream_t stream) {
  if (kernel == nullptr) return record(cudaErrorInvalidDeviceFunction);
  return rt::check_launch(gridDim, blockDim, sharedMem);
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                         void** args, size_t sharedMem, cudaStream_t stream) {
  return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem, stream);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                                  size_t sharedMem, cudaStream_t stream) {
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  return rt::check_launch(gridDim, blockDim, sharedMem);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim,
                                                             void** args, size_t sharedMem, cudaStream_t stream) {
  return cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                                     void** args) {
  if (config == nullptr) return record(cudaErrorInvalidValue);
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  return rt::check_launch(config->gridDim, config->blockDim, config->dynamicSmemBytes);
}

// What a compiled kernel reports: no static shared, local or constant memory
// of its own, 32 registers, built for the card's own architecture (CUB reads
// ptxVersion from an empty kernel to pick its tuning).
SIM_EXPORT cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return record(cudaErrorInvalidValue);
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  const sim::Profile& p = sim::card();
  memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = p.cc_major * 10 + p.cc_minor;
  attr->binaryVersion = p.cc_major * 10 + p.cc_minor;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      (value < 0 || value > sim::card().shared_per_block_optin))
    return record(cudaErrorInvalidValue);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache cacheConfig) {
  return func == nullptr ? record(cudaErrorInvalidDeviceFunction) : cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaKernelSetAttributeForDevice(cudaKernel_t kernel, enum cudaFuncAttribute attr,
                                                                 int value, int device) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

// Blocks per SM as the thread and block limits allow (registers and shared
// memory are not modelled: every kernel reports none of its own).
SIM_EXPORT cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks,
                                                                                        const void* func,
                                                                                        int blockSize,
                                                                                        size_t dynamicSMemSize,
                                                                                        unsigned int flags) {
  if (numBlocks == nullptr || blockSize <= 0) return record(cudaErrorInvalidValue);
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  const sim::Profile& p = sim::card();
  int blocks = p.max_threads_per_sm / blockSize;
  if (blocks > p.max_blocks_per_sm) blocks = p.max_blocks_per_sm;
  if (dynamicSMemSize > 0) {
    const int by_shared = static_cast<int>(static_cast<size_t>(p.shared_per_sm) / (dynamicSMemSize + 1024));
    if (by_shared < blocks) blocks = by_shared;
  }
  *numBlocks = blocks;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                                               int blockSize,
                                                                               size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

// Libraries loaded from memory at run time (PyTorch's jiterator and
// flex-attention kernels): a handle per library and per kernel name.
SIM_EXPORT cudaError_t CUDARTAPI cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                                     enum cudaJitOption* jitOptions, void** jitOptionsValues,
                                                     unsigned int numJitOptions,
                                                     enum cudaLibraryOption* libraryOptions,
                                                     void** libraryOptionValues, unsigned int numLibraryOptions) {
  if (library == nullptr || code == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  *library = reinterpret_cast<cudaLibrary_t>(new rt::FatBinary{code});
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library,
                                                      const char* name) {
  if (pKernel == nullptr || library == nullptr || name == nullptr) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(rt::g_mu);
  static std::unordered_map<std::string, char>* kernels = new std::unordered_map<std::string, char>();
  *pKernel = reinterpret_cast<cudaKernel_t>(&(*kernels)[std::to_string(reinterpret_cast<uintptr_t>(library)) + name]);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLibraryUnload(cudaLibrary_t library) {
  if (library == nullptr) return record(cudaErrorInvalidValue);
  delete reinterpret_cast<rt::FatBinary*>(library);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaProfilerStart(void) { return cudaSuccess; }
SIM_EXPORT cudaError_t CUDARTAPI cudaProfilerStop(void) { return cudaSuccess; }

// A __device__ variable's address: its host shadow's (no kernel reads it).
SIM_EXPORT cudaError_t CUDARTAPI cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (devPtr == nullptr || symbol == nullptr) return record(cudaErrorInvalidSymbol);
  *devPtr = const_cast<void*>(symbol);
  return cudaSuccess;
}

// Driver entry points, as NVIDIA's runtime hands them out: through the
// driver's cuGetProcAddress (which the recorder hooks), the status mapped
// to the runtime's enumeration.
SIM_EXPORT cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                                                  unsigned int cudaVersion, unsigned long long flags,
                                                                  cudaDriverEntryPointQueryResult* driverStatus) {
  if (symbol == nullptr || funcPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = rt::ensure_init()) return record(e);
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = rt::g_drv.cuGetProcAddress(symbol, funcPtr, static_cast<int>(cudaVersion), flags, &st);
  if (driverStatus != nullptr) {
    *driverStatus = st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                    : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                                                                       : cudaDriverEntryPointSymbolNotFound;
  }
  if (r == CUDA_ERROR_INVALID_VALUE) return record(cudaErrorInvalidValue);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                                         cudaDriverEntryPointQueryResult* driverStatus) {
  return cudaGetDriverEntryPointByVersion(symbol, funcPtr, 13000, flags, driverStatus);
}
