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
  // NVML is read by the writer, after the failure; the program may have
  // freed or allocated since (a CUDA program that frees everything on its
  // way out does, before the writer gets there: seen on an H200,
  // docs/validation/2026-11-26). The shim reads its own live counter for
  // the device around NVML's list: `self_change_bytes` is that counter then
  // minus at the freeze, and takes this process's NVML figure back to the
  // moment of the failure. Allocations from stream-ordered pools are not in
  // that counter: a pool keeps what is freed into it, and NVML counts it,
  // until a synchronization releases it (PyTorch's cudaMallocAsync backend
  // freeing 139 GiB left NVML's figure as it was). `self_moving`: the
  // counters changed while NVML was read (every try), so this process's
  // figure is left out.
  //
  // `self_pool_change_bytes`: the same for pool allocations. A pool's frees
  // are assumed kept (NVML still counts them); if that makes this process's
  // unrecorded share negative, which cannot be, the pool released them (a
  // synchronization came between) and they count as given back.
  std::optional<int64_t> self_change_bytes;
  std::optional<int64_t> self_pool_change_bytes;
  bool self_moving = false;
};

// `total`/`free`: the driver's figures for the device (nullopt when unknown).
// The bundle's stacks must be attributed (common/site_rules.h).
DeviceAccounting account_device(const Bundle& b, int32_t device, std::optional<uint64_t> total,
                                std::optional<uint64_t> free, const NvmlProcesses& nvml);

// The lines people read: "Where device 0's 80.00 GiB went:" then one line
// per figure ("  12.00 GiB  recorded live (libnccl.so.2 8.00 GiB, app 4.00 GiB)").
std::vector<std::string> accounting_lines(const DeviceAccounting& a);

}  // namespace gpumemrec::model
