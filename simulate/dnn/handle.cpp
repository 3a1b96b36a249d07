#include "dnn/handle.h"

#include <mutex>
#include <new>
#include <unordered_set>

#include "core/driver_entry.h"
#include "dnn/api.h"

struct cudnnContext {
  int device = 0;
  cudaStream_t stream = nullptr;  // NULL: the legacy default stream, as cuDNN starts
  CUdeviceptr memory[sizeof(sim::dnn::kHandleBytes) / sizeof(sim::dnn::kHandleBytes[0])] = {};
};

namespace sim::dnn {
namespace {

// The driver's calls a handle needs, as NVIDIA's library with its static
// runtime reaches them (core/driver_entry.h): ("cuMemAlloc", 3020) is
// cuMemAlloc_v2, the call the real cuDNN's handle memory shows up as.
struct DriverCalls {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
};

// nullptr when there is no usable driver.
const DriverCalls* driver() {
  static DriverCalls calls;
  static const bool ok = driver_entry("cuCtxGetDevice", 2000, &calls.ctx_get_device) &&
                         driver_entry("cuMemAlloc", 3020, &calls.mem_alloc) &&
                         driver_entry("cuMemFree", 3020, &calls.mem_free);
  return ok ? &calls : nullptr;
}

std::mutex g_mu;
std::unordered_set<cudnnHandle_t>& handles() {
  static auto* live = new std::unordered_set<cudnnHandle_t>();  // never destroyed: usable at exit
  return *live;
}

void release_memory(const DriverCalls* drv, cudnnContext* h) {
  for (CUdeviceptr& p : h->memory) {
    if (p != 0) drv->mem_free(p);
    p = 0;
  }
}

}  // namespace

bool live_handle(cudnnHandle_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  return handle != nullptr && handles().count(handle) != 0;
}

}  // namespace sim::dnn

using sim::dnn::fail;

// A handle on the calling thread's current device, holding the device memory
// of kHandleBytes. No usable driver: CUDNN_STATUS_NOT_INITIALIZED (cuDNN:
// "the CUDA Runtime API initialization failed"); the device memory refused:
// CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, nothing kept.
SIM_EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate: handle is NULL");
  const sim::dnn::DriverCalls* drv = sim::dnn::driver();
  CUdevice device = 0;
  if (drv == nullptr || drv->ctx_get_device(&device) != CUDA_SUCCESS)
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no usable CUDA driver or device");
  auto* h = new (std::nothrow) cudnnContext();
  if (h == nullptr) return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreate: out of host memory");
  h->device = static_cast<int>(device);
  for (size_t i = 0; i < sizeof(sim::dnn::kHandleBytes) / sizeof(sim::dnn::kHandleBytes[0]); ++i) {
    if (drv->mem_alloc(&h->memory[i], sim::dnn::kHandleBytes[i]) != CUDA_SUCCESS) {
      h->memory[i] = 0;
      sim::dnn::release_memory(drv, h);
      delete h;
      return fail(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "cudnnCreate: the device memory was refused");
    }
  }
  {
    std::lock_guard<std::mutex> lock(sim::dnn::g_mu);
    sim::dnn::handles().insert(h);
  }
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  {
    std::lock_guard<std::mutex> lock(sim::dnn::g_mu);
    if (handle == nullptr || sim::dnn::handles().erase(handle) == 0)
      return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a live handle");
  }
  if (const sim::dnn::DriverCalls* drv = sim::dnn::driver()) sim::dnn::release_memory(drv, handle);
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  if (!sim::dnn::live_handle(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a live handle");
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId) {
  if (!sim::dnn::live_handle(handle) || streamId == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream: not a live handle, or streamId is NULL");
  *streamId = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}
