// Devices: count, current device, properties and attributes (core/card.h),
// PCI ids, peer access, synchronization, reset, versions.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "core/card.h"
#include "core/config.h"
#include "runtime/internal.h"

using rt::ensure_ctx;
using rt::ensure_init;
using rt::g_drv;
using rt::map_drv;
using rt::record;

namespace {

bool valid_device(int d) { return d >= 0 && d < rt::device_count(); }

std::mutex g_peer_mu;
std::set<std::pair<int, int>>* g_peers = new std::set<std::pair<int, int>>();  // (device, peer); never destroyed

}  // namespace

SIM_EXPORT cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
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

SIM_EXPORT cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  *device = rt::current_device();
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaSetDevice(int device) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (!valid_device(device) || device >= sim::kMaxDevices) return record(cudaErrorInvalidDevice);
  rt::set_current_device(device);
  return record(ensure_ctx());
}

SIM_EXPORT cudaError_t CUDARTAPI cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags) {
  if (cudaError_t e = ensure_init()) return record(e);
  return valid_device(device) ? cudaSuccess : record(cudaErrorInvalidDevice);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags) {
  if (cudaError_t e = ensure_init()) return record(e);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  *flags = cudaDeviceMapHost;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
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
SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceReset(void) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuDevicePrimaryCtxReset == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  CUdevice dev = 0;
  CUresult r = g_drv.cuDeviceGet(&dev, rt::current_device());
  if (r == CUDA_SUCCESS) r = g_drv.cuDevicePrimaryCtxReset(dev);
  rt::unbind_context();
  return record(map_drv(r));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (!valid_device(device)) return record(cudaErrorInvalidDevice);
  sim::fill_device_prop(device, prop);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (!valid_device(device)) return record(cudaErrorInvalidDevice);
  return sim::device_attribute(attr, device, value) ? cudaSuccess : record(cudaErrorInvalidValue);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (pciBusId == nullptr || len <= 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (!valid_device(device)) return record(cudaErrorInvalidDevice);
  sim::pci_bus_id(device, pciBusId, len);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetByPCIBusId(int* device, const char* pciBusId) {
  if (device == nullptr || pciBusId == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  for (int d = 0; d < rt::device_count(); ++d) {
    char id[32];
    sim::pci_bus_id(d, id, sizeof id);
    if (strcasecmp(id, pciBusId) == 0 || strcasecmp(id + 5, pciBusId) == 0) {  // with or without the domain
      *device = d;
      return cudaSuccess;
    }
  }
  return record(cudaErrorInvalidDevice);
}

// Lower numbers are higher priorities: 0 down to -5 on Volta and newer
// (CUDA Runtime API, cudaDeviceGetStreamPriorityRange; PyTorch's
// CUDAStream.cpp asks for the range and creates its pools within it).
SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (canAccessPeer == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (!valid_device(device) || !valid_device(peerDevice)) return record(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice ? 1 : 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (flags != 0) return record(cudaErrorInvalidValue);
  const int d = rt::current_device();
  if (!valid_device(peerDevice) || peerDevice == d) return record(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(g_peer_mu);
  if (!g_peers->insert({d, peerDevice}).second) return record(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peerDevice) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  std::lock_guard<std::mutex> lock(g_peer_mu);
  if (g_peers->erase({rt::current_device(), peerDevice}) == 0) return record(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  ensure_init();
  if (g_drv.cuDriverGetVersion == nullptr) {  // no (usable) driver: 0, like the real runtime
    *driverVersion = 0;
    return cudaSuccess;
  }
  return record(map_drv(g_drv.cuDriverGetVersion(driverVersion)));
}

// The runtime of the CUDA 13.0 wheels PyTorch 2.14.1 installs
// (nvidia-cuda-runtime 13.0.x).
SIM_EXPORT cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = 13000;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t* pValue, enum cudaLimit limit) {
  if (pValue == nullptr) return record(cudaErrorInvalidValue);
  switch (limit) {
    case cudaLimitStackSize: *pValue = 1024; break;
    case cudaLimitPrintfFifoSize: *pValue = 1 << 20; break;
    case cudaLimitMallocHeapSize: *pValue = 8 << 20; break;
    default: *pValue = 0;
  }
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  if (cudaError_t e = ensure_init()) return record(e);
  return cudaSuccess;
}

// Graph memory pools: nothing is captured into a graph's own pool here.
SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                                void* value) {
  if (value == nullptr) return record(cudaErrorInvalidValue);
  if (!valid_device(device)) return record(cudaErrorInvalidDevice);
  *static_cast<unsigned long long*>(value) = 0;
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                                void* value) {
  if (value == nullptr) return record(cudaErrorInvalidValue);
  if (!valid_device(device)) return record(cudaErrorInvalidDevice);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGraphMemTrim(int device) {
  return valid_device(device) ? cudaSuccess : record(cudaErrorInvalidDevice);
}
