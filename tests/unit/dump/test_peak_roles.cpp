// Memory by role at the peak (shim/dump/capture/peak_roles.h): a walk inside
// the stretch the peak held is a moment of the peak; any other is not.
#include <gtest/gtest.h>

#include <string>

#include "shim/dump/capture/peak_roles.h"

using namespace gpumemrec;

namespace {

constexpr uint64_t kOffset = 1000000;  // wall = monotonic + kOffset

// A device whose peak of 1000 bytes held from 100 to 200 (monotonic), cut at 500.
struct Case {
  FrozenState frozen;
  PeakReport rep;
  Case(uint64_t until = 200 + kOffset) {
    frozen.cut_ns = 500;
    frozen.wall_offset_ns = int64_t(kOffset);
    PeakDevice p;
    p.device = 0;
    p.peak_bytes = 1000;
    p.peak_time_ns = 100 + kOffset;
    p.until_ns = until;
    p.stretch_known = true;
    rep.devices.push_back(p);
  }
  const PeakRoles& roles() const { return *rep.devices[0].roles; }
};

std::string digest(uint64_t w0, uint64_t w1, const char* status = "complete", int device = 0) {
  return std::string("{\"framework\":\"torch\",\"device\":") + std::to_string(device) +
         ",\"reserved_bytes\":900,\"at\":\"exit\",\"snapshot_mono_ns\":" + std::to_string(w0) +
         ",\"done_mono_ns\":" + std::to_string(w1) + ",\"roles\":{\"status\":\"" + status +
         "\",\"bytes\":{\"weights\":300,\"gradients\":100,\"optimizer_state\":200,\"kv_cache\":0,"
         "\"activations\":50,\"allocator_cache\":250,\"unknown\":0}}}";
}

std::shared_ptr<FrameworkReport> report(const std::string& json) {
  std::string why;
  auto r = framework_report_from_digest(json.data(), json.size(), 1 << 20, &why);
  EXPECT_TRUE(r) << why;
  return r;
}

}  // namespace

TEST(PeakRoles, AWalkInsideTheStretchIsAMomentOfThePeak) {
  Case c;
  add_peak_roles(report(digest(120, 150)).get(), c.frozen, &c.rep);
  const PeakRoles& r = c.roles();
  ASSERT_TRUE(r.known) << r.why_not_known;
  EXPECT_EQ(r.walk, "exit");
  EXPECT_EQ(r.framework, "torch");
  EXPECT_EQ(r.walk_time_ns, 120 + kOffset);
  ASSERT_EQ(r.bytes.size(), 8u);
  EXPECT_EQ(r.bytes[0], (std::pair<std::string, uint64_t>{"weights", 300}));
  EXPECT_EQ(r.bytes[2], (std::pair<std::string, uint64_t>{"optimizer_state", 200}));
  EXPECT_EQ(r.bytes[7], (std::pair<std::string, uint64_t>{"outside_framework", 100}));
  uint64_t sum = 0;
  for (const auto& b : r.bytes) sum += b.second;
  EXPECT_EQ(sum, 1000u) << "the roles add up to the peak";
}

TEST(PeakRoles, APeakStillHeldAtTheCutTakesAnyLaterWalk) {
  Case c(0);
  add_peak_roles(report(digest(400, 450)).get(), c.frozen, &c.rep);
  EXPECT_TRUE(c.roles().known) << c.roles().why_not_known;
}

TEST(PeakRoles, AnyOtherWalkSaysWhyItIsNotKnown) {
  const struct {
    uint64_t w0, w1;
    const char* status;
    const char* why;
  } cases[] = {{50, 80, "complete", "before the peak"},
               {150, 200, "complete", "after the peak ended"},
               {400, 600, "complete", "after the bundle's cut"},
               {120, 150, "failed", "failed"}};
  for (const auto& k : cases) {
    Case c;
    add_peak_roles(report(digest(k.w0, k.w1, k.status)).get(), c.frozen, &c.rep);
    EXPECT_FALSE(c.roles().known);
    EXPECT_NE(c.roles().why_not_known.find(k.why), std::string::npos) << c.roles().why_not_known;
    EXPECT_TRUE(c.roles().bytes.empty());
  }
}

TEST(PeakRoles, AStretchNotKnownOrRolesOverThePeakAreNotKnown) {
  Case c;
  c.rep.devices[0].stretch_known = false;
  add_peak_roles(report(digest(120, 150)).get(), c.frozen, &c.rep);
  EXPECT_NE(c.roles().why_not_known.find("not known exactly"), std::string::npos);
  Case d;
  d.rep.devices[0].peak_bytes = 800;  // the walk's roles hold 900
  add_peak_roles(report(digest(120, 150)).get(), d.frozen, &d.rep);
  EXPECT_NE(d.roles().why_not_known.find("more than the peak"), std::string::npos);
}

TEST(PeakRoles, NoWalkMomentOrAnotherDeviceLeavesNoRoles) {
  Case c;
  const std::string old = "{\"framework\":\"torch\",\"device\":0,\"roles\":{\"status\":\"complete\",\"bytes\":{"
                          "\"weights\":1,\"gradients\":0,\"optimizer_state\":0,\"kv_cache\":0,\"activations\":0,"
                          "\"allocator_cache\":0,\"unknown\":0}}}";
  add_peak_roles(report(old).get(), c.frozen, &c.rep);
  EXPECT_FALSE(c.rep.devices[0].roles.has_value()) << "a hook that does not say when it walked";
  add_peak_roles(report(digest(120, 150, "complete", 3)).get(), c.frozen, &c.rep);
  EXPECT_FALSE(c.rep.devices[0].roles.has_value());
  add_peak_roles(nullptr, c.frozen, &c.rep);
  EXPECT_FALSE(c.rep.devices[0].roles.has_value());
}
