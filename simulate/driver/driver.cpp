// Fake NVIDIA driver: libcuda.so.1.
//
// Compiled against the real CUDA 13 cuda.h with __CUDA_API_VERSION_INTERNAL
// defined, which is how the driver itself sees the header: the API macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) are undone at the end of the header and
// the legacy ABIs (cuMemAlloc with a 32-bit CUdeviceptr_v1, cuGetProcAddress
// without a status argument) and the plain/_ptsz stream variants are all
// declared, so every symbol below is defined with its exact real signature.
//
// The library is linked with -Bsymbolic: addresses taken inside it (the
// cuGetProcAddress table) are its own functions, identical to what
// dlsym(handle, "<name>") returns, even when a preloaded library interposes
// the same names. Internal calls never go through exported symbols.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/ledger.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sim::Kind;

thread_local int t_device = 0;       // device of the thread's current context
thread_local bool t_has_ctx = false;  // a context was made current on this thread

char g_ctx_objects[sim::kMaxDevices];  // a context is &g_ctx_objects[device]
std::mutex g_primary_mu;
int g_primary_refs[sim::kMaxDevices] = {};       // cuDevicePrimaryCtxRetain minus Release
// Created (a retain, or an allocation on a context that a reset left to be
// re-created on its next use) and not destroyed since.
std::atomic<bool> g_primary_active[sim::kMaxDevices] = {};
void mark_active(int d) {
  if (d >= 0 && d < sim::kMaxDevices) g_primary_active[d].store(true);
}

struct FakePool {
  int device;
  bool is_default;
  bool destroyed;
};
FakePool g_default_pools[sim::kMaxDevices];

std::mutex g_handles_mu;
std::set<void*>* g_streams = new std::set<void*>();   // never destroyed
std::set<void*>* g_pools = new std::set<void*>();     // created (non-default) pools

int ndev() { return sim::config().devices; }
bool valid_dev(int d) { return d >= 0 && d < ndev(); }

// Contexts made by cuCtxCreate, as the driver API's documentation describes
// them: a new context is bound to its device and pushed onto the calling
// thread's stack; memory allocated while it is current is its own;
// cuCtxDestroy frees it ("Destroys the CUDA context specified by ctx ...
// regardless of how many threads it is current to") and pops it where it is
// current to the calling thread. PyCUDA's make_context and cuda-python
// programs (TensorRT engines) work this way. A context is &g_created[i].
constexpr int kMaxCreated = 64;
struct Created {
  int device = -1;
  bool live = false;
  int uses = 0;  // cuCtxCreate 1, cuCtxAttach +1, cuCtxDetach -1 (destroyed at 0)
};
std::mutex g_created_mu;
Created g_created[kMaxCreated];
std::map<uint64_t, int>* g_owner = new std::map<uint64_t, int>();  // address -> created context (never destroyed)
thread_local int t_created = -1;  // the thread's current created context (-1: a primary one, or none)
struct Saved {
  int created, device;
  bool has;
};
thread_local Saved t_stack[16];  // cuCtxPushCurrent's saved states
thread_local int t_pushed = 0;

int created_index(CUcontext c) {
  const Created* p = reinterpret_cast<const Created*>(c);
  if (p < g_created || p >= g_created + kMaxCreated) return -1;
  return static_cast<int>(p - g_created);
}

CUcontext ctx_for(int d) { return reinterpret_cast<CUcontext>(&g_ctx_objects[d]); }
int dev_of_ctx(CUcontext c) {
  const int i = created_index(c);
  if (i >= 0) {
    std::lock_guard<std::mutex> lock(g_created_mu);
    return g_created[i].live ? g_created[i].device : -1;
  }
  const char* p = reinterpret_cast<const char*>(c);
  if (p < g_ctx_objects || p >= g_ctx_objects + sim::kMaxDevices) return -1;
  return static_cast<int>(p - g_ctx_objects);
}

void make_current(CUcontext ctx) {
  t_created = created_index(ctx);
  t_device = dev_of_ctx(ctx);
  t_has_ctx = true;
}

// Memory allocated while a created context is current is that context's.
void note_owner(uint64_t addr) {
  if (t_created < 0 || addr == 0) return;
  std::lock_guard<std::mutex> lock(g_created_mu);
  (*g_owner)[addr] = t_created;
}
void forget_owner(uint64_t addr) {
  std::lock_guard<std::mutex> lock(g_created_mu);
  g_owner->erase(addr);
}

