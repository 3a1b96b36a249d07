// The top-sites computation shared by summary.txt and `gpumemrec report`.
#include <gtest/gtest.h>

#include "common/live_sites.h"

using namespace gpumemrec::model;

TEST(LiveSites, GroupsByStackLargestFirst) {
  Bundle b;
  auto add = [&](uint64_t stack, uint64_t size, const char* type = "device") {
    Allocation a;
    a.stack_id = stack;
    a.size = size;
    a.memory_type = type;
    b.allocations.push_back(a);
  };
  add(7, 100);
  add(3, 60);
  add(3, 60);
  add(9, 120);
  add(5, 1 << 30, "mapping");  // a mapping range holds no memory of its own
  auto s = live_sites(b);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].stack_id, 3u);  // 120 bytes, tie with stack 9: lower id first
  EXPECT_EQ(s[0].bytes, 120u);
  EXPECT_EQ(s[0].count, 2u);
  EXPECT_EQ(s[1].stack_id, 9u);
  EXPECT_EQ(s[2].stack_id, 7u);
}
