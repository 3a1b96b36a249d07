// NCCL's own allocator (ncclMemAlloc / ncclMemFree, which PyTorch's NCCL
// memory pool uses), buffer registration, symmetric windows and
// ncclCommMemStats. Registration and windows take no device memory here:
// they map memory the program already has (register.cc; NVLS, which would
// take more, is off on the simulated card).
#include <map>
#include <mutex>
#include <set>

#include "nccl/api.h"
#include "nccl/comm.h"

namespace sim::nccl {
namespace {

std::mutex g_mu;
std::map<uint64_t, DeviceBuffer>* g_allocs = new std::map<uint64_t, DeviceBuffer>();
std::set<const void*>* g_handles = new std::set<const void*>();  // registrations and windows

struct Registration {
  void* buff;
  size_t size;
};

}  // namespace
}  // namespace sim::nccl

using namespace sim::nccl;

// allocator.cc: cuMem at the recommended granularity on the current device
// (cudaMalloc with NCCL_CUMEM_ENABLE=0 or for a NULL pointer or size 0,
// whose errors are the runtime's).
NCCL_SIM_API(ncclResult_t, MemAlloc, (void** ptr, size_t size)) {
  if (ptr == nullptr) return fail(nullptr, ncclUnhandledCudaError, "Cuda failure 'invalid argument' (ncclMemAlloc)");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  int device = 0;
  if (!current_device(&device)) return fail(nullptr, ncclUnhandledCudaError, "ncclMemAlloc: no current CUDA device");
  DeviceBuffer b;
  switch (alloc_buffer(device, size, plan_for(device, 0, 0).cumem, &b)) {
    case AllocResult::kOk: break;
    case AllocResult::kOutOfMemory:
      return fail(nullptr, ncclUnhandledCudaError, "Cuda failure 2 'out of memory' (ncclMemAlloc of " +
                                                       std::to_string(size) + " bytes)");
    default: return fail(nullptr, ncclUnhandledCudaError, "ncclMemAlloc: the CUDA driver refused the allocation");
  }
  std::lock_guard<std::mutex> lock(g_mu);
  (*g_allocs)[b.ptr] = b;
  *ptr = reinterpret_cast<void*>(b.ptr);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, MemFree, (void* ptr)) {
  if (ptr == nullptr) return ncclSuccess;
  DeviceBuffer b;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_allocs->find(reinterpret_cast<uint64_t>(ptr));
    if (it == g_allocs->end())
      return fail(nullptr, ncclUnhandledCudaError, "ncclMemFree: the pointer is not from ncclMemAlloc");
    b = it->second;
    g_allocs->erase(it);
  }
  free_buffer(b);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle)) {
  if (!is_comm(comm) || handle == nullptr) return fail(nullptr, ncclInvalidArgument, "CommRegister : invalid argument");
  auto* r = new Registration{buff, size};
  std::lock_guard<std::mutex> lock(g_mu);
  g_handles->insert(r);
  *handle = r;
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommDeregister, (const ncclComm_t comm, void* handle)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommDeregister : comm argument is invalid");
  std::lock_guard<std::mutex> lock(g_mu);
  if (handle == nullptr || g_handles->erase(handle) == 0)
    return fail(comm, ncclInvalidArgument, "CommDeregister : handle argument is invalid");
  delete static_cast<Registration*>(handle);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommWindowRegister, (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                int /*winFlags*/)) {
  if (!is_comm(comm) || win == nullptr)
    return fail(nullptr, ncclInvalidArgument, "CommWindowRegister : invalid argument");
  auto* r = new Registration{buff, size};
  std::lock_guard<std::mutex> lock(g_mu);
  g_handles->insert(r);
  *win = reinterpret_cast<ncclWindow_t>(r);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommWindowDeregister : comm argument is invalid");
  std::lock_guard<std::mutex> lock(g_mu);
  if (win == nullptr || g_handles->erase(win) == 0)
    return fail(comm, ncclInvalidArgument, "CommWindowDeregister : window argument is invalid");
  delete reinterpret_cast<Registration*>(win);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, WinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void** outUserPtr)) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!is_comm(comm) || outUserPtr == nullptr || g_handles->count(win) == 0)
    return fail(nullptr, ncclInvalidArgument, "WinGetUserPtr : invalid argument");
  *outUserPtr = reinterpret_cast<Registration*>(win)->buff;
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value)) {
  if (!is_comm(comm) || value == nullptr || stat < ncclStatGpuMemSuspend || stat > ncclStatGpuMemTotal)
    return fail(nullptr, ncclInvalidArgument, "CommMemStats : invalid argument");
  *value = mem_stat(comm, stat);
  return ncclSuccess;
}