FakePool* default_pool(int d) {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < sim::kMaxDevices; ++i) g_default_pools[i] = FakePool{i, true, false};
  });
  return &g_default_pools[d];
}

// Returns the pool if the handle is a live pool, else nullptr.
FakePool* pool_of(CUmemoryPool h) {
  if (h == nullptr) return nullptr;
  FakePool* p = reinterpret_cast<FakePool*>(h);
  if (p >= g_default_pools && p < g_default_pools + sim::kMaxDevices) {
    default_pool(0);
    return valid_dev(p->device) ? p : nullptr;
  }
  std::lock_guard<std::mutex> lock(g_handles_mu);
  if (g_pools->count(p) == 0 || p->destroyed) return nullptr;
  return p;
}

CUresult map_core(int rc, CUresult bad_device = CUDA_ERROR_INVALID_CONTEXT) {
  switch (rc) {
    case sim::kOk: return CUDA_SUCCESS;
    case sim::kInvalid: return CUDA_ERROR_INVALID_VALUE;
    case sim::kOom: return CUDA_ERROR_OUT_OF_MEMORY;
    case sim::kBadDevice: return bad_device;
  }
  return CUDA_ERROR_UNKNOWN;
}

// Every device allocation entry point ends up here.
CUresult do_alloc(CUdeviceptr* dptr, size_t size, int device, Kind kind) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t addr = 0;
  const int rc = sim::alloc(device, size, kind, 0, false, &addr);
  *dptr = rc == sim::kOk ? static_cast<CUdeviceptr>(addr) : 0;
  if (rc == sim::kOk) {
    if (t_created < 0) mark_active(device);
    note_owner(addr);
  }
  return map_core(rc);
}

CUresult do_free(CUdeviceptr p) {
  if (p == 0) return CUDA_SUCCESS;
  const int rc = sim::free_ptr(p);
  if (rc == sim::kOk) forget_owner(p);
  return map_core(rc);
}

CUresult do_alloc_from_pool(CUdeviceptr* dptr, size_t size, CUmemoryPool pool) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FakePool* p = pool_of(pool);
  if (p == nullptr) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUresult rc = do_alloc(dptr, size, p->device, Kind::Device);
  if (rc == CUDA_SUCCESS) sim::pool_take(p->device, size);  // reuses what the pool keeps (free_to_pool)
  return rc;
}

CUresult do_alloc_pitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int elem) {
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16)) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t p = (width + 511) / 512 * 512;
  if (p < width || height > SIZE_MAX / p) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult rc = do_alloc(dptr, p * height, t_device, Kind::Device);
  if (rc == CUDA_SUCCESS) *pitch = p;
  return rc;
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* find_error(CUresult e) {
  for (const auto& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------
// Initialisation, versions, devices, contexts, streams
// ---------------------------------------------------------------------------

FAKE_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (ndev() == 0) return CUDA_ERROR_NO_DEVICE;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = ndev();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  sim::device_name(dev, name, len);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = sim::config().capacity;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = t_device;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (ctx == nullptr) {
    t_has_ctx = false;
    t_created = -1;
    return CUDA_SUCCESS;
  }
  if (!valid_dev(dev_of_ctx(ctx))) return CUDA_ERROR_INVALID_CONTEXT;
  make_current(ctx);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = !t_has_ctx ? nullptr : t_created >= 0 ? reinterpret_cast<CUcontext>(&g_created[t_created]) : ctx_for(t_device);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!valid_dev(dev_of_ctx(ctx))) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_pushed == 16) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_pushed++] = Saved{t_created, t_device, t_has_ctx};
  make_current(ctx);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (!t_has_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) cuCtxGetCurrent(pctx);
  const Saved s = t_pushed ? t_stack[--t_pushed] : Saved{-1, 0, false};
  t_created = s.created, t_device = s.device, t_has_ctx = s.has;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int i = 0;
  {
    std::lock_guard<std::mutex> lock(g_created_mu);
    while (i < kMaxCreated && (g_created[i].live || g_created[i].device >= 0)) ++i;  // never reused
    if (i == kMaxCreated) return CUDA_ERROR_OUT_OF_MEMORY;
    g_created[i] = Created{int(dev), true, 1};
  }
  *pctx = reinterpret_cast<CUcontext>(&g_created[i]);
  return cuCtxPushCurrent_v2(*pctx);
}

