// What small copies keep in simulated device memory (simulate/runtime/kept_bytes.cpp):
// read back exactly, laid over zeros, forgotten by a launch, a free or a
// large copy, and bounded per copy and in all, from several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/kept_bytes.h"

namespace kept = rt::kept;

namespace {

constexpr uintptr_t kBase = 0x100000000000ull;

std::vector<unsigned char> read(uintptr_t a, size_t n) {
  std::vector<unsigned char> v(n, 0xee);
  kept::read(v.data(), a, n);
  return v;
}

class KeptBytes : public ::testing::Test {
 protected:
  void SetUp() override { kept::kernel_ran(); }
  void TearDown() override { kept::kernel_ran(); }
};

TEST_F(KeptBytes, NothingKeptReadsZeros) {
  EXPECT_TRUE(kept::empty());
  EXPECT_EQ(read(kBase, 1000), std::vector<unsigned char>(1000, 0));
}

TEST_F(KeptBytes, ACopyAcrossLinesReadsBackOverZeros) {
  std::vector<unsigned char> in(700);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + 1);
  kept::write(kBase + 250, in.data(), in.size());  // lines 0..3, neither end aligned
  auto got = read(kBase + 240, 720);
  EXPECT_EQ(std::vector<unsigned char>(got.begin(), got.begin() + 10), std::vector<unsigned char>(10, 0));
  EXPECT_EQ(std::vector<unsigned char>(got.begin() + 10, got.begin() + 710), in);
  EXPECT_EQ(std::vector<unsigned char>(got.begin() + 710, got.end()), std::vector<unsigned char>(10, 0));
  EXPECT_EQ(kept::kept_bytes(), 4u * 256);
}

TEST_F(KeptBytes, ALaunchForgetsEverything) {
  const int v = 42;
  kept::write(kBase, &v, sizeof v);
  kept::kernel_ran();
  EXPECT_TRUE(kept::empty());
  EXPECT_EQ(read(kBase, 4), std::vector<unsigned char>(4, 0));
}

TEST_F(KeptBytes, ForgettingPartOfALineZerosOnlyThatPart) {
  std::vector<unsigned char> in(512, 9);
  kept::write(kBase, in.data(), in.size());
  kept::forget(kBase + 100, 300);
  auto got = read(kBase, 512);
  for (size_t i = 0; i < 512; ++i) ASSERT_EQ(got[i], (i >= 100 && i < 400) ? 0 : 9) << i;
  kept::forget(kBase, 512);
  EXPECT_TRUE(kept::empty());
}

TEST_F(KeptBytes, ALargeCopyIsDroppedAndClearsWhatWasThere) {
  const long long v = -1;
  kept::write(kBase + 8, &v, sizeof v);
  std::vector<unsigned char> big(kept::kMaxCopy + 1, 5);
  kept::write(kBase, big.data(), big.size());
  EXPECT_EQ(read(kBase, 64), std::vector<unsigned char>(64, 0));
  EXPECT_TRUE(kept::empty());
}

TEST_F(KeptBytes, FillsAndDeviceCopies) {
  kept::fill(kBase, 0x5a, 10);
  kept::copy(kBase + 1000, kBase + 5, 10);  // 5 filled bytes, then 5 zeros
  auto got = read(kBase + 1000, 10);
  EXPECT_EQ(got, (std::vector<unsigned char>{0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0, 0, 0, 0, 0}));
  kept::copy(kBase + 1000, kBase + 100000, kept::kMaxCopy + 1);  // too large: the target reads as zeros
  EXPECT_EQ(read(kBase + 1000, 10), std::vector<unsigned char>(10, 0));
}

TEST_F(KeptBytes, TheTotalIsBounded) {
  std::vector<unsigned char> in(kept::kMaxCopy, 3);
  const size_t copies = kept::kMaxTotal / kept::kMaxCopy;
  for (size_t i = 0; i <= copies; ++i) kept::write(kBase + i * (1 << 20), in.data(), in.size());
  EXPECT_EQ(kept::kept_bytes(), kept::kMaxTotal);
  EXPECT_EQ(read(kBase + copies * (1 << 20), 16), std::vector<unsigned char>(16, 0));  // the one past the total
  EXPECT_EQ(read(kBase, 16), std::vector<unsigned char>(16, 3));
  // Rewriting what is kept needs no new room.
  kept::write(kBase, in.data(), 100);
  EXPECT_EQ(read(kBase, 16), std::vector<unsigned char>(16, 3));
}

// Threads copying their own ranges while another launches: every read is
// either the thread's own bytes or zeros (a launch in between), never another
// thread's or torn. TSan checks the locking.
TEST_F(KeptBytes, ThreadsSeeTheirOwnBytesOrZeros) {
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t, &bad] {
      std::vector<unsigned char> in(300, static_cast<unsigned char>(t + 1)), out(300);
      for (int i = 0; i < 2000; ++i) {
        kept::write(kBase + t * 4096, in.data(), in.size());
        kept::read(out.data(), kBase + t * 4096, out.size());
        if (out != in && out != std::vector<unsigned char>(300, 0)) ++bad;
      }
    });
  ts.emplace_back([] {
    for (int i = 0; i < 2000; ++i) kept::kernel_ran();
  });
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
