// Fake AMD HIP runtime: libamdhip64.so.6.
//
// Compiled against Debian's HIP 5.2 headers (-D__HIP_PLATFORM_AMD__); the
// HIP 6 entry point hipGetProcAddress is declared here with the HIP 6
// signature. Keeps its own ledger (separate from the fake libcuda), written
// in the same JSON format to $FAKEGPU_LEDGER at exit.
//
// Linked with -Bsymbolic: the pointers handed out by hipGetProcAddress are
// the same addresses dlsym(handle, "<name>") returns.
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_set>

#include "core/ledger.h"

// HIP 6 declarations missing from the HIP 5.2 headers.
typedef enum hipDriverProcAddressQueryResult {
  HIP_GET_PROC_ADDRESS_SUCCESS = 0,
  HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} hipDriverProcAddressQueryResult;
static_assert(sizeof(hipDriverProcAddressQueryResult) == sizeof(int), "int-sized enum");

extern "C" hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                        hipDriverProcAddressQueryResult* symbolStatus);

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sim::Kind;

constexpr int kHipVersion = 60200000;  // 6.2 in HIP's major*1e7 + minor*1e5 encoding

thread_local int t_device = 0;
thread_local hipError_t t_last_error = hipSuccess;

struct FakePool {
  int device;
  bool is_default;
  bool destroyed;
};
FakePool g_default_pools[sim::kMaxDevices];
std::once_flag g_pools_once;

std::mutex g_mu;
std::set<void*>* g_streams = new std::set<void*>();
std::set<void*>* g_pools = new std::set<void*>();
std::unordered_set<void*>* g_host = new std::unordered_set<void*>();

int ndev() { return sim::config().devices; }
bool valid_dev(int d) { return d >= 0 && d < ndev(); }

hipError_t record(hipError_t e) {
  if (e != hipSuccess) t_last_error = e;
  return e;
}

hipError_t map_core(int rc, hipError_t bad_device = hipErrorInvalidDevice) {
  switch (rc) {
    case sim::kOk: return hipSuccess;
    case sim::kInvalid: return hipErrorInvalidValue;
    case sim::kOom: return hipErrorOutOfMemory;
    case sim::kBadDevice: return bad_device;
  }
  return hipErrorUnknown;
}

FakePool* default_pool(int d) {
  std::call_once(g_pools_once, [] {
    for (int i = 0; i < sim::kMaxDevices; ++i) g_default_pools[i] = FakePool{i, true, false};
  });
  return &g_default_pools[d];
}

FakePool* pool_of(hipMemPool_t h) {
  if (h == nullptr) return nullptr;
  FakePool* p = reinterpret_cast<FakePool*>(h);
  if (p >= g_default_pools && p < g_default_pools + sim::kMaxDevices) {
    default_pool(0);
    return valid_dev(p->device) ? p : nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pools->count(p) == 0 || p->destroyed) return nullptr;
  return p;
}

// All device allocations end up here. Size 0 succeeds with NULL, like HIP.
hipError_t do_alloc(void** ptr, size_t size, int device, Kind kind) {
  if (ptr == nullptr) return record(hipErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return hipSuccess;
  uint64_t addr = 0;
  const int rc = sim::alloc(device, size, kind, 0, false, &addr);
  if (rc == sim::kOk) *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(addr));
  return record(map_core(rc));
}

hipError_t do_free(void* ptr) {
  if (ptr == nullptr) return hipSuccess;
  return record(map_core(sim::free_ptr(reinterpret_cast<uintptr_t>(ptr))));
}

hipError_t do_pitch(void** ptr, size_t* pitch, size_t width, size_t rows) {
  if (ptr == nullptr || pitch == nullptr) return record(hipErrorInvalidValue);
  if (width == 0 || rows == 0) {
    *ptr = nullptr;
    *pitch = 0;
    return hipSuccess;
  }
  const size_t p = (width + 511) / 512 * 512;
  if (p < width || rows > SIZE_MAX / p) {
    *ptr = nullptr;
    return record(hipErrorOutOfMemory);
  }
  const hipError_t e = do_alloc(ptr, p * rows, t_device, Kind::Device);
  *pitch = e == hipSuccess ? p : 0;
  return e;
}

