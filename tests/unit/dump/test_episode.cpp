// The episode decision (shim/dump/episode.h): one episode, one opener,
// whatever the threads and however their clock readings interleave.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "shim/dump/episode.h"

using namespace gpumemrec;

namespace {
constexpr uint64_t kMs = 1000000;
}

TEST(Episode, FirstFailureOpens) {
  EpisodeClock e;
  EXPECT_TRUE(e.on_failure(1000 * kMs, 2000 * kMs));
  EXPECT_EQ(e.failures_in_episode(), 1u);
}

TEST(Episode, FailuresWithinTheWindowJoinAndExtendIt) {
  EpisodeClock e;
  EXPECT_TRUE(e.on_failure(1000 * kMs, 2000 * kMs));
  // Back to back for longer than the window, each gap shorter than it.
  for (uint64_t t = 1500; t <= 9000; t += 500) EXPECT_FALSE(e.on_failure(t * kMs, 2000 * kMs)) << t;
  EXPECT_EQ(e.failures_in_episode(), 17u);
  EXPECT_TRUE(e.on_failure(11000 * kMs, 2000 * kMs));  // a gap of exactly the window: a new episode
  EXPECT_EQ(e.failures_in_episode(), 1u);
}

// The bug: another thread stored a later time than ours; `now - last`
// wrapped to a huge unsigned number and opened a new episode.
TEST(Episode, AnEarlierTimeFromAnotherThreadIsInsideTheEpisode) {
  EpisodeClock e;
  EXPECT_TRUE(e.on_failure(5000 * kMs, 2000 * kMs));
  EXPECT_FALSE(e.on_failure(5000 * kMs + 10, 2000 * kMs));
  EXPECT_FALSE(e.on_failure(5000 * kMs - 10, 2000 * kMs));  // read the clock before the other thread
  EXPECT_FALSE(e.on_failure(1 * kMs, 2000 * kMs));          // far earlier: still not a new episode
  // The window keeps counting from the latest time seen, not the earlier one.
  EXPECT_FALSE(e.on_failure(6999 * kMs, 2000 * kMs));
  EXPECT_TRUE(e.on_failure(9000 * kMs, 2000 * kMs));
}

TEST(Episode, WindowZeroOpensOnEveryFailure) {
  EpisodeClock e;
  EXPECT_TRUE(e.on_failure(10, 0));
  EXPECT_TRUE(e.on_failure(10, 0));
  EXPECT_TRUE(e.on_failure(5, 0));
}

TEST(Episode, ResetForgets) {
  EpisodeClock e;
  EXPECT_TRUE(e.on_failure(10 * kMs, 2000 * kMs));
  e.reset();
  EXPECT_TRUE(e.on_failure(11 * kMs, 2000 * kMs));
}

// 8 threads fail back to back for 1.5 s of simulated time (16,000 failures,
// ~94 us apart) with a 2 s window; each thread's clock reading is off by up
// to 5 ms against the shared time, earlier or later. Exactly one opener.
TEST(Episode, ManyThreadsWithSkewedClocksOpenOneEpisode) {
  for (int round = 0; round < 20; ++round) {
    EpisodeClock e;
    std::atomic<int> openers{0};
    std::atomic<uint64_t> shared_time{1000 * kMs};
    std::vector<std::thread> pool;
    for (int t = 0; t < 8; ++t)
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(uint64_t(round) * 131 + uint64_t(t));
        for (int i = 0; i < 2000; ++i) {
          const uint64_t base = shared_time.fetch_add(93750);
          const uint64_t skew = rng() % (5 * kMs);
          const uint64_t now = (rng() & 1) ? base + skew : base - skew;
          if (e.on_failure(now, 2000 * kMs)) openers.fetch_add(1);
        }
      });
    for (auto& th : pool) th.join();
    EXPECT_EQ(openers.load(), 1) << "round " << round;
    EXPECT_EQ(e.failures_in_episode(), 8u * 2000u);
  }
}
