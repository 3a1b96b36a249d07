// Memory by role (common/roles.h) and framework.json's roles reader
// (common/framework_roles.h), peak.json's reader (common/peak_json.h): the
// table in the user's terms, exact figures, and bad input that leaves the
// roles out with a clear message.
#include <gtest/gtest.h>

#include <string>

#include "common/peak_json.h"
#include "common/roles.h"

using namespace gpumemrec;
using namespace gpumemrec::model;

namespace {

constexpr uint64_t GiB = uint64_t(1) << 30;

std::string roles_json(const std::string& bytes, const std::string& extra = "") {
  return R"({"framework":"torch","roles":{"status":"complete","device":0,"bytes":)" + bytes + "," +
         R"("tensors":{"weights":3,"gradients":3,"optimizer_state":6,"kv_cache":0,"unknown":0},)" +
         R"("top":[{"role":"weights","owner":"Linear","name":"fc.weight","bytes":1024}],"sharding":null,"notes":[]})" +
         extra + "}";
}

const std::string kBytes =
    R"({"weights":10,"gradients":10,"optimizer_state":20,"kv_cache":0,"activations":5,"allocator_cache":5,)"
    R"("unknown":0})";

FrameworkExtras extras(const std::string& json) { return parse_framework_extras(json.data(), json.size()); }

Bundle accounted(int32_t device) {
  Bundle b;
  DeviceAccounting a;
  a.device = device;
  a.total_bytes = 80 * GiB;
  a.free_bytes = GiB;
  a.recorded_live_bytes = 52 * GiB;
  a.recorded_by_library = {{"libc10_cuda.so", 50 * GiB}, {"libnccl.so.2", 2 * GiB}};
  a.process_unrecorded_bytes = int64_t(GiB);
  a.other_processes = std::vector<GpuProcessUse>{{777, "other", 20 * GiB, false}};
  a.unaccounted_bytes = 6 * int64_t(GiB);
  b.metadata.device_accounting.push_back(a);
  return b;
}

std::vector<std::pair<std::string, std::optional<int64_t>>> rows(const RoleTable& t) {
  std::vector<std::pair<std::string, std::optional<int64_t>>> out;
  for (const RoleRow& r : t.rows) out.emplace_back(r.name.empty() ? r.role : r.role + " " + r.name, r.bytes);
  return out;
}

TEST(FrameworkRoles, ReadsEveryField) {
  const FrameworkExtras x = extras(roles_json(kBytes, R"(,"memory_fraction":0.5,"expandable_segments":true)"));
  ASSERT_TRUE(x.roles) << x.problem;
  EXPECT_EQ(x.problem, "");
  EXPECT_EQ(x.roles->of(Role::kOptimizerState), 20u);
  EXPECT_EQ(x.roles->total(), 50u);
  EXPECT_EQ(*x.roles->tensors[size_t(Role::kOptimizerState)], 6u);
  EXPECT_FALSE(x.roles->tensors[size_t(Role::kActivations)]);
  ASSERT_EQ(x.roles->top.size(), 1u);
  EXPECT_EQ(x.roles->top[0].name, "fc.weight");
  EXPECT_EQ(*x.memory_fraction, 0.5);
  EXPECT_TRUE(*x.expandable_segments);
}

TEST(FrameworkRoles, BadRolesAreLeftOutWithTheReason) {
  const std::pair<std::string, std::string> cases[] = {
      {roles_json(R"({"weights":-1})"), "roles.bytes.weights is not a non-negative integer"},
      {roles_json(R"({"weights":"1"})"), "roles.bytes.weights is not a number"},
      {roles_json(R"({"weights":1.5})"), "roles.bytes.weights is not a non-negative integer"},
      {roles_json(R"({"weights":1,"gradients":1,"optimizer_state":1,"kv_cache":1,"activations":1,)"
                  R"("allocator_cache":1})"),
       "roles.bytes.unknown is missing"},
      {roles_json("[]"), "roles.bytes is missing or not an object"},
      {R"({"framework":"torch","roles":"all"})", "roles is not an object"},
      {R"({"framework":"torch","roles":{"bytes":{}}})", "roles.status is not complete, partial or failed"},
  };
  for (const auto& [json, why] : cases) {
    const FrameworkExtras x = extras(json);
    EXPECT_FALSE(x.roles) << json;
    EXPECT_EQ(x.problem, why) << json;
  }
  EXPECT_EQ(extras(R"({"framework":"torch","memory_fraction":-1})").problem,
            "memory_fraction is not a positive number");
  EXPECT_EQ(extras(R"({"framework":"torch","torch_peak_allocated":"x"})").problem,
            "torch_peak_allocated is not a number");
  EXPECT_EQ(extras("{nope").problem, "");  // the digest's own reader says that
  EXPECT_FALSE(extras(R"({"framework":"torch","roles":null})").roles);
}

TEST(RoleTable, NoDigestSaysOnlyWhatTheDriverTells) {
  const Bundle b = accounted(0);
  const std::vector<RoleTable> t = role_tables(b, {});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].roles_from, "driver only");
  using R = std::vector<std::pair<std::string, std::optional<int64_t>>>;
  EXPECT_EQ(rows(t[0]), (R{{"library libc10_cuda.so", 50 * GiB}, {"library libnccl.so.2", 2 * GiB},
                           {"context", GiB}, {"other_process pid 777 other", 20 * GiB}, {"free", GiB},
                           {"unaccounted", 6 * GiB}}));
  ASSERT_EQ(t[0].notes.size(), 1u);
  EXPECT_NE(t[0].notes[0].find("roles unknown: no framework digest"), std::string::npos);
  EXPECT_TRUE(role_tables(Bundle(), {}).empty());
}

