// "What to try": a short list of changes, each led by the figure of the
// bundle that calls for it and naming the documented knob
// (docs/advice.md lists every rule, its threshold and the source of the
// knob). No figure, no advice: a bundle without the evidence gets none.
// Computed from the bundle model and the framework's digest, so the shim
// (summary.txt) and every tool say the same.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "common/roles.h"

namespace gpumemrec::model {

// Thresholds (docs/advice.md).
// Fragmentation: a request of at most c10's kSmallSize comes from the small
// pool's 2 MiB blocks; a failure that small says the card is full.
constexpr uint64_t kFragmentationMinRequest = uint64_t(1) << 20;
// Optimizer state "well above" the weights: Adam keeps two moments per
// parameter (2x fp32 weights); 1.5x is past one moment's worth.
constexpr double kOptimizerOverWeights = 1.5;
// A role "dominates" at this share of the framework's reserved bytes...
constexpr double kDominantShare = 0.4;
// ...and only when it is big enough to matter.
constexpr uint64_t kRoleAdviceMinBytes = uint64_t(256) << 20;
// Another process, or NCCL, worth naming.
constexpr uint64_t kOtherProcessMinBytes = uint64_t(1) << 30;
constexpr uint64_t kNcclMinBytes = uint64_t(1) << 30;

struct Advice {
  std::string rule;      // expandable_segments, optimizer_state, gradients, activations, kv_cache,
                         // other_process, memory_fraction, gpumemrec_limit, nccl
  int32_t device = -1;
  std::string evidence;  // the figures that call for it
  std::string action;    // what to try: the knob
  std::string source;    // where the knob is documented
};

struct AdviceInput {
  FrameworkFacts framework;
  // GPUMEMREC_LIMIT for the failing device (nullopt: not set), and the
  // variable's text ("" when not known).
  std::optional<uint64_t> limit_bytes;
  std::string limit_text;
};

// GPUMEMREC_LIMIT as environment.json recorded it, for `device`.
void limit_from_environment(const Bundle& b, int32_t device, AdviceInput* in);

std::vector<Advice> advise(const Bundle& b, const AdviceInput& in);

// "What to try:" then two lines per advice (the action; "because: ...").
// Empty when there is none.
std::vector<std::string> advice_lines(const std::vector<Advice>& advice);

}  // namespace gpumemrec::model
