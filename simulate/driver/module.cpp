// Modules, functions and launches (PyTorch's jiterator and NVRTC-compiled
// kernels go through these, by way of libcaffe2_nvrtc.so). Images are kept
// opaque; a function is a handle per (module, name); launches check their
// configuration and run nothing.
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/card.h"
#include "driver/internal.h"

namespace {

struct Module {
  std::mutex mu;
  std::unordered_map<std::string, char>* functions = new std::unordered_map<std::string, char>();
};

struct Link {
  char image[16] = {};
};

CUresult new_module(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(new Module());
  return CUDA_SUCCESS;
}

CUresult check_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned shared) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const unsigned long long threads = static_cast<unsigned long long>(bx) * by * static_cast<unsigned long long>(bz);
  if (gx == 0 || gy == 0 || gz == 0 || threads == 0 || threads > 1024 || bz > 64 || gy > 65535 || gz > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > static_cast<unsigned>(sim::card().shared_per_block_optin)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) { return new_module(module, image); }

FAKE_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                                CUjit_option* options, void** optionValues) {
  return new_module(module, image);
}

FAKE_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) { return new_module(module, fname); }

FAKE_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  if (hmod == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Module* m = reinterpret_cast<Module*>(hmod);
  delete m->functions;
  delete m;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hmod == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Module* m = reinterpret_cast<Module*>(hmod);
  std::lock_guard<std::mutex> lock(m->mu);
  *hfunc = reinterpret_cast<CUfunction>(&(*m->functions)[name]);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                            void** kernelParams, void** extra) {
  return check_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes);
}

FAKE_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                                 unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                 CUstream hStream, void** kernelParams, void** extra) {
  return check_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes);
}

FAKE_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                       unsigned int gridDimZ, unsigned int blockDimX,
                                                       unsigned int blockDimY, unsigned int blockDimZ,
                                                       unsigned int sharedMemBytes, CUstream hStream,
                                                       void** kernelParams) {
  return check_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes);
}

FAKE_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                              void** extra) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return check_launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                      config->blockDimZ, config->sharedMemBytes);
}

// A kernel's attributes: no static shared, constant or local memory, 32
// registers, built for the card's architecture (as the runtime's
// cudaFuncGetAttributes reports, simulate/runtime/launch.cpp).
FAKE_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hfunc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const sim::Profile& p = sim::card();
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = p.cc_major * 10 + p.cc_minor; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 48 * 1024; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    default: *pi = 0;
  }
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  if (hfunc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
      (value < 0 || value > sim::card().shared_per_block_optin))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  return hfunc == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                        int blockSize, size_t dynamicSMemSize) {
  if (numBlocks == nullptr || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (func == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const sim::Profile& p = sim::card();
  int blocks = p.max_threads_per_sm / blockSize;
  if (blocks > p.max_blocks_per_sm) blocks = p.max_blocks_per_sm;
  *numBlocks = blocks;
  return CUDA_SUCCESS;
}

// Linking PTX or cubins at run time: the result is an opaque image.
FAKE_EXPORT CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                                             CUlinkState* stateOut) {
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *stateOut = reinterpret_cast<CUlinkState>(new Link());
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                              const char* name, unsigned int numOptions, CUjit_option* options,
                                              void** optionValues) {
  return state == nullptr || data == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  if (state == nullptr || cubinOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Link* l = reinterpret_cast<Link*>(state);
  *cubinOut = l->image;
  if (sizeOut != nullptr) *sizeOut = sizeof l->image;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<Link*>(state);
  return CUDA_SUCCESS;
}

// A TMA descriptor: filled with zeros (kernels that would read it do not run).
FAKE_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                                    cuuint32_t tensorRank, void* globalAddress,
                                                    const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                                    const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                                    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                    CUtensorMapL2promotion l2Promotion,
                                                    CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr || tensorRank == 0 || tensorRank > 5) return CUDA_ERROR_INVALID_VALUE;
  memset(tensorMap, 0, sizeof *tensorMap);
  return CUDA_SUCCESS;
}