// CUDA 12.5's form (cuda.h maps cuCtxCreate to it): the parameters add
// execution affinity and CIG, which the fake has no use for.
FAKE_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                                            CUdevice dev) {
  (void)params;
  return cuCtxCreate_v2(pctx, flags, dev);
}

FAKE_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  const int i = created_index(ctx);
  std::vector<uint64_t> mine;
  {
    std::lock_guard<std::mutex> lock(g_created_mu);
    if (i < 0 || !g_created[i].live) return CUDA_ERROR_INVALID_CONTEXT;
    g_created[i].live = false;
    for (auto it = g_owner->begin(); it != g_owner->end();) {
      if (it->second == i) {
        mine.push_back(it->first);
        it = g_owner->erase(it);
      } else {
        ++it;
      }
    }
  }
  for (uint64_t a : mine) sim::free_ptr(a);
  if (t_created == i) {
    CUcontext popped = nullptr;
    cuCtxPopCurrent_v2(&popped);
  }
  return CUDA_SUCCESS;
}

// The pre-CUDA-4.0 ABI, same argument and meaning (libcuda exports both).
FAKE_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// Deprecated, and still what PyCUDA's Context.detach calls
// (src/cpp/cuda.hpp, context::detach_internal): a usage count on the
// current created context; the detach that takes it to 0 destroys it.
FAKE_EXPORT CUresult CUDAAPI cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  (void)flags;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!t_has_ctx || t_created < 0) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(g_created_mu);
  ++g_created[t_created].uses;
  *pctx = reinterpret_cast<CUcontext>(&g_created[t_created]);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxDetach(CUcontext ctx) {
  const int i = created_index(ctx);
  if (i < 0 || i != t_created) return CUDA_ERROR_INVALID_CONTEXT;  // "must be current to the calling thread"
  {
    std::lock_guard<std::mutex> lock(g_created_mu);
    if (!g_created[i].live) return CUDA_ERROR_INVALID_CONTEXT;
    if (--g_created[i].uses > 0) return CUDA_SUCCESS;
  }
  return cuCtxDestroy_v2(ctx);
}

// The attributes a caller asks to tell a live allocation from a freed one
// (CU_POINTER_ATTRIBUTE_CONTEXT, _DEVICE_ORDINAL, _MEMORY_TYPE); an address
// that is no allocation's: CUDA_ERROR_INVALID_VALUE, as the driver answers.
FAKE_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!sim::is_live(ptr)) return CUDA_ERROR_INVALID_VALUE;
  int owner = -1;
  {
    std::lock_guard<std::mutex> lock(g_created_mu);
    auto it = g_owner->find(ptr);
    if (it != g_owner->end()) owner = it->second;
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = owner >= 0 ? reinterpret_cast<CUcontext>(&g_created[owner]) : ctx_for(0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// Primary contexts, as the driver API's documentation describes them: a
// retain makes the context active and counts a reference; the release of the
// last reference destroys it; a reset destroys it ("Destroy all allocations
// and reset all state") without touching the references. Destroying frees
// everything allocated on the device (sim::reset_device): the fake has
// one context per device, so every allocation of the device is the
// context's.
FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_primary_mu);
  ++g_primary_refs[dev];
  mark_active(dev);
  *pctx = ctx_for(dev);
  return CUDA_SUCCESS;
}

namespace {
CUresult primary_release(CUdevice dev) {
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_primary_mu);
  if (g_primary_refs[dev] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--g_primary_refs[dev] == 0 && g_primary_active[dev].exchange(false)) sim::reset_device(dev);
  return CUDA_SUCCESS;
}
CUresult primary_reset(CUdevice dev) {
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_primary_mu);
  g_primary_active[dev].store(false);
  sim::reset_device(dev);
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(dev); }
FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }
FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset(dev); }
FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primary_reset(dev); }

FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_primary_mu);
  *flags = 0;
  *active = g_primary_active[dev].load() ? 1 : 0;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  sim::pool_release_all();  // release threshold 0: pools give back at a synchronization
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* h = new char[16];
  {
    std::lock_guard<std::mutex> lock(g_handles_mu);
    g_streams->insert(h);
  }
  *phStream = reinterpret_cast<CUstream>(h);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  void* h = reinterpret_cast<void*>(hStream);
  {
    std::lock_guard<std::mutex> lock(g_handles_mu);
    if (g_streams->erase(h) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete[] static_cast<char*>(h);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(t_device)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t cap = sim::config().capacity;
  const uint64_t used = sim::occupied_bytes(t_device);
  *total = cap;
  *free = used >= cap ? 0 : cap - used;
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Classic device memory
// ---------------------------------------------------------------------------

// Legacy ABI (CUDA < 3.2): 32-bit device pointer, 32-bit size.
FAKE_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t addr = 0;
  const int rc = sim::alloc(t_device, bytesize, Kind::Device, 0, true, &addr);
  if (rc == sim::kOk) *dptr = static_cast<CUdeviceptr_v1>(addr);
  if (rc == sim::kOk) mark_active(t_device);
  return map_core(rc);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) { return do_free(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return do_alloc(dptr, bytesize, t_device, Kind::Device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                                size_t Height, unsigned int ElementSizeBytes) {
  return do_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return do_alloc(dptr, bytesize, t_device, Kind::Managed);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) { return do_free(dptr); }

// ---------------------------------------------------------------------------
// Stream-ordered allocator: a free's bytes stay with the pool (NVML counts
// them) until a synchronization releases them (core/ledger.h, free_to_pool)
// ---------------------------------------------------------------------------

CUresult do_alloc_async(CUdeviceptr* dptr, size_t size, int device) {
  const CUresult rc = do_alloc(dptr, size, device, Kind::Device);
  if (rc == CUDA_SUCCESS) sim::pool_take(device, size);
  return rc;
}

CUresult do_free_async(CUdeviceptr p) {
  if (p == 0) return CUDA_SUCCESS;
  return map_core(sim::free_to_pool(p));
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return do_alloc_async(dptr, bytesize, t_device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return do_alloc_async(dptr, bytesize, t_device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                     CUstream hStream) {
  return do_alloc_from_pool(dptr, bytesize, pool);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                          CUstream hStream) {
  return do_alloc_from_pool(dptr, bytesize, pool);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return do_free_async(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return do_free_async(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = reinterpret_cast<CUmemoryPool>(default_pool(dev));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  FakePool* p = new FakePool{poolProps->location.id, false, false};
  {
    std::lock_guard<std::mutex> lock(g_handles_mu);
    g_pools->insert(p);
  }
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  FakePool* p = pool_of(pool);
  if (p == nullptr || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_handles_mu);
  p->destroyed = true;  // kept allocated: a stale handle must stay detectable
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Virtual memory management
// ---------------------------------------------------------------------------

FAKE_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                         const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  const int rc = sim::create_physical(prop->location.id, size, &h);
  if (rc == sim::kOk) *handle = h;
  if (rc == sim::kOk) mark_active(prop->location.id);
  return map_core(rc, CUDA_ERROR_INVALID_DEVICE);
}

FAKE_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return map_core(sim::release_physical(handle));
}

FAKE_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                 unsigned long long flags) {
  if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t out = 0;
  const int rc = sim::reserve_va(size, alignment, addr, &out);
  if (rc == sim::kOk) *ptr = out;
  return map_core(rc);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return map_core(sim::free_va(ptr, size));
}

FAKE_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                      unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return map_core(sim::map(ptr, size, offset, handle));
}

FAKE_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) { return map_core(sim::unmap(ptr, size)); }

FAKE_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
  }
  return map_core(sim::check_mapped(ptr, size));
}

FAKE_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                           CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = sim::kGranularity;
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Errors, export tables
// ---------------------------------------------------------------------------

FAKE_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* t = find_error(error);
  *pStr = t ? t->name : nullptr;
  return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* t = find_error(error);
  *pStr = t ? t->text : nullptr;
  return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

// ---------------------------------------------------------------------------
// cuGetProcAddress
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Test helpers (not part of any real driver)
// ---------------------------------------------------------------------------

FAKE_EXPORT int fakegpu_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT int fakegpu_cuda_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT unsigned long long fakegpu_cuda_live_bytes(int device) {
  return valid_dev(device) ? sim::used_bytes(device) : 0;
}
// NVML's figure for this process (fake_nvml.cpp): allocations plus context.
FAKE_EXPORT unsigned long long fakegpu_cuda_process_bytes(int device) {
  return valid_dev(device) ? sim::process_bytes(device) : 0;
}
FAKE_EXPORT unsigned long long fakegpu_cuda_capacity(void) { return sim::config().capacity; }
FAKE_EXPORT int fakegpu_cuda_device_count(void) { return ndev(); }

__attribute__((constructor)) static void fake_cuda_loaded() {
  sim::note_loader_pid();
  sim::prereserve();
}
__attribute__((destructor)) static void fake_cuda_unloaded() { sim::write_ledger_at_exit(); }
