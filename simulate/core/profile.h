// The cards gpumemrec can simulate, and the one this process simulates.
//
// A profile holds every figure of a card that a program can read from the
// driver, the runtime or NVML (cudaDeviceProp, cuDeviceGetAttribute,
// nvmlDeviceGet*), and the device memory that exists before any allocation
// (the CUDA context, the driver's reserve). Each figure's source is cited in
// profiles.cpp; docs/simulate.md lists them for users.
//
// Which card: GPUMEMREC_SIMULATE=NAME[:COUNT] (e.g. h100-80gb:8). Without it
// the libraries present the test suite's plain "Fake GPU" (FAKEGPU_* variables,
// simulate/README.md), so the fakes the tests use are these same libraries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sim {

struct Profile {
  const char* id;         // what users type: "h100-80gb"
  const char* name;       // cudaDeviceProp.name / nvmlDeviceGetName
  uint64_t total_bytes;   // cudaDeviceProp.totalGlobalMem, cuMemGetInfo's total
  uint64_t nvml_total_bytes;  // nvmlDeviceGetMemoryInfo's total (what nvidia-smi shows)
  // Device memory taken before the program allocates anything: the CUDA
  // context with PyTorch's kernels loaded lazily (cuMemGetInfo's used minus
  // what was allocated), and what cuMemGetInfo never reports free beyond it.
  uint64_t context_bytes;
  uint64_t driver_reserved_bytes;
  int cc_major, cc_minor;
  int sm_count;                  // multiProcessorCount
  int l2_bytes;                  // l2CacheSize
  int persisting_l2_max_bytes;   // persistingL2CacheMaxSize
  int max_threads_per_sm;        // maxThreadsPerMultiProcessor
  int max_blocks_per_sm;         // maxBlocksPerMultiProcessor
  int shared_per_sm;             // sharedMemPerMultiprocessor (bytes)
  int shared_per_block_optin;    // sharedMemPerBlockOptin (bytes)
  int regs_per_sm;               // regsPerMultiprocessor
  int memory_bus_width_bits;     // memoryBusWidth
  int clock_khz;                 // cudaDevAttrClockRate (boost)
  int memory_clock_khz;          // cudaDevAttrMemoryClockRate
  int pci_device_id;             // PCI product id (vendor 0x10de): NVML's pciDeviceId is
                                 // pci_device_id << 16 | 0x10de. Not cudaDeviceProp.pciDeviceID
                                 // (the slot, which PyTorch's pci_device_id property reads).
  int async_engines;             // asyncEngineCount
  bool ecc;                      // ECCEnabled
  bool multi_gpu_board;          // isMultiGpuBoard
  const char* source;            // where the figures come from (docs/simulate.md)
};

// Every profile, in the order `gpumemrec simulate --list` prints them.
const Profile* profiles(size_t* count);
// The profile called `id` (case-sensitive), or nullptr.
const Profile* find_profile(const char* id, size_t len);

// Parses "NAME[:COUNT]". Returns false (and leaves the outputs alone) on an
// unknown name, a count that is not 1..64, or trailing garbage.
bool parse_simulate(const char* spec, const Profile** profile, int* count);

}  // namespace sim
