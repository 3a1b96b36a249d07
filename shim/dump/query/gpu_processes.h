// Who else is on the GPU: at dump time, NVML (libnvidia-ml.so.1, dlopened
// then, never linked) lists every process using the failing device and how
// much memory each holds. When another job holds the card, this is the whole
// answer to an out-of-memory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpumemrec {

struct GpuProcess {
  uint32_t pid = 0;
  std::string name;
  bool has_used = false;  // NVML may refuse to say (containers, permissions)
  uint64_t used_bytes = 0;
  bool is_self = false;
};

struct GpuProcessReport {
  bool available = false;  // NVML answered for this device
  std::string error;       // why not, when not
  std::vector<GpuProcess> processes;  // largest first; this process included
};

// `device` is the CUDA ordinal of the failing device; mapped to NVML by PCI
// bus id when the driver can tell, else by index.
GpuProcessReport query_gpu_processes(int device);

// "this process holds 31.00 GiB (NVML); pid 4242 (python) holds 44.00 GiB"
std::string describe_gpu_processes(const GpuProcessReport& r);

}  // namespace gpumemrec
