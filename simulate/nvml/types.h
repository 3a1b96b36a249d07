// NVML's types, declared here with the real ABI (NVIDIA ships no nvml.h
// with the CUDA toolkit; the layouts are those of nvml.h from the NVIDIA
// driver / GPU Deployment Kit, and of cuda-bindings' cynvml.pxd):
//   nvmlProcessInfo_v1_t = { unsigned int pid; unsigned long long usedGpuMemory; }
//   nvmlProcessInfo_t (= _v2_t) = { pid; usedGpuMemory; gpuInstanceId; computeInstanceId; }
//   nvmlPciInfo_t = { busIdLegacy[16]; domain; bus; device; pciDeviceId; pciSubSystemId; busId[32]; }
#pragma once

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;
typedef nvmlProcessInfo_t nvmlProcessInfo_v2_t;

}  // extern "C"

static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 layout");
static_assert(sizeof(nvmlProcessInfo_t) == 24, "v2/v3 layout");

extern "C" {
typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // the combined 16-bit device id and 16-bit vendor id
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef int nvmlIntNvLinkDeviceType_t;
}  // extern "C"
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
