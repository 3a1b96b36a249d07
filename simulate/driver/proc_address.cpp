// cuGetProcAddress: the driver's entry points by (name, version, flags).
#include <cstring>

#include <string>

#include "core/exports.h"
#include "driver/internal.h"

namespace {

struct Plain {
  const char* name;
  int min_version;  // version the symbol appeared in; older requests are "not sufficient"
  void* fn;
};

#define FN(f) reinterpret_cast<void*>(&f)

// Symbols looked up by their exact (unsuffixed) name.
const Plain kPlain[] = {
    {"cuInit", 2000, FN(cuInit)},
    {"cuDriverGetVersion", 2020, FN(cuDriverGetVersion)},
    {"cuDeviceGet", 2000, FN(cuDeviceGet)},
    {"cuDeviceGetCount", 2000, FN(cuDeviceGetCount)},
    {"cuDeviceGetName", 2000, FN(cuDeviceGetName)},
    {"cuCtxGetDevice", 2000, FN(cuCtxGetDevice)},
    {"cuCtxSetCurrent", 4000, FN(cuCtxSetCurrent)},
    {"cuCtxGetCurrent", 4000, FN(cuCtxGetCurrent)},
    {"cuPointerGetAttribute", 4000, FN(cuPointerGetAttribute)},
    {"cuDevicePrimaryCtxRetain", 7000, FN(cuDevicePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxGetState", 7000, FN(cuDevicePrimaryCtxGetState)},
    {"cuCtxSynchronize", 2000, FN(cuCtxSynchronize)},
    {"cuStreamCreate", 2000, FN(cuStreamCreate)},
    {"cuMemAllocManaged", 6000, FN(cuMemAllocManaged)},
    {"cuDeviceGetDefaultMemPool", 11020, FN(cuDeviceGetDefaultMemPool)},
    {"cuMemPoolCreate", 11020, FN(cuMemPoolCreate)},
    {"cuMemPoolDestroy", 11020, FN(cuMemPoolDestroy)},
    {"cuMemCreate", 10020, FN(cuMemCreate)},
    {"cuMemRelease", 10020, FN(cuMemRelease)},
    {"cuMemAddressReserve", 10020, FN(cuMemAddressReserve)},
    {"cuMemAddressFree", 10020, FN(cuMemAddressFree)},
    {"cuMemMap", 10020, FN(cuMemMap)},
    {"cuMemUnmap", 10020, FN(cuMemUnmap)},
    {"cuMemSetAccess", 10020, FN(cuMemSetAccess)},
    {"cuMemGetAllocationGranularity", 10020, FN(cuMemGetAllocationGranularity)},
    {"cuGetErrorName", 6000, FN(cuGetErrorName)},
    {"cuGetErrorString", 6000, FN(cuGetErrorString)},
    {"cuGetExportTable", 3000, FN(cuGetExportTable)},
};

// Symbols whose ABI changed: below `split` the old function (may be null:
// not available in this fake), from `split` on the new one.
struct Versioned {
  const char* name;
  int split;
  void* old_fn;
  void* new_fn;
};

const Versioned kVersioned[] = {
    {"cuMemAlloc", 3020, FN(cuMemAlloc), FN(cuMemAlloc_v2)},
    {"cuMemFree", 3020, FN(cuMemFree), FN(cuMemFree_v2)},
    {"cuMemAllocPitch", 3020, nullptr, FN(cuMemAllocPitch_v2)},
    {"cuMemGetInfo", 3020, nullptr, FN(cuMemGetInfo_v2)},
    {"cuDeviceTotalMem", 3020, nullptr, FN(cuDeviceTotalMem_v2)},
    {"cuStreamDestroy", 3020, nullptr, FN(cuStreamDestroy_v2)},
    {"cuCtxCreate", 3020, nullptr, FN(cuCtxCreate_v2)},  // _v4 from 12050: not looked up by our programs
    {"cuCtxDestroy", 4000, nullptr, FN(cuCtxDestroy_v2)},
    {"cuCtxPushCurrent", 4000, nullptr, FN(cuCtxPushCurrent_v2)},
    {"cuCtxPopCurrent", 4000, nullptr, FN(cuCtxPopCurrent_v2)},
    {"cuDevicePrimaryCtxRelease", 11000, FN(cuDevicePrimaryCtxRelease), FN(cuDevicePrimaryCtxRelease_v2)},
    {"cuDevicePrimaryCtxReset", 11000, FN(cuDevicePrimaryCtxReset), FN(cuDevicePrimaryCtxReset_v2)},
    {"cuGetProcAddress", 12000, FN(cuGetProcAddress), FN(cuGetProcAddress_v2)},
};

// Stream-ordered symbols with a per-thread-default-stream (_ptsz) variant.
struct PerThread {
  const char* name;
  int min_version;
  void* legacy_fn;
  void* ptsz_fn;
};

const PerThread kPerThread[] = {
    {"cuMemAllocAsync", 11020, FN(cuMemAllocAsync), FN(cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", 11020, FN(cuMemFreeAsync), FN(cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, FN(cuMemAllocFromPoolAsync), FN(cuMemAllocFromPoolAsync_ptsz)},
};

#undef FN

// Any other function the driver exports (core/exports.h): its plain name,
// else its newest _vN form, else nothing; with the per-thread default-stream
// flag, the _ptsz/_ptds form of that where there is one. The tables above
// give the exact ABI for each version of the functions whose ABI changed and
// that programs ask for at older versions; for the rest the newest ABI is
// what a current caller asks for.
bool has_abi_suffix(const std::string& s) {
  auto ends = [&s](const char* t) { return s.size() > strlen(t) && s.compare(s.size() - strlen(t), strlen(t), t) == 0; };
  if (ends("_ptsz") || ends("_ptds")) return true;
  const size_t v = s.rfind("_v");
  return v != std::string::npos && v + 2 < s.size() && s.find_first_not_of("0123456789", v + 2) == std::string::npos;
}

void* any_abi(const char* symbol, cuuint64_t flags) {
  if (has_abi_suffix(symbol)) return nullptr;  // the driver knows base names only
  std::string best = symbol;
  void* fn = sim::find_export(symbol);
  for (int v = 2; v <= 9; ++v) {
    const std::string name = std::string(symbol) + "_v" + std::to_string(v);
    if (void* f = sim::find_export(name.c_str())) {
      fn = f;
      best = name;
    }
  }
  if (fn != nullptr && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
    if (void* f = sim::find_export((best + "_ptsz").c_str())) return f;
    if (void* f = sim::find_export((best + "_ptds").c_str())) return f;
  }
  return fn;
}

CUresult resolve(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;

  void* fn = nullptr;
  bool found = false;
  for (const auto& e : kPlain) {
    if (strcmp(e.name, symbol) == 0) {
      found = true;
      if (version >= e.min_version) fn = e.fn;
      break;
    }
  }
  if (!found) {
    for (const auto& e : kVersioned) {
      if (strcmp(e.name, symbol) == 0) {
        found = true;
        fn = version >= e.split ? e.new_fn : e.old_fn;
        break;
      }
    }
  }
  if (!found) {
    for (const auto& e : kPerThread) {
      if (strcmp(e.name, symbol) == 0) {
        found = true;
        if (version >= e.min_version)
          fn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? e.ptsz_fn : e.legacy_fn;
        break;
      }
    }
  }
  if (!found) {
    fn = any_abi(symbol, flags);
    found = fn != nullptr;
  }
  if (!found) return CUDA_ERROR_NOT_FOUND;
  if (fn == nullptr) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = fn;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return resolve(symbol, pfn, cudaVersion, flags, nullptr);
}

FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult* symbolStatus) {
  return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}
