// Where a device's memory went: the card accounting of metadata.json
// `device_accounting` (docs/bundle-format.md), computed once for the shim
// (at the dump, from the bundle it builds in memory and NVML's answer) and
// shown by summary.txt, `report`, `html` and `query`.
//
// For one device:
//   recorded_live_bytes      what this process holds through the calls we
//                            intercept (allocations.json on the device,
//                            "mapping" ranges left out)
//   process_unrecorded_bytes NVML's usedGpuMemory for this process minus
//                            recorded_live_bytes: the CUDA context, loaded
//                            modules, local memory, graph pools, anything
//                            allocated past the interception
//   other_processes          every other process NVML lists on the device
//   unaccounted_bytes        total - free - recorded - process_unrecorded
//                            - sum(other processes)
//                          = total - free - sum(NVML usedGpuMemory of all)
// Each figure is null (std::nullopt) when one of its inputs is unknown:
// never a guess. The figures are taken at different moments (free from the
// driver right after the failure, NVML's list when the writer asks), and
// other processes allocate meanwhile (cuMemGetInfo's free is a snapshot of
// the whole device), so process_unrecorded and unaccounted are signed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::model {

// What NVML said about one device (the shim's query, as plain data).
struct NvmlProcesses {
  bool available = false;
  std::string note;  // why not, when not available
  std::vector<GpuProcessUse> processes;
};

// `total`/`free`: the driver's figures for the device (nullopt when unknown).
// The bundle's stacks must be attributed (common/site_rules.h).
DeviceAccounting account_device(const Bundle& b, int32_t device, std::optional<uint64_t> total,
                                std::optional<uint64_t> free, const NvmlProcesses& nvml);

// The lines people read: "Where device 0's 80.00 GiB went:" then one line
// per figure ("  12.00 GiB  recorded live (libnccl.so.2 8.00 GiB, app 4.00 GiB)").
std::vector<std::string> accounting_lines(const DeviceAccounting& a);

}  // namespace gpumemrec::model
