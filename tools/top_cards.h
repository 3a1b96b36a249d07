// The cards' own memory for `gpumemrec top`: total and free bytes from NVML
// (libnvidia-ml.so.1, loaded with dlopen when top starts, never linked;
// without it, or on a HIP machine, the figures are unknown and said so).
// A process's device is found by the PCI bus id its driver gave
// (common/status_region.h, DeviceSlot::bus_id), as the dump's card
// accounting does (shim/dump/query/gpu_processes.cpp): CUDA ordinals follow
// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, NVML's indexes do not. A
// device without a bus id is taken by its ordinal, and marked so.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace gpumemrec::cli {

struct CardMemory {
  bool known = false;
  bool by_index = false;  // found by ordinal: the card of that index, maybe not the process's
  uint64_t total = 0, free = 0;
};

class Cards {
 public:
  Cards();
  ~Cards();
  Cards(const Cards&) = delete;
  Cards& operator=(const Cards&) = delete;
  // A card's memory now; asked of NVML once per card until refresh().
  CardMemory memory(const std::string& bus_id, int device) const;
  // A new refresh: the next memory() asks NVML again (device handles are kept).
  void refresh() { asked_.clear(); }
  // Why there are no figures ("" when NVML answers).
  const std::string& problem() const { return problem_; }

 private:
  struct Api;
  Api* api_ = nullptr;
  std::string problem_;
  mutable std::map<std::string, CardMemory> asked_;  // by bus id ("#N": by index), this refresh
  mutable std::map<std::string, void*> handles_;     // NVML's device handles, by the same key
};

}  // namespace gpumemrec::cli