TEST(RoleTable, DigestWithoutRolesSplitsAllocatedAndCache) {
  const Bundle b = accounted(0);
  FrameworkDigest d;
  d.framework = "torch";
  d.device = 0;
  d.reserved_bytes = 50 * GiB;
  d.allocated_bytes = 42 * GiB;
  const std::vector<RoleTable> t = role_tables(b, {&d, nullptr});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].roles_from, "framework digest");
  ASSERT_GE(t[0].rows.size(), 3u);
  EXPECT_EQ(rows(t[0])[0], std::make_pair(std::string("framework_allocated"), std::optional<int64_t>(42 * GiB)));
  EXPECT_EQ(rows(t[0])[1], std::make_pair(std::string("allocator_cache"), std::optional<int64_t>(8 * GiB)));
  EXPECT_EQ(rows(t[0])[2].first, "library libnccl.so.2");  // PyTorch's own segments are not a library row
  Bundle nostack = accounted(0);  // bytes with no stack may be PyTorch's: said, still listed
  nostack.metadata.device_accounting[0].recorded_by_library.push_back({"(no stack)", GiB});
  const std::vector<RoleTable> u = role_tables(nostack, {&d, nullptr});
  EXPECT_EQ(rows(u[0])[3], std::make_pair(std::string("library (no stack)"), std::optional<int64_t>(GiB)));
  EXPECT_EQ(u[0].notes[1],
            "1.00 GiB recorded under (no stack) may be PyTorch's own segments, which its figures above count too");
}

TEST(RoleTable, RolesThenTheDriverLevel) {
  const Bundle b = accounted(0);
  FrameworkDigest d;
  d.framework = "torch";
  d.device = 0;
  d.reserved_bytes = 51;  // the roles add up to 50: said, not corrected
  const FrameworkExtras x = extras(roles_json(kBytes));
  const std::vector<RoleTable> t = role_tables(b, {&d, &x});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].roles_from, "framework roles (complete)");
  ASSERT_EQ(t[0].rows.size(), 7u + 5u);
  for (size_t i = 0; i < kRoleCount; ++i) EXPECT_EQ(t[0].rows[i].role, role_key(kRoles[i]));
  EXPECT_EQ(*t[0].rows[2].bytes, 20);
  EXPECT_EQ(t[0].rows[7].name, "libnccl.so.2");
  EXPECT_EQ(t[0].notes[0], "the roles add up to 50 B, PyTorch reserved 51 B");
  const std::vector<std::string> lines = role_lines(t[0]);
  EXPECT_EQ(lines[0], "Memory by role on device 0 (of 80.00 GiB), framework roles (complete):");
  EXPECT_EQ(lines[3], "          20 B  [framework] optimizer state");
}

TEST(RoleTable, RolesOfAnotherDeviceStayThere) {
  const Bundle b = accounted(0);
  FrameworkDigest d;
  d.framework = "torch";
  d.device = 1;
  const FrameworkExtras x = extras(roles_json(kBytes));  // roles.device 0 wins over the digest's 1
  EXPECT_EQ((FrameworkFacts{&d, &x}.device()), 0);
  const FrameworkExtras failed = extras(R"({"roles":{"status":"failed","device":0,"bytes":)" + kBytes + "}}");
  const std::vector<RoleTable> t = role_tables(b, {&d, &failed});  // failed: the digest's device 1
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].roles_from, "driver only");
  EXPECT_EQ(t[1].device, 1);
  EXPECT_EQ(t[1].roles_from, "framework digest");
  EXPECT_EQ(t[1].notes[0], "roles unknown: the framework's walk failed");
}