uint64_t handle_value(hipMemGenericAllocationHandle_t h) { return reinterpret_cast<uintptr_t>(h); }
uint64_t addr_value(const void* p) { return reinterpret_cast<uintptr_t>(p); }

struct ErrorText {
  hipError_t code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorInvalidDevicePointer, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidContext, "hipErrorInvalidContext", "invalid device context"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorUnknown, "hipErrorUnknown", "unknown error"},
};

}  // namespace

// ---------------------------------------------------------------------------
// Devices, versions, errors
// ---------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipInit(unsigned int flags) {
  if (flags != 0) return record(hipErrorInvalidValue);
  return ndev() == 0 ? record(hipErrorNoDevice) : hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDeviceCount(int* count) {
  if (count == nullptr) return record(hipErrorInvalidValue);
  *count = ndev();
  return ndev() == 0 ? record(hipErrorNoDevice) : hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDevice(int* deviceId) {
  if (deviceId == nullptr) return record(hipErrorInvalidValue);
  *deviceId = t_device;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipSetDevice(int deviceId) {
  if (!valid_dev(deviceId)) return record(hipErrorInvalidDevice);
  t_device = deviceId;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device) {
  if (name == nullptr || len <= 0) return record(hipErrorInvalidValue);
  if (!valid_dev(device)) return record(hipErrorInvalidDevice);
  snprintf(name, static_cast<size_t>(len), "Fake GPU %d", device);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(hipErrorInvalidValue);
  *driverVersion = kHipVersion;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(hipErrorInvalidValue);
  *runtimeVersion = kHipVersion;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetLastError(void) {
  const hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

FAKE_EXPORT hipError_t hipPeekAtLastError(void) { return t_last_error; }

FAKE_EXPORT const char* hipGetErrorName(hipError_t hip_error) {
  for (const auto& t : kErrors)
    if (t.code == hip_error) return t.name;
  return "hipErrorUnknown";
}

FAKE_EXPORT const char* hipGetErrorString(hipError_t hipError) {
  for (const auto& t : kErrors)
    if (t.code == hipError) return t.text;
  return "unknown error";
}

FAKE_EXPORT hipError_t hipDeviceSynchronize(void) { return hipSuccess; }

// "Destroy all allocations and reset all state on the current device in the
// current process" (hipDeviceReset), and the same for a device's primary
// context (hipDevicePrimaryCtxReset).
FAKE_EXPORT hipError_t hipDeviceReset(void) {
  sim::reset_device(t_device);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDevicePrimaryCtxReset(hipDevice_t dev) {
  if (!valid_dev(dev)) return record(hipErrorInvalidDevice);
  sim::reset_device(dev);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamCreate(hipStream_t* stream) {
  if (stream == nullptr) return record(hipErrorInvalidValue);
  void* h = new char[16];
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_streams->insert(h);
  }
  *stream = reinterpret_cast<hipStream_t>(h);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
  void* h = reinterpret_cast<void*>(stream);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_streams->erase(h) == 0) return record(hipErrorInvalidHandle);
  }
  delete[] static_cast<char*>(h);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return record(hipErrorInvalidValue);
  if (!valid_dev(t_device)) return record(hipErrorInvalidDevice);
  const uint64_t cap = sim::config().capacity;
  const uint64_t used = sim::occupied_bytes(t_device);
  *total = cap;
  *free = used >= cap ? 0 : cap - used;
  return hipSuccess;
}

// ---------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipMalloc(void** ptr, size_t size) { return do_alloc(ptr, size, t_device, Kind::Device); }

FAKE_EXPORT hipError_t hipExtMallocWithFlags(void** ptr, size_t sizeBytes, unsigned int flags) {
  if (flags > 3) return record(hipErrorInvalidValue);
  return do_alloc(ptr, sizeBytes, t_device, Kind::Device);
}

FAKE_EXPORT hipError_t hipMallocManaged(void** dev_ptr, size_t size, unsigned int flags) {
  if (flags != hipMemAttachGlobal && flags != hipMemAttachHost) return record(hipErrorInvalidValue);
  return do_alloc(dev_ptr, size, t_device, Kind::Managed);
}

FAKE_EXPORT hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  return do_pitch(ptr, pitch, width, height);
}

FAKE_EXPORT hipError_t hipMalloc3D(hipPitchedPtr* pitchedDevPtr, hipExtent extent) {
  if (pitchedDevPtr == nullptr) return record(hipErrorInvalidValue);
  pitchedDevPtr->xsize = extent.width;
  pitchedDevPtr->ysize = extent.height;
  if (extent.depth != 0 && extent.height > SIZE_MAX / extent.depth) return record(hipErrorOutOfMemory);
  return do_pitch(&pitchedDevPtr->ptr, &pitchedDevPtr->pitch, extent.width, extent.height * extent.depth);
}

FAKE_EXPORT hipError_t hipFree(void* ptr) { return do_free(ptr); }

FAKE_EXPORT hipError_t hipMallocAsync(void** dev_ptr, size_t size, hipStream_t stream) {
  return do_alloc(dev_ptr, size, t_device, Kind::Device);
}

FAKE_EXPORT hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream) { return do_free(dev_ptr); }

FAKE_EXPORT hipError_t hipMallocFromPoolAsync(void** dev_ptr, size_t size, hipMemPool_t mem_pool, hipStream_t stream) {
  if (dev_ptr == nullptr) return record(hipErrorInvalidValue);
  FakePool* p = pool_of(mem_pool);
  if (p == nullptr) {
    *dev_ptr = nullptr;
    return record(hipErrorInvalidValue);
  }
  return do_alloc(dev_ptr, size, p->device, Kind::Device);
}

FAKE_EXPORT hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t* mem_pool, int device) {
  if (mem_pool == nullptr) return record(hipErrorInvalidValue);
  if (!valid_dev(device)) return record(hipErrorInvalidDevice);
  *mem_pool = reinterpret_cast<hipMemPool_t>(default_pool(device));
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t* mem_pool, const hipMemPoolProps* pool_props) {
  if (mem_pool == nullptr || pool_props == nullptr) return record(hipErrorInvalidValue);
  if (pool_props->allocType != hipMemAllocationTypePinned || pool_props->location.type != hipMemLocationTypeDevice)
    return record(hipErrorInvalidValue);
  if (!valid_dev(pool_props->location.id)) return record(hipErrorInvalidDevice);
  FakePool* p = new FakePool{pool_props->location.id, false, false};
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_pools->insert(p);
  }
  *mem_pool = reinterpret_cast<hipMemPool_t>(p);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool) {
  FakePool* p = pool_of(mem_pool);
  if (p == nullptr || p->is_default) return record(hipErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  p->destroyed = true;
  return hipSuccess;
}

// Host memory: plain malloc, never in the ledger.
FAKE_EXPORT hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  if (ptr == nullptr) return record(hipErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return hipSuccess;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0) return record(hipErrorOutOfMemory);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_host->insert(p);
  }
  *ptr = p;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostFree(void* ptr) {
  if (ptr == nullptr) return hipSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_host->erase(ptr) == 0) return record(hipErrorInvalidValue);
  }
  free(ptr);
  return hipSuccess;
}

