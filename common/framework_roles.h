// framework.json's additions beside the digest (docs/bundle-format.md,
// "framework.json"): `roles` (the framework's tensors by role, from the
// Python hook's object walk), `memory_fraction`, `expandable_segments`, and
// for an exit bundle `at: "exit"` with `torch_peak_allocated` /
// `torch_peak_reserved`. One reader for the shim (summary.txt's "What to
// try") and the tools. Every key is optional; a present key of the wrong
// type, a negative size or a missing role is said in `problem`, and the
// roles are then left out whole (never half-read figures).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumemrec {

// The roles of `roles.bytes`, in the order every tool lists them.
enum class Role { kWeights, kGradients, kOptimizerState, kKvCache, kActivations, kAllocatorCache, kUnknown };
constexpr size_t kRoleCount = 7;
constexpr Role kRoles[kRoleCount] = {Role::kWeights,     Role::kGradients,      Role::kOptimizerState, Role::kKvCache,
                                     Role::kActivations, Role::kAllocatorCache, Role::kUnknown};

const char* role_key(Role r);    // "optimizer_state": the JSON key
const char* role_label(Role r);  // "optimizer state": what people read

struct RoleTop {
  std::string role, owner, name;
  uint64_t bytes = 0;
};

struct FrameworkRoles {
  std::string status;  // complete, partial, failed
  double elapsed_ms = 0;
  uint64_t objects = 0;
  int64_t budget_ms = 0;
  int64_t device = -1;
  std::array<uint64_t, kRoleCount> bytes{};
  // `tensors` has no allocator_cache/activations: nullopt for those.
  std::array<std::optional<uint64_t>, kRoleCount> tensors{};
  std::vector<RoleTop> top;
  std::string sharding;  // "" = null
  std::vector<std::string> notes;

  uint64_t of(Role r) const { return bytes[size_t(r)]; }
  uint64_t total() const;
};

struct FrameworkExtras {
  std::optional<FrameworkRoles> roles;
  std::string problem;  // what could not be read, "" when all was well
  std::optional<double> memory_fraction;
  std::optional<bool> expandable_segments;
  std::string allocator_backend;  // "native", "cudaMallocAsync"; "" = not said
  std::string at;  // "exit" for an exit digest, else ""
  std::optional<uint64_t> torch_peak_allocated, torch_peak_reserved;
  // CLOCK_MONOTONIC (Python's time.monotonic_ns) just before the allocator
  // snapshot and once the walk was done: the walk's moment, for the roles
  // at the peak (peak.json).
  std::optional<uint64_t> snapshot_mono_ns, done_mono_ns;
};

// Reads what it can of `json` (the whole framework.json); never fails.
FrameworkExtras parse_framework_extras(const char* json, size_t len);

}  // namespace gpumemrec
