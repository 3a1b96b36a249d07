// "What to try" (common/advice.h): every rule fires at its threshold and not
// just below it, and bundles without the evidence get no advice (no digest,
// balanced roles, a tiny request).
#include <gtest/gtest.h>

#include <string>

#include "common/advice.h"

using namespace gpumemrec;
using namespace gpumemrec::model;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20, GiB = uint64_t(1) << 30;

std::vector<std::string> rules(const std::vector<Advice>& a) {
  std::vector<std::string> out;
  for (const Advice& x : a) out.push_back(x.rule);
  return out;
}

// A torch digest that fragmentation does not call for.
FrameworkDigest torch_digest() {
  FrameworkDigest d;
  d.framework = "torch";
  d.device = 0;
  d.request_bytes = 2 * GiB;
  d.reserved_bytes = 60 * GiB;
  d.allocated_bytes = 59 * GiB;
  d.largest_free_block = GiB / 2;
  return d;
}

// Roles with every share under the thresholds (12 each of 60).
FrameworkRoles balanced() {
  FrameworkRoles r;
  r.status = "complete";
  r.device = 0;
  for (Role role : {Role::kWeights, Role::kGradients, Role::kOptimizerState, Role::kActivations, Role::kAllocatorCache})
    r.bytes[size_t(role)] = 12 * GiB;
  return r;
}

std::vector<std::string> advise_roles(const FrameworkRoles& r, const FrameworkDigest* d = nullptr) {
  FrameworkExtras x;
  x.roles = r;
  const FrameworkDigest base = torch_digest();
  AdviceInput in;
  in.framework = {d ? d : &base, &x};
  return rules(advise(Bundle(), in));
}

TEST(Advice, NoEvidenceNoAdvice) {
  EXPECT_TRUE(advise(Bundle(), AdviceInput()).empty());                  // no digest, no accounting
  EXPECT_TRUE(advise_roles(balanced()).empty());                          // balanced roles
  FrameworkDigest tiny = torch_digest();                                  // a tiny request, fragmented cache
  tiny.request_bytes = 512 * 1024;
  tiny.largest_free_block = 0;
  tiny.allocated_bytes = 50 * GiB;
  EXPECT_TRUE(advise_roles(balanced(), &tiny).empty());
  EXPECT_TRUE(advice_lines({}).empty());
}

TEST(Advice, ExpandableSegmentsAtItsEdges) {
  FrameworkDigest d = torch_digest();
  d.request_bytes = kFragmentationMinRequest + 512;
  d.largest_free_block = d.request_bytes - 512;
  d.allocated_bytes = d.reserved_bytes - d.request_bytes;  // cached free == request
  FrameworkExtras x;
  AdviceInput in;
  in.framework = {&d, &x};
  ASSERT_EQ(rules(advise(Bundle(), in)), std::vector<std::string>{"expandable_segments"});
  const Advice a = advise(Bundle(), in)[0];
  EXPECT_EQ(a.action, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation)");
  EXPECT_EQ(a.evidence, "asked 1.00 MiB; PyTorch holds 1.00 MiB reserved but unallocated, its largest free block is "
                        "1.00 MiB");
  d.allocated_bytes += 1;  // cached free one byte short of the request
  EXPECT_TRUE(advise(Bundle(), in).empty());
  d.allocated_bytes -= 1;
  d.largest_free_block = d.request_bytes;  // a block fits: not fragmentation
  EXPECT_TRUE(advise(Bundle(), in).empty());
  d.largest_free_block = 0;
  d.request_bytes = kFragmentationMinRequest;  // the small pool's largest request
  d.allocated_bytes = d.reserved_bytes - GiB;
  EXPECT_TRUE(advise(Bundle(), in).empty());
  d.request_bytes = 2 * MiB;
  EXPECT_EQ(advise(Bundle(), in).size(), 1u);
  x.expandable_segments = true;  // already on
  EXPECT_TRUE(advise(Bundle(), in).empty());
  x.expandable_segments = false;
  x.allocator_backend = "cudaMallocAsync";  // the knob is the native allocator's
  EXPECT_TRUE(advise(Bundle(), in).empty());
  x.allocator_backend = "native";
  EXPECT_EQ(advise(Bundle(), in).size(), 1u);
  d.framework = "jax";
  x.expandable_segments.reset();
  EXPECT_TRUE(advise(Bundle(), in).empty());
}

TEST(Advice, OptimizerStateWellAboveTheWeights) {
  FrameworkRoles r = balanced();
  r.bytes[size_t(Role::kWeights)] = 8 * GiB;
  r.bytes[size_t(Role::kOptimizerState)] = 12 * GiB;  // exactly 1.5x
  EXPECT_EQ(advise_roles(r), std::vector<std::string>{"optimizer_state"});
  r.bytes[size_t(Role::kOptimizerState)] = 12 * GiB - 1;
  EXPECT_TRUE(advise_roles(r).empty());
  r.bytes[size_t(Role::kOptimizerState)] = 12 * GiB;
  r.sharding = "fsdp";  // already sharded
  EXPECT_TRUE(advise_roles(r).empty());
  r.sharding.clear();
  r.status = "partial";  // a partial walk may have missed weights
  EXPECT_TRUE(advise_roles(r).empty());
  FrameworkRoles small;
  small.status = "complete";
  small.bytes[size_t(Role::kWeights)] = MiB;
  small.bytes[size_t(Role::kOptimizerState)] = kRoleAdviceMinBytes - 1;  // 255x, but too small to matter
  EXPECT_TRUE(advise_roles(small).empty());
}