// ---------------------------------------------------------------------------
// Virtual memory management
// ---------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size,
                                    const hipMemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || flags != 0) return record(hipErrorInvalidValue);
  if (prop->type != hipMemAllocationTypePinned || prop->location.type != hipMemLocationTypeDevice)
    return record(hipErrorInvalidValue);
  uint64_t h = 0;
  const int rc = sim::create_physical(prop->location.id, size, &h);
  if (rc == sim::kOk) *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>(static_cast<uintptr_t>(h));
  return record(map_core(rc));
}

FAKE_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  return record(map_core(sim::release_physical(handle_value(handle))));
}

FAKE_EXPORT hipError_t hipMemAddressReserve(void** ptr, size_t size, size_t alignment, void* addr,
                                            unsigned long long flags) {
  if (ptr == nullptr || flags != 0) return record(hipErrorInvalidValue);
  uint64_t out = 0;
  const int rc = sim::reserve_va(size, alignment, addr_value(addr), &out);
  if (rc == sim::kOk) *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(out));
  return record(map_core(rc));
}

FAKE_EXPORT hipError_t hipMemAddressFree(void* devPtr, size_t size) {
  return record(map_core(sim::free_va(addr_value(devPtr), size)));
}

FAKE_EXPORT hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                 unsigned long long flags) {
  if (flags != 0) return record(hipErrorInvalidValue);
  return record(map_core(sim::map(addr_value(ptr), size, offset, handle_value(handle))));
}

