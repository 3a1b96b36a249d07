// Contexts: the primary context of each device (retain, release, reset,
// state) and contexts made with cuCtxCreate (a stack per thread), as the
// driver API's documentation describes them.
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "driver/internal.h"

namespace drv {

thread_local int t_device = 0;
thread_local bool t_has_ctx = false;
thread_local int t_created = -1;

namespace {

char g_ctx_objects[sim::kMaxDevices];  // a primary context is &g_ctx_objects[device]
std::mutex g_primary_mu;
int g_primary_refs[sim::kMaxDevices] = {};       // cuDevicePrimaryCtxRetain minus Release
// Created (a retain, or an allocation on a context that a reset left to be
// re-created on its next use) and not destroyed since.
std::atomic<bool> g_primary_active[sim::kMaxDevices] = {};

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

}  // namespace

void mark_active(int d) {
  // From inactive to active: the run's other processes count the context
  // (core/shared_ledger.h).
  if (d >= 0 && d < sim::kMaxDevices && !g_primary_active[d].exchange(true)) sim::note_context(d);
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

int owner_of(uint64_t addr) {
  std::lock_guard<std::mutex> lock(g_created_mu);
  auto it = g_owner->find(addr);
  return it != g_owner->end() ? it->second : -1;
}

CUcontext context_handle(int owner, int device) {
  return owner >= 0 ? reinterpret_cast<CUcontext>(&g_created[owner]) : ctx_for(device);
}

}  // namespace drv

using namespace drv;

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
