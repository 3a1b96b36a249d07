// The order of a bundle's events and the time bounds of its window
// (shim/dump/capture/event_order.h).
#include <gtest/gtest.h>

#include <vector>

#include "shim/dump/capture/event_order.h"

using namespace gpumemrec;

namespace {

Event at(uint64_t seq, uint64_t time_ns) {
  Event e{};
  e.seq = seq;
  e.time_ns = time_ns;
  return e;
}

}  // namespace

TEST(EventOrder, TimeFirstThenSeqAndWallTimeAdded) {
  std::vector<Event> v = {at(5, 300), at(9, 100), at(2, 200), at(1, 200)};
  ASSERT_EQ(order_events(v.data(), v.size(), 0, UINT64_MAX, 1000), 4u);
  EXPECT_EQ(v[0].seq, 9u);
  EXPECT_EQ(v[1].seq, 1u);  // same time: lower seq first
  EXPECT_EQ(v[2].seq, 2u);
  EXPECT_EQ(v[3].seq, 5u);
  EXPECT_EQ(v[0].time_ns, 1100u);
}

TEST(EventOrder, LeavesOutEventsBeforeTheCompleteMomentAndAfterTheCut) {
  std::vector<Event> v = {at(1, 50), at(2, 100), at(3, 150), at(4, 200), at(5, 250)};
  ASSERT_EQ(order_events(v.data(), v.size(), 100, 200, 0), 3u);
  EXPECT_EQ(v[0].seq, 2u);
  EXPECT_EQ(v[2].seq, 4u);
}