FAKE_EXPORT hipError_t hipMemUnmap(void* ptr, size_t size) {
  return record(map_core(sim::unmap(addr_value(ptr), size)));
}

FAKE_EXPORT hipError_t hipMemSetAccess(void* ptr, size_t size, const hipMemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0) return record(hipErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != hipMemLocationTypeDevice) return record(hipErrorInvalidValue);
    if (!valid_dev(desc[i].location.id)) return record(hipErrorInvalidDevice);
  }
  return record(map_core(sim::check_mapped(addr_value(ptr), size)));
}

FAKE_EXPORT hipError_t hipMemGetAllocationGranularity(size_t* granularity, const hipMemAllocationProp* prop,
                                                      hipMemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return record(hipErrorInvalidValue);
  *granularity = sim::kGranularity;
  return hipSuccess;
}

// ---------------------------------------------------------------------------
// hipGetProcAddress: exact exported names only.
// ---------------------------------------------------------------------------

namespace {

struct Entry {
  const char* name;
  void* fn;
};

#define FN(f) {#f, reinterpret_cast<void*>(&f)}
// The HIP headers add C++ template overloads for some names: pick the C ABI one.
#define FNT(f, ...) {#f, reinterpret_cast<void*>(static_cast<__VA_ARGS__>(&f))}
const Entry kTable[] = {
    FN(hipInit), FN(hipGetDeviceCount), FN(hipGetDevice), FN(hipSetDevice), FN(hipDeviceGetName),
    FN(hipDriverGetVersion), FN(hipRuntimeGetVersion), FN(hipGetLastError), FN(hipPeekAtLastError),
    FN(hipGetErrorName), FN(hipGetErrorString), FN(hipDeviceSynchronize), FN(hipDeviceReset),
    FN(hipDevicePrimaryCtxReset), FN(hipStreamCreate),
    FN(hipStreamDestroy), FN(hipMemGetInfo),
    FNT(hipMalloc, hipError_t (*)(void**, size_t)),
    FNT(hipExtMallocWithFlags, hipError_t (*)(void**, size_t, unsigned int)),
    FNT(hipMallocManaged, hipError_t (*)(void**, size_t, unsigned int)),
    FNT(hipMallocPitch, hipError_t (*)(void**, size_t*, size_t, size_t)),
    FN(hipMalloc3D), FN(hipFree),
    FNT(hipMallocAsync, hipError_t (*)(void**, size_t, hipStream_t)),
    FN(hipFreeAsync),
    FNT(hipMallocFromPoolAsync, hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t)),
    FN(hipDeviceGetDefaultMemPool), FN(hipMemPoolCreate), FN(hipMemPoolDestroy),
    FNT(hipHostMalloc, hipError_t (*)(void**, size_t, unsigned int)),
    FN(hipHostFree), FN(hipMemCreate), FN(hipMemRelease), FN(hipMemAddressReserve),
    FN(hipMemAddressFree), FN(hipMemMap), FN(hipMemUnmap), FN(hipMemSetAccess),
    FN(hipMemGetAllocationGranularity), FN(hipGetProcAddress),
};
#undef FNT
#undef FN

}  // namespace

FAKE_EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                         hipDriverProcAddressQueryResult* symbolStatus) {
  if (symbolStatus != nullptr) *symbolStatus = HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || pfn == nullptr) return record(hipErrorInvalidValue);
  *pfn = nullptr;
  for (const auto& e : kTable) {
    if (strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (symbolStatus != nullptr) *symbolStatus = HIP_GET_PROC_ADDRESS_SUCCESS;
      return hipSuccess;
    }
  }
  return record(hipErrorNotFound);
}

// ---------------------------------------------------------------------------
// Test helpers
// ---------------------------------------------------------------------------

FAKE_EXPORT int fakegpu_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT int fakegpu_hip_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT unsigned long long fakegpu_hip_live_bytes(int device) {
  return valid_dev(device) ? sim::used_bytes(device) : 0;
}

__attribute__((constructor)) static void fake_hip_loaded() {
  sim::note_loader_pid();
  sim::prereserve();
}
__attribute__((destructor)) static void fake_hip_unloaded() { sim::write_ledger_at_exit(); }
