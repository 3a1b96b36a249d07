#include "common/advice.h"

#include <cstdio>

#include "common/config.h"
#include "common/format.h"

namespace gpumemrec::model {

namespace {

// Where each knob is documented (docs/advice.md quotes them).
constexpr const char* kSrcAllocConf =
    "PyTorch's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp) and its CUDA memory notes "
    "(PYTORCH_CUDA_ALLOC_CONF)";
constexpr const char* kSrcOptimizer =
    "bitsandbytes 8-bit optimizers; DeepSpeed ZeRO (docs/code-docs/source/zero3.rst); PyTorch FSDP; "
    "torch.optim fused=True";
constexpr const char* kSrcGradients =
    "DeepSpeed ZeRO stage 2 / PyTorch FSDP; Tensor.register_post_accumulate_grad_hook (optimizer step in backward)";
constexpr const char* kSrcActivations = "torch.utils.checkpoint (its docstring: trades compute for memory)";
constexpr const char* kSrcKvCache = "vLLM engine arguments (--gpu-memory-utilization, --kv-cache-memory-bytes)";
constexpr const char* kSrcProcess = "NVML's process list (nvidia-smi shows the same)";
constexpr const char* kSrcFraction = "torch.cuda.set_per_process_memory_fraction";
constexpr const char* kSrcLimit = "GPUMEMREC_LIMIT (README, configuration)";
constexpr const char* kSrcNccl = "NCCL user guide, environment variables (NCCL_BUFFSIZE, NCCL_NVLS_ENABLE)";

std::string pct(double share) {
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", share * 100);
  return b;
}

std::string ratio(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1fx", r);
  return b;
}

std::optional<uint64_t> device_total(const Bundle& b, const AdviceInput& in, int32_t device) {
  for (const DeviceAccounting& a : b.metadata.device_accounting)
    if (a.device == device && a.total_bytes) return a.total_bytes;
  if (b.metadata.device_id == device && b.metadata.device_total_bytes) return b.metadata.device_total_bytes;
  const FrameworkDigest* d = in.framework.digest;
  if (d && d->device == device && d->device_total) return d->device_total;
  return std::nullopt;
}

void fragmentation(const AdviceInput& in, std::vector<Advice>* out) {
  const FrameworkDigest* d = in.framework.digest;
  if (!d || d->framework != "torch" || d->request_bytes <= kFragmentationMinRequest) return;
  const uint64_t cached = d->reserved_bytes > d->allocated_bytes ? d->reserved_bytes - d->allocated_bytes : 0;
  if (!(d->largest_free_block < d->request_bytes && d->request_bytes <= cached)) return;
  const FrameworkExtras* x = in.framework.extras;
  if (x && x->expandable_segments && *x->expandable_segments) return;  // already on
  // cudaMallocAsync's pools are the driver's: the native allocator's
  // expandable segments do not apply to them (c10/cuda/CUDAAllocatorConfig).
  if (x && x->allocator_backend == "cudaMallocAsync") return;
  out->push_back({"expandable_segments", int32_t(d->device),
                  "asked " + format_bytes(d->request_bytes) + "; PyTorch holds " + format_bytes(cached) +
                      " reserved but unallocated, its largest free block is " + format_bytes(d->largest_free_block),
                  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation)", kSrcAllocConf});
}

// The role rules: share of the framework's reserved bytes.
void role_share(const FrameworkRoles& r, Role role, const char* rule, const std::string& action, const char* source,
                std::vector<Advice>* out) {
  const uint64_t total = r.total(), bytes = r.of(role);
  if (!total || bytes < kRoleAdviceMinBytes || double(bytes) < kDominantShare * double(total)) return;
  for (Role other : kRoles)
    if (other != role && r.of(other) > bytes) return;  // not the largest
  out->push_back({rule, int32_t(r.device),
                  std::string(role_label(role)) + " " + format_bytes(bytes) + " = " +
                      pct(double(bytes) / double(total)) + " of PyTorch's " + format_bytes(total),
                  action, source});
}

void roles(const AdviceInput& in, std::vector<Advice>* out) {
  const FrameworkRoles* r = in.framework.usable_roles();
  if (!r || r->status != "complete") return;
  const uint64_t w = r->of(Role::kWeights), o = r->of(Role::kOptimizerState);
  if (w && o >= kRoleAdviceMinBytes && double(o) >= kOptimizerOverWeights * double(w) && r->sharding.empty())
    out->push_back({"optimizer_state", int32_t(r->device),
                    "optimizer state " + format_bytes(o) + " is " + ratio(double(o) / double(w)) + " the weights (" +
                        format_bytes(w) + ")",
                    "a fused or 8-bit optimizer (bitsandbytes), or shard the optimizer state (ZeRO-1/2/3, FSDP)",
                    kSrcOptimizer});
  role_share(*r, Role::kGradients, "gradients",
             "shard the gradients (ZeRO-2, FSDP) or step the optimizer in backward "
             "(register_post_accumulate_grad_hook)",
             kSrcGradients, out);
  role_share(*r, Role::kActivations, "activations",
             "activation checkpointing (torch.utils.checkpoint) or a smaller micro-batch", kSrcActivations, out);
  role_share(*r, Role::kKvCache, "kv_cache",
             "a smaller maximum cache length; in vLLM a lower gpu_memory_utilization or --kv-cache-memory-bytes",
             kSrcKvCache, out);
}

void other_processes(const Bundle& b, std::vector<Advice>* out) {
  for (const DeviceAccounting& a : b.metadata.device_accounting) {
    if (!a.other_processes) continue;
    for (const GpuProcessUse& p : *a.other_processes)
      if (p.used_bytes && *p.used_bytes >= kOtherProcessMinBytes)
        out->push_back({"other_process", a.device,
                        "pid " + std::to_string(p.pid) + (p.name.empty() ? "" : " (" + p.name + ")") + " holds " +
                            format_bytes(*p.used_bytes) + " of device " + std::to_string(a.device),
                        "stop or move pid " + std::to_string(p.pid) + ", or give this job another device",
                        kSrcProcess});
  }
}

void caps(const Bundle& b, const AdviceInput& in, std::vector<Advice>* out) {
  const FrameworkExtras* x = in.framework.extras;
  const int32_t fdev = int32_t(in.framework.device());
  if (x && x->memory_fraction && *x->memory_fraction < 1.0) {
    const auto total = device_total(b, in, fdev);
    char f[32];
    std::snprintf(f, sizeof f, "%.3g", *x->memory_fraction);
    out->push_back({"memory_fraction", fdev,
                    std::string("PyTorch's memory fraction is ") + f +
                        (total ? " (a cap of " + format_bytes(uint64_t(*x->memory_fraction * double(*total))) +
                                     " of " + format_bytes(*total) + ")"
                               : std::string()),
                    "raise or remove torch.cuda.set_per_process_memory_fraction", kSrcFraction});
  }
  const int32_t dev = b.metadata.device_id;
  const auto total = device_total(b, in, dev);
  if (in.limit_bytes && (!total || *in.limit_bytes < *total))
    out->push_back({"gpumemrec_limit", dev,
                    "GPUMEMREC_LIMIT" + (in.limit_text.empty() ? "" : "=" + in.limit_text) + " caps device " +
                        std::to_string(dev) + " at " +
                        format_bytes(*in.limit_bytes) + (total ? " of " + format_bytes(*total) : std::string()),
                    "unset GPUMEMREC_LIMIT for the real card (it rehearses a smaller one)", kSrcLimit});
}

void nccl(const Bundle& b, std::vector<Advice>* out) {
  for (const DeviceAccounting& a : b.metadata.device_accounting)
    for (const auto& [lib, bytes] : a.recorded_by_library)
      if (lib.rfind("libnccl", 0) == 0 && bytes >= kNcclMinBytes)
        out->push_back({"nccl", a.device,
                        lib + " holds " + format_bytes(bytes) + " of device " + std::to_string(a.device),
                        "smaller NCCL buffers (NCCL_BUFFSIZE), NVLink SHARP off (NCCL_NVLS_ENABLE=0), fewer "
                        "communicators",
                        kSrcNccl});
}

}  // namespace

void limit_from_environment(const Bundle& b, int32_t device, AdviceInput* in) {
  for (const auto& [name, value] : b.environment.env) {
    if (name != "GPUMEMREC_LIMIT") continue;
    uint64_t limits[kMaxDevices] = {};
    if (!parse_limit(value, limits) || device < 0 || device >= int32_t(kMaxDevices) || !limits[device]) return;
    in->limit_bytes = limits[device];
    in->limit_text = value;
  }
}

std::vector<Advice> advise(const Bundle& b, const AdviceInput& in) {
  std::vector<Advice> out;
  caps(b, in, &out);
  fragmentation(in, &out);
  roles(in, &out);
  other_processes(b, &out);
  nccl(b, &out);
  return out;
}

std::vector<std::string> advice_lines(const std::vector<Advice>& advice) {
  std::vector<std::string> out;
  if (advice.empty()) return out;
  out.push_back("What to try:");
  for (const Advice& a : advice) {
    out.push_back("  - " + a.action);
    out.push_back("      because " + a.evidence + " [" + a.source + "]");
  }
  return out;
}

}  // namespace gpumemrec::model
