#include "core/card.h"

#include <cuda.h>

#include <cstdio>
#include <cstring>

#include "core/config.h"

namespace sim {
namespace {

// The tests' Fake GPU: the figures of an H100 SXM (so PyTorch picks the
// code paths it takes on one) with the tests' capacity and no context.
Profile fake_card() {
  const Config& c = config();
  Profile p{};
  p.id = "fake";
  p.name = "Fake GPU";
  p.total_bytes = c.capacity;
  p.nvml_total_bytes = c.capacity;
  p.cc_major = 9;
  p.cc_minor = 0;
  p.sm_count = 132;
  p.l2_bytes = 52428800;
  p.persisting_l2_max_bytes = 52428800 * 3 / 4;
  p.max_threads_per_sm = 2048;
  p.max_blocks_per_sm = 32;
  p.shared_per_sm = 233472;
  p.shared_per_block_optin = 232448;
  p.regs_per_sm = 65536;
  p.memory_bus_width_bits = 5120;
  p.clock_khz = 1980000;
  p.memory_clock_khz = 2619000;
  p.pci_device_id = 0x2330;
  p.async_engines = 3;
  p.ecc = true;
  p.source = "the test suite's fake device";
  return p;
}

constexpr int kSharedPerBlock = 48 * 1024;   // the default (non-opt-in) limit on every CC >= 3.0
constexpr int kReservedSharedPerBlock = 1024;  // CC >= 8.0 (CUDA C++ Programming Guide, CC tables)

}  // namespace

const Profile& card() {
  static const Profile fake = fake_card();
  const Config& c = config();
  return c.profile != nullptr ? *c.profile : fake;
}

int pci_bus(int device) { return 0x18 + 0x10 * device; }

void pci_bus_id(int device, char* out, int len) {
  if (out != nullptr && len > 0) snprintf(out, static_cast<size_t>(len), "0000:%02x:00.0", pci_bus(device) & 0xff);
}

void device_uuid(int device, unsigned char out[16]) {
  // FNV-1a over the profile id and the index, spread over 16 bytes.
  uint64_t h = 1469598103934665603ull;
  for (const char* s = card().id; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  h = (h ^ static_cast<uint64_t>(device + 1)) * 1099511628211ull;
  for (int i = 0; i < 16; ++i) {
    h = (h ^ static_cast<uint64_t>(i)) * 1099511628211ull;
    out[i] = static_cast<unsigned char>(h >> 56);
  }
}

bool device_attribute(int attribute, int device, int* value) {
  const Profile& p = card();
  const bool modern = p.cc_major >= 8;
  int v = 0;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = kSharedPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = p.clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = p.sm_count; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = 0; break;  // default
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = p.ecc ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = pci_bus(device); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = p.memory_clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = p.memory_bus_width_bits; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = p.l2_bytes; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = p.max_threads_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = p.async_engines; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = p.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = p.cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = p.shared_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = p.regs_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = p.multi_gpu_board ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: v = 2; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = p.shared_per_block_optin; break;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = p.max_blocks_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: v = modern ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: v = p.persisting_l2_max_bytes; break;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: v = modern ? 134213632 : 0; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: v = modern ? kReservedSharedPerBlock : 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: v = 1; break;  // POSIX file descriptor
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: v = p.cc_major >= 9 ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: v = -1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: v = -1; break;
    default:
      if (attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX) return false;
      v = 0;  // a feature this simulation does not present
  }
  *value = v;
  return true;
}

void fill_device_prop(int device, cudaDeviceProp* prop) {
  const Profile& p = card();
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "%s", p.name);
  device_uuid(device, reinterpret_cast<unsigned char*>(prop->uuid.bytes));
  auto attr = [device](int a) {
    int v = 0;
    device_attribute(a, device, &v);
    return v;
  };
  prop->totalGlobalMem = p.total_bytes;
  prop->sharedMemPerBlock = kSharedPerBlock;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = 2147483647;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 65536;
  prop->major = p.cc_major;
  prop->minor = p.cc_minor;
  prop->textureAlignment = 512;
  prop->texturePitchAlignment = 32;
  prop->multiProcessorCount = p.sm_count;
  prop->canMapHostMemory = 1;
  prop->surfaceAlignment = 512;
  prop->concurrentKernels = 1;
  prop->ECCEnabled = p.ecc ? 1 : 0;
  prop->pciBusID = pci_bus(device);
  prop->pciDeviceID = 0;
  prop->pciDomainID = 0;
  prop->asyncEngineCount = p.async_engines;
  prop->unifiedAddressing = 1;
  prop->memoryBusWidth = p.memory_bus_width_bits;
  prop->l2CacheSize = p.l2_bytes;
  prop->persistingL2CacheMaxSize = p.persisting_l2_max_bytes;
  prop->maxThreadsPerMultiProcessor = p.max_threads_per_sm;
  prop->streamPrioritiesSupported = 1;
  prop->globalL1CacheSupported = 1;
  prop->localL1CacheSupported = 1;
  prop->sharedMemPerMultiprocessor = p.shared_per_sm;
  prop->regsPerMultiprocessor = p.regs_per_sm;
  prop->managedMemory = 1;
  prop->isMultiGpuBoard = p.multi_gpu_board ? 1 : 0;
  prop->concurrentManagedAccess = 1;
  prop->computePreemptionSupported = 1;
  prop->canUseHostPointerForRegisteredMem = 1;
  prop->cooperativeLaunch = 1;
  prop->sharedMemPerBlockOptin = p.shared_per_block_optin;
  prop->maxBlocksPerMultiProcessor = p.max_blocks_per_sm;
  prop->accessPolicyMaxWindowSize = attr(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);
  prop->reservedSharedMemPerBlock = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  prop->hostRegisterSupported = 1;
  prop->memoryPoolsSupported = 1;
  prop->memoryPoolSupportedHandleTypes = 1;
  prop->deferredMappingCudaArraySupported = 1;
  prop->ipcEventSupported = 1;
  prop->clusterLaunch = attr(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH);
  prop->deviceNumaId = -1;
  prop->hostNumaId = -1;
  prop->gpuPciDeviceID = (static_cast<unsigned>(p.pci_device_id) << 16) | 0x10de;
}

}  // namespace sim
