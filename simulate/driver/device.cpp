// Initialisation, versions, devices and their attributes (core/card.h),
// error names, export tables.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/card.h"
#include "driver/internal.h"

namespace {

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

using namespace drv;

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

// NVIDIA's own libraries (their runtime, statically linked into a program or
// into cuBLAS, cuDNN, NCCL) ask the driver for private tables no simulation
// can give: such a library cannot run on a simulated card. Said once, when a
// card is simulated (the tests' Fake GPU answers silently).
FAKE_EXPORT CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  static std::atomic<bool> said{false};
  if (sim::config().profile != nullptr && !said.exchange(true)) {
    static const char kLine[] =
        "gpumemrec simulate: NVIDIA's own CUDA runtime is loaded in this program (linked into it, or a library "
        "loaded from its own path) and asks the driver for tables no simulated card has: that part of the program "
        "cannot run on a simulated card (build it with `nvcc -cudart shared`, or let it load libcudart.so.13 by "
        "name)\n";
    (void)!write(2, kLine, sizeof kLine - 1);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  return sim::device_attribute(attrib, dev, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *major = sim::card().cc_major;
  *minor = sim::card().cc_minor;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  sim::device_uuid(dev, reinterpret_cast<unsigned char*>(uuid->bytes));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  sim::pci_bus_id(dev, pciBusId, len);
  return CUDA_SUCCESS;
}

// The driver's error log (CUDA 12.9): PyTorch registers a callback when the
// driver has one (c10/cuda/driver_api.h, optional). Nothing is logged here:
// registering succeeds and the callback never runs.
FAKE_EXPORT CUresult CUDAAPI cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                                                    CUlogsCallbackHandle* callback_out) {
  static char handle;
  if (callbackFunc == nullptr || callback_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *callback_out = reinterpret_cast<CUlogsCallbackHandle>(&handle);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  return callback == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
