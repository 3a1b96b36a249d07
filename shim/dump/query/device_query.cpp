#include "shim/dump/query/device_query.h"

#include "shim/base/hook_table.h"

namespace gpumemrec {

namespace {

template <typename Fn>
Fn sym(Library lib, const char* name) {
  return reinterpret_cast<Fn>(lookup_library_symbol(lib, name));
}

// The entry points of one backend; every one is optional.
struct Api {
  Library lib;
  const char* mem_get_info;
  const char* driver_version;
  Library runtime_lib;
  const char* runtime_version;
  const char* device_count;
  const char* device_name;
  const char* device_total;
};

const Api kCudaApi = {Library::CUDA,        "cuMemGetInfo_v2",  "cuDriverGetVersion", Library::CUDART,
                      "cudaRuntimeGetVersion", "cuDeviceGetCount", "cuDeviceGetName",    "cuDeviceTotalMem_v2"};
const Api kHipApi = {Library::HIP,           "hipMemGetInfo",     "hipDriverGetVersion", Library::HIP,
                     "hipRuntimeGetVersion", "hipGetDeviceCount", "hipDeviceGetName",    "hipDeviceTotalMem"};

// cuDeviceGet(ordinal) is the identity in practice (and hipDevice_t is the
// ordinal), so device ordinals are passed straight through.
void query(const Api& a, DeviceReport* r) {
  using MemGetInfo = int (*)(size_t*, size_t*);
  using GetVersion = int (*)(int*);
  using GetCount = int (*)(int*);
  using GetName = int (*)(char*, int, int);
  using TotalMem = int (*)(size_t*, int);
  if (auto f = sym<MemGetInfo>(a.lib, a.mem_get_info)) {
    size_t free_b = 0, total_b = 0;
    if (f(&free_b, &total_b) == 0) {
      r->has_mem_info = true;
      r->free_bytes = free_b;
      r->total_bytes = total_b;
    }
  }
  if (auto f = sym<GetVersion>(a.lib, a.driver_version)) {
    int v = 0;
    if (f(&v) == 0) r->driver_version = v;
  }
  if (auto f = sym<GetVersion>(a.runtime_lib, a.runtime_version)) {
    int v = 0;
    if (f(&v) == 0) r->runtime_version = v;
  }
  auto count = sym<GetCount>(a.lib, a.device_count);
  auto name = sym<GetName>(a.lib, a.device_name);
  auto total = sym<TotalMem>(a.lib, a.device_total);
  int n = 0;
  if (!count || count(&n) != 0) return;
  for (int d = 0; d < n && d < 64; ++d) {
    DeviceInfo di;
    di.device_id = d;
    char buf[256] = {};
    if (name && name(buf, sizeof buf - 1, d) == 0) di.name = buf;
    size_t t = 0;
    if (total && total(&t, d) == 0) di.total_bytes = t;
    r->devices.push_back(di);
  }
}

// The simulated driver says which card it simulates (simulate/driver/helpers.cpp).
void query_simulated(DeviceReport* r) {
  using Profile = const char* (*)();
  using Devices = int (*)();
  auto profile = sym<Profile>(Library::CUDA, "gpumemrec_simulated_profile");
  auto devices = sym<Devices>(Library::CUDA, "gpumemrec_simulated_devices");
  const char* id = profile ? profile() : nullptr;
  if (id == nullptr || *id == '\0') return;
  r->simulated_profile = id;
  r->simulated_devices = devices ? devices() : 0;
}

}  // namespace

DeviceReport query_devices(Backend backend, int device) {
  DeviceReport r;
  (void)device;  // the failing thread's current device is what the driver reports
  query(backend == Backend::kHip ? kHipApi : kCudaApi, &r);
  if (backend != Backend::kHip) query_simulated(&r);
  return r;
}

const char* error_name(Backend backend, bool runtime_api, int code) {
  if (backend == Backend::kHip) {
    switch (code) {
      case 0: return "hipSuccess";
      case 1: return "hipErrorInvalidValue";
      case 2: return "hipErrorOutOfMemory";
      case 3: return "hipErrorNotInitialized";
      default: return "hipError";
    }
  }
  if (runtime_api) {
    switch (code) {
      case 0: return "cudaSuccess";
      case 1: return "cudaErrorInvalidValue";
      case 2: return "cudaErrorMemoryAllocation";
      case 3: return "cudaErrorInitializationError";
      case 34: return "cudaErrorStubLibrary";
      case 35: return "cudaErrorInsufficientDriver";
      case 100: return "cudaErrorNoDevice";
      default: return "cudaError";
    }
  }
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    default: return "CUresult";
  }
}

}  // namespace gpumemrec