TEST(PeakJson, ReadsAndRefuses) {
  const std::string good =
      R"({"schema":1,"devices":[{"device":0,"peak_bytes":100,"peak_time_ns":5,"peak_seq":7,"exact":false,)"
      R"("why_inexact":"ring","live_now_bytes":60,"events_replayed":9,)"
      R"("sites":[{"stack_id":3,"bytes":40,"count":2}]}]})";
  const PeakInfo p = parse_peak(good.data(), good.size());
  ASSERT_TRUE(p.present) << p.problem;
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].peak_bytes, 100u);
  EXPECT_EQ(p.devices[0].why_inexact, "ring");
  EXPECT_FALSE(p.devices[0].exact);
  ASSERT_EQ(p.devices[0].sites.size(), 1u);
  EXPECT_EQ(p.devices[0].sites[0].stack_id, 3u);
  const std::pair<std::string, std::string> bad[] = {
      {"[]", "peak.json: not a JSON object with a devices array"},
      {R"({"devices":[{"device":0}]})", "peak.json: peak_bytes is missing"},
      {R"({"devices":[{"device":"0","peak_bytes":1}]})", "peak.json: device is missing or not an integer"},
      {R"({"devices":[{"device":0,"peak_bytes":1,"sites":[{"stack_id":1,"bytes":-2,"count":1}]}]})",
       "peak.json: bytes is not a non-negative integer"},
  };
  for (const auto& [json, why] : bad) {
    const PeakInfo q = parse_peak(json.data(), json.size());
    EXPECT_FALSE(q.present) << json;
    EXPECT_TRUE(q.devices.empty()) << json;
    EXPECT_EQ(q.problem, why) << json;
  }
  EXPECT_FALSE(read_peak("/nonexistent-dir").present);
  EXPECT_EQ(read_peak("/nonexistent-dir").problem, "");
}

TEST(PeakJson, ReadsTheStretchLibrariesGapAndRoles) {
  const std::string json =
      R"({"schema":1,"devices":[{"device":0,"peak_bytes":100,"peak_time_ns":5,"peak_seq":7,"peak_until_ns":9,)"
      R"("exact":false,"why_inexact":"ring","sites":[],)"
      R"("by_library":[{"library":"libc10_cuda.so","bytes":90,"count":2},{"library":null,"bytes":10,"count":1}],)"
      R"("after_gap":{"gaps":2,"lost_events":30,"from_seq":40,"from_time_ns":4,"exact":true,"why_inexact":null,)"
      R"("start_bytes":20,"peak_bytes":100,"peak_time_ns":5,"peak_seq":7,"peak_until_ns":null,)"
      R"("sites":[{"stack_id":3,"bytes":100,"count":1}],"by_library":[]},)"
      R"("roles":{"known":true,"why_not_known":null,"framework":"torch","walk":"exit","walk_status":"complete",)"
      R"("walk_time_ns":6,"bytes":{"weights":60,"outside_framework":40}}}]})";
  const PeakInfo p = parse_peak(json.data(), json.size());
  ASSERT_TRUE(p.present) << p.problem;
  EXPECT_EQ(p.problem, "");
  const PeakDevice& d = p.devices.at(0);
  EXPECT_EQ(d.peak_until_ns, std::optional<uint64_t>(9));
  ASSERT_EQ(d.by_library.size(), 2u);
  EXPECT_EQ(d.by_library[0].library, "libc10_cuda.so");
  EXPECT_EQ(d.by_library[1].library, "");
  ASSERT_TRUE(d.after_gap.has_value());
  EXPECT_TRUE(d.after_gap->exact);
  EXPECT_EQ(d.after_gap->from_time_ns, 4u);
  EXPECT_EQ(d.after_gap->start_bytes, 20u);
  EXPECT_FALSE(d.after_gap->peak_until_ns.has_value());
  EXPECT_EQ(d.after_gap->sites.at(0).stack_id, 3u);
  ASSERT_TRUE(d.roles.has_value());
  EXPECT_TRUE(d.roles->known);
  EXPECT_EQ(d.roles->walk, "exit");
  EXPECT_EQ(d.roles->bytes, (std::vector<std::pair<std::string, uint64_t>>{{"weights", 60}, {"outside_framework", 40}}));
}

TEST(PeakJson, ABadGapOrRolesIsLeftOutAndSaid) {
  const std::string json =
      R"({"devices":[{"device":0,"peak_bytes":1,"after_gap":[],)"
      R"("roles":{"known":true,"bytes":{"weights":-1}}}]})";
  const PeakInfo p = parse_peak(json.data(), json.size());
  ASSERT_TRUE(p.present);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].peak_bytes, 1u) << "the rest is read";
  EXPECT_FALSE(p.devices[0].after_gap.has_value());
  EXPECT_FALSE(p.devices[0].roles.has_value());
  EXPECT_EQ(p.problem, "peak.json: after_gap is not an object (left out)");
}

}  // namespace
