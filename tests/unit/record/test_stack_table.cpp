#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "shim/record/stack_table.h"

using namespace gpumemrec;

TEST(StackTable, InternsEqualStacksOnce) {
  StackTable t;
  ASSERT_TRUE(t.init(1024, 1 << 20));
  uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 4}, c[] = {1, 2};
  uint32_t ia = t.intern(a, 3), ib = t.intern(b, 3), ic = t.intern(c, 2);
  EXPECT_NE(ia, 0u);
  EXPECT_NE(ia, ib);
  EXPECT_NE(ia, ic);
  EXPECT_EQ(t.intern(a, 3), ia);
  EXPECT_EQ(t.count(), 3u);
  const uint64_t* f = nullptr;
  uint32_t n = 0;
  ASSERT_TRUE(t.get(ib, &f, &n));
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(f[2], 4u);
  EXPECT_EQ(t.intern(a, 0), 0u);  // empty stack
  EXPECT_FALSE(t.get(9999, &f, &n));
}

TEST(StackTable, FullTableSaysSo) {
  StackTable t;
  ASSERT_TRUE(t.init(4, 1 << 20));
  for (uint64_t i = 1; i <= 4; ++i) EXPECT_NE(t.intern(&i, 1), StackTable::kFull);
  uint64_t x = 99;
  EXPECT_EQ(t.intern(&x, 1), StackTable::kFull);
  uint64_t one = 1;
  EXPECT_NE(t.intern(&one, 1), StackTable::kFull);  // known stacks still resolve
}

TEST(StackTable, ConcurrentInterningAgrees) {
  StackTable t;
  ASSERT_TRUE(t.init(1 << 16, 64 << 20));
  constexpr int kThreads = 8, kStacks = 2000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&, k] {
      for (int i = 0; i < kStacks; ++i) {
        uint64_t frames[8];
        for (int j = 0; j < 8; ++j) frames[j] = uint64_t(i) * 131 + uint64_t(j);
        ids[k][i] = t.intern(frames, 8);
      }
    });
  for (auto& x : th) x.join();
  for (int i = 0; i < kStacks; ++i) {
    for (int k = 1; k < kThreads; ++k) EXPECT_EQ(ids[k][i], ids[0][i]) << i;
    const uint64_t* f;
    uint32_t n;
    ASSERT_TRUE(t.get(ids[0][i], &f, &n));
    EXPECT_EQ(f[0], uint64_t(i) * 131);
  }
}
