// The start-up warning when one bundle of the configured ring cannot fit
// GPUMEMREC_MAX_TOTAL_MB (shim/dump/place/retention_check.h).
#include "shim/dump/place/retention_check.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "shim/dump/write/snapshot_pickle.h"

using namespace gpumemrec;

namespace {

Config config(uint64_t ring, uint64_t max_total_mb) {
  Config c;
  c.ring_events = ring;
  c.max_total_mb = max_total_mb;
  return c;
}

// The number that follows `key` in the message (0 when absent).
uint64_t number_after(const std::string& msg, const std::string& key) {
  size_t at = msg.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(msg.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace

TEST(RetentionCheck, DefaultsFitWithoutAWord) {
  Config c;  // 65536 events, 256 MiB
  EXPECT_LE(estimate_bundle(c.ring_events).total(), c.max_total_mb << 20);
  EXPECT_EQ(retention_warning(c), "");
}

TEST(RetentionCheck, NoCapNoWarning) {
  EXPECT_EQ(retention_warning(config(uint64_t(1) << 25, 0)), "");  // the largest ring, MAX_TOTAL_MB=0
  EXPECT_EQ(largest_fitting_ring(0), UINT64_MAX);
}

// The case: a 1M-event ring against the default 256 MiB cap.
TEST(RetentionCheck, MillionEventRingAgainstTheDefaultCap) {
  const Config c = config(1048576, 256);
  const std::string w = retention_warning(c);
  ASSERT_NE(w, "");
  EXPECT_EQ(w.find("GPUMEMREC_RING_EVENTS=1048576 makes bundles of about "), 0u) << w;
  EXPECT_NE(w.find("GPUMEMREC_MAX_TOTAL_MB=256"), std::string::npos) << w;
  EXPECT_EQ(w.find("snapshot.pickle"), std::string::npos) << w;  // not written above kSnapshotMaxEvents
  // What it tells to do is enough: the suggested cap holds the estimate, the
  // suggested ring fits the present cap, and is a power of two.
  const uint64_t mb = number_after(w, "set GPUMEMREC_MAX_TOTAL_MB=");
  EXPECT_GE(mb << 20, estimate_bundle(c.ring_events).total()) << w;
  EXPECT_EQ(retention_warning(config(c.ring_events, mb)), "");
  const uint64_t ring = number_after(w, "or GPUMEMREC_RING_EVENTS=");
  ASSERT_GE(ring, 16u) << w;
  EXPECT_EQ(ring & (ring - 1), 0u) << ring;
  EXPECT_EQ(retention_warning(config(ring, 256)), "");
  EXPECT_NE(retention_warning(config(ring * 2, 256)), "");
}

// GPUMEMREC_COMPRESS=zstd: the warning names it, and with it set a 1M ring
// fits the default cap (8x assumed); a ring too big even so still warns.
TEST(RetentionCheck, CompressedBundles) {
  Config c = config(1048576, 256);
  EXPECT_NE(retention_warning(c).find("or GPUMEMREC_COMPRESS=zstd"), std::string::npos);
  c.compress_zstd = true;
  EXPECT_EQ(retention_warning(c), "");
  c.ring_events = uint64_t(1) << 25;
  const std::string w = retention_warning(c);
  EXPECT_EQ(w.find("GPUMEMREC_RING_EVENTS=33554432 makes bundles of about "), 0u) << w;
  EXPECT_EQ(w.find("GPUMEMREC_COMPRESS"), std::string::npos) << w;
}

// A ring with snapshot.pickle counts it; the message says so.
TEST(RetentionCheck, PickleCountedUpToItsLimit) {
  const BundleEstimate with = estimate_bundle(kSnapshotMaxEvents);
  const BundleEstimate without = estimate_bundle(kSnapshotMaxEvents + 1);
  EXPECT_GT(with.pickle, 0u);
  EXPECT_EQ(without.pickle, 0u);
  const uint64_t tiny = (with.total() >> 20) - 1;
  const std::string w = retention_warning(config(kSnapshotMaxEvents, tiny));
  EXPECT_NE(w.find("snapshot.pickle"), std::string::npos) << w;
}

// largest_fitting_ring is exact at every cap, across the pickle threshold
// (where a bigger ring without snapshot.pickle can fit when a smaller one
// with it does not), and never overflows.
TEST(RetentionCheck, LargestFittingRingIsExact) {
  for (uint64_t mb = 1; mb <= 4096; mb += (mb < 200 ? 1 : 7)) {
    const uint64_t cap = mb << 20;
    const uint64_t f = largest_fitting_ring(mb);
    if (f == 0) {
      EXPECT_GT(estimate_bundle(1).total(), cap) << mb;
      continue;
    }
    EXPECT_LE(estimate_bundle(f).total(), cap) << mb;
    for (uint64_t more : {f + 1, f + 2, kSnapshotMaxEvents + 1, 2 * f + 1}) {
      if (more > f) {
        EXPECT_GT(estimate_bundle(more).total(), cap) << mb << " " << more;
      }
    }
  }
  EXPECT_EQ(largest_fitting_ring(UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(retention_warning(config(uint64_t(1) << 25, UINT64_MAX)), "");
  EXPECT_NE(retention_warning(config(uint64_t(1) << 25, 1)), "");  // no ring fits 1 MiB: still a message
}
