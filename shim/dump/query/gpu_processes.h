// Who else is on the GPU: at dump time, NVML (libnvidia-ml.so.1, dlopened
// then, never linked) lists every process using the failing device and how
// much memory each holds. When another job holds the card, this is the whole
// answer to an out-of-memory.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"

namespace gpumemrec {

struct GpuProcess {
  uint32_t pid = 0;
  std::string name;
  bool has_used = false;  // NVML may refuse to say (containers, permissions)
  uint64_t used_bytes = 0;
  bool is_self = false;
};

// What this process holds on a device through the intercepted calls, as
// the recorder counts it: outside stream-ordered pools (`driver`: a free
// gives the bytes to the driver, NVML sees it at once) and from them
// (`pooled`: a free gives them to the pool, which keeps them, counted by
// NVML, until a synchronization or a trim releases them).
struct HeldBytes {
  uint64_t driver = 0;
  uint64_t pooled = 0;
  static HeldBytes now(int device);
};

struct GpuProcessReport {
  bool available = false;  // NVML answered for this device
  std::string error;       // why not, when not
  std::vector<GpuProcess> processes;  // largest first; this process included
  // HeldBytes of the device, equal just before and just after NVML's list:
  // what this process held through the intercepted calls when NVML counted
  // it. `self_live_known` false: it changed during every try (kListTries).
  bool self_live_known = false;
  HeldBytes self_held;
};

// HeldBytes per device right after the freeze: NVML is read later, by the
// writer, and the program may have freed or allocated meanwhile
// (common/card_accounting.h, NvmlProcesses, says how the change is used).
struct LiveAtFreeze {
  HeldBytes held[kMaxDevices] = {};
  void read();  // every device's: a few thousand relaxed loads
  bool known(int device, const GpuProcessReport& g) const {
    return device >= 0 && device < kMaxDevices && g.self_live_known;
  }
  int64_t driver_change(int device, const GpuProcessReport& g) const {
    return int64_t(g.self_held.driver) - int64_t(held[device].driver);
  }
  int64_t pool_change(int device, const GpuProcessReport& g) const {
    return int64_t(g.self_held.pooled) - int64_t(held[device].pooled);
  }
};

// `device` is the CUDA ordinal of the failing device; mapped to NVML by PCI
// bus id when the driver can tell, else by index.
GpuProcessReport query_gpu_processes(int device);

// "this process holds 31.00 GiB (NVML); pid 4242 (python) holds 44.00 GiB"
std::string describe_gpu_processes(const GpuProcessReport& r);

}  // namespace gpumemrec
