// What NVML says of a device besides its memory: PCI location and UUID (the
// same as the runtime's, core/card.h, so that PyTorch finds the device the
// runtime named: its out-of-memory message asks NVML by the PCI bus id of
// cudaDeviceProp), compute capability, versions, NVLink (none).
#include <cstdio>
#include <cstring>

#include "core/card.h"
#include "core/config.h"
#include "nvml/internal.h"

namespace {

// NVML's form of a bus id: an 8-digit domain ("00000000:18:00.0").
void nvml_bus_id(int device, char* out, size_t len) {
  snprintf(out, len, "00000000:%02x:00.0", sim::pci_bus(device) & 0xff);
}

nvmlReturn_t copy_string(const char* s, char* out, unsigned int len) {
  const size_t n = strlen(s);
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (len <= n) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, s, n + 1);
  return NVML_SUCCESS;
}

int checked(nvmlDevice_t device) { return nvml_initialized() ? nvml_device_index(device) : -2; }

nvmlReturn_t bad(int d) { return d == -2 ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT; }

}  // namespace

// Accepts the runtime's "0000:18:00.0", NVML's "00000000:18:00.0", and the
// domain-less "18:00.0", in either case.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  if (!nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
  if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  const int n = sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  if (n < 4 && sscanf(pciBusId, "%x:%x.%x", &bus, &dev, &fn) == 3) domain = 0;
  else if (n < 4) return NVML_ERROR_INVALID_ARGUMENT;
  for (int d = 0; d < sim::config().devices; ++d) {
    if (domain == 0 && bus == static_cast<unsigned>(sim::pci_bus(d)) && dev == 0 && fn == 0) {
      *device = nvml_device(d);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  const int d = checked(device);
  if (d < 0 || pci == nullptr) return d < 0 ? bad(d) : NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  nvml_bus_id(d, pci->busId, sizeof pci->busId);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02x:00.0", sim::pci_bus(d) & 0xff);
  pci->bus = static_cast<unsigned>(sim::pci_bus(d));
  pci->pciDeviceId = (static_cast<unsigned>(sim::card().pci_device_id) << 16) | 0x10de;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

// "GPU-" and the UUID the runtime reports (cudaDeviceProp.uuid), as
// nvidia-smi -L prints it.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  const int d = checked(device);
  if (d < 0) return bad(d);
  unsigned char u[16];
  sim::device_uuid(d, u);
  char s[48];
  snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
           u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return copy_string(s, uuid, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  const int d = checked(device);
  if (d < 0 || index == nullptr) return d < 0 ? bad(d) : NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(d);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return nvmlDeviceGetIndex(device, minorNumber);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  const int d = checked(device);
  if (d < 0 || major == nullptr || minor == nullptr) return d < 0 ? bad(d) : NVML_ERROR_INVALID_ARGUMENT;
  *major = sim::card().cc_major;
  *minor = sim::card().cc_minor;
  return NVML_SUCCESS;
}

// The CUDA 13.0 driver of the simulated runtime (cuDriverGetVersion: 13000).
FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = 13000;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

// Not an NVIDIA driver: the version says so.
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy_string("gpumemrec-simulated", version, length);
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return copy_string("13.580", version, length);
}

// No NVLink is simulated: every link query says so, as NVML does for a
// card without NVLink.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                             nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  const int d = checked(device);
  return d < 0 ? bad(d) : NVML_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                             nvmlPciInfo_t* pci) {
  const int d = checked(device);
  return d < 0 ? bad(d) : NVML_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int* isActive) {
  const int d = checked(device);
  return d < 0 ? bad(d) : NVML_ERROR_NOT_SUPPORTED;
}