TEST(Advice, ARoleDominatesAtItsShare) {
  const std::pair<Role, const char*> cases[] = {
      {Role::kGradients, "gradients"}, {Role::kActivations, "activations"}, {Role::kKvCache, "kv_cache"}};
  for (const auto& [role, rule] : cases) {
    FrameworkRoles r;
    r.status = "complete";
    r.bytes[size_t(Role::kWeights)] = 30 * GiB;
    r.bytes[size_t(Role::kOptimizerState)] = 30 * GiB;
    r.bytes[size_t(role)] = 40 * GiB;  // 40% of 100 and the largest
    EXPECT_EQ(advise_roles(r), std::vector<std::string>{rule}) << rule;
    r.bytes[size_t(role)] = 40 * GiB - 1;  // just under 40%
    EXPECT_TRUE(advise_roles(r).empty()) << rule;
    r.bytes[size_t(role)] = 45 * GiB;
    r.bytes[size_t(Role::kUnknown)] = 50 * GiB;  // 45 of 155: under 40%, and not the largest
    EXPECT_TRUE(advise_roles(r).empty()) << rule;
  }
}

Bundle with_accounting(uint64_t other_used, uint64_t nccl) {
  Bundle b;
  DeviceAccounting a;
  a.device = 1;
  a.total_bytes = 80 * GiB;
  a.recorded_by_library = {{"libc10_cuda.so", 40 * GiB}, {"libnccl.so.2.21.5", nccl}};
  a.other_processes =
      std::vector<GpuProcessUse>{{4242, "python3", other_used, false}, {5151, "x", std::nullopt, false}};
  b.metadata.device_accounting.push_back(a);
  return b;
}

TEST(Advice, OtherProcessAndNccl) {
  std::vector<Advice> a = advise(with_accounting(kOtherProcessMinBytes, kNcclMinBytes), AdviceInput());
  ASSERT_EQ(rules(a), (std::vector<std::string>{"other_process", "nccl"}));
  EXPECT_EQ(a[0].evidence, "pid 4242 (python3) holds 1.00 GiB of device 1");
  EXPECT_EQ(a[0].action, "stop or move pid 4242, or give this job another device");
  EXPECT_EQ(a[0].device, 1);
  EXPECT_EQ(a[1].evidence, "libnccl.so.2.21.5 holds 1.00 GiB of device 1");
  EXPECT_NE(a[1].action.find("NCCL_BUFFSIZE"), std::string::npos);
  EXPECT_TRUE(advise(with_accounting(kOtherProcessMinBytes - 1, kNcclMinBytes - 1), AdviceInput()).empty());
}

TEST(Advice, MemoryFractionAndLimit) {
  Bundle b;
  b.metadata.device_id = 0;
  b.metadata.device_total_bytes = 80 * GiB;
  FrameworkDigest d = torch_digest();
  FrameworkExtras x;
  x.memory_fraction = 1.0;  // no cap
  AdviceInput in;
  in.framework = {&d, &x};
  EXPECT_TRUE(advise(b, in).empty());
  x.memory_fraction = 0.5;
  std::vector<Advice> a = advise(b, in);
  ASSERT_EQ(rules(a), std::vector<std::string>{"memory_fraction"});
  EXPECT_EQ(a[0].evidence, "PyTorch's memory fraction is 0.5 (a cap of 40.00 GiB of 80.00 GiB)");
  x.memory_fraction.reset();
  b.environment.env = {{"GPUMEMREC_LIMIT", "0:24GiB,1:90GiB"}};
  limit_from_environment(b, 0, &in);
  a = advise(b, in);
  ASSERT_EQ(rules(a), std::vector<std::string>{"gpumemrec_limit"});
  EXPECT_EQ(a[0].evidence, "GPUMEMREC_LIMIT=0:24GiB,1:90GiB caps device 0 at 24.00 GiB of 80.00 GiB");
  AdviceInput none;
  limit_from_environment(b, 2, &none);  // no limit for device 2
  EXPECT_FALSE(none.limit_bytes);
  in.limit_bytes = 80 * GiB;  // the card's own size: no cap
  EXPECT_TRUE(advise(b, in).empty());
  b.environment.env = {{"GPUMEMREC_LIMIT", "lots"}};  // unparsable: ignored
  AdviceInput bad;
  limit_from_environment(b, 0, &bad);
  EXPECT_FALSE(bad.limit_bytes);
}

TEST(Advice, Lines) {
  const std::vector<std::string> l = advice_lines({{"nccl", 0, "libnccl.so.2 holds 2.00 GiB of device 0", "smaller",
                                                    "NCCL user guide"}});
  EXPECT_EQ(l, (std::vector<std::string>{"What to try:", "  - smaller",
                                         "      because libnccl.so.2 holds 2.00 GiB of device 0 [NCCL user guide]"}));
}

}  // namespace
