// Blocks of seqs (shim/record/ring.h, "Blocks") and the marks that close a
// dump's window in time (shim/record/claim_marks.h).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "shim/base/clock.h"
#include "shim/record/claim_marks.h"
#include "shim/record/ring.h"
#include "tests/unit/record/ring_fixture.h"

using namespace gpumemrec;

TEST(ClaimMarks, FloorRisesEveryStepAndStaysLagBehind) {
  ClaimMarks m;
  m.init(1024, 16);  // step 16, lag 64
  ASSERT_EQ(m.step(), 16u);
  ASSERT_EQ(m.lag(), 64u);
  m.on_claim(40);  // reaches 32: floor 0
  EXPECT_TRUE(m.fresh(1));
  m.on_claim(200);  // reaches 192: floor 128
  EXPECT_FALSE(m.fresh(127));
  EXPECT_TRUE(m.fresh(128));
  m.on_claim(150);  // an older claim never lowers it
  EXPECT_FALSE(m.fresh(127));
}

TEST(ClaimMarks, CompleteFromIsTheMomentTheFloorPassedTheWindowStart) {
  ClaimMarks m;
  m.init(1024, 16);
  m.on_claim(80);  // mark n=80 (floor 16)
  const uint64_t between = monotonic_ns();
  m.on_claim(112);  // mark n=112 (floor 48)
  const uint64_t after = monotonic_ns();
  EXPECT_EQ(m.complete_from(1), 0u) << "nothing was ever out of a window that starts at 1";
  // A window from 16: the first mark with n - lag >= 16 is n=80.
  const uint64_t t80 = m.complete_from(16);
  EXPECT_GT(t80, 0u);
  EXPECT_LE(t80, between);
  // From 40: n=112 (n=80 gives a floor of 16 only).
  const uint64_t t112 = m.complete_from(40);
  EXPECT_GE(t112, between);
  EXPECT_LE(t112, after);
  EXPECT_EQ(m.complete_from(100), 0u) << "no mark yet: keep the whole window";
}

TEST(RingBlocks, AThreadFillsConsecutiveSeqsFromOneClaim) {
  RingFixture f(1 << 14);  // block 64
  Ring::Block b{};
  const uint64_t first = f.ring.claim(&b).seq;
  for (uint64_t i = 1; i < f.ring.block_size(); ++i) EXPECT_EQ(f.ring.claim(&b).seq, first + i);
  EXPECT_EQ(f.ring.end(), first + f.ring.block_size()) << "one fetch_add per block";
}

TEST(RingBlocks, AQuietThreadsBlockIsDroppedOnceBelowTheFloor) {
  RingFixture f(1 << 12);  // block 64, lag 256, step 64
  Ring::Block quiet{}, busy{};
  const uint64_t q1 = f.ring.claim(&quiet).seq;
  // The busy thread claims far more than the lag.
  for (int i = 0; i < 1000; ++i) f.ring.claim(&busy);
  const uint64_t q2 = f.ring.claim(&quiet).seq;
  EXPECT_GT(q2, q1 + f.ring.lag()) << "the quiet thread's old block was dropped for a new one";
  EXPECT_GE(q2 + f.ring.lag(), f.ring.end() - f.ring.block_size());
}

TEST(RingBlocks, ASwapDropsEveryBlockOfTheOldGeneration) {
  RingFixture f(1 << 12);
  std::vector<Event> spare(1 << 12);
  const int b1 = f.ring.add_buffer(spare.data());
  ASSERT_EQ(b1, 1);
  Ring::Block b{};
  const Ring::Ticket before = f.ring.claim(&b);
  const uint64_t cut = f.ring.swap_to(b1);
  const Ring::Ticket after = f.ring.claim(&b);
  EXPECT_LT(before.seq, cut);
  EXPECT_GE(after.seq, cut) << "the block claimed before the swap is not used after it";
  EXPECT_NE(after.gen, before.gen);
}

// Rule 2 of claim_marks.h under threads: an event whose time is at or after
// complete_from(lo) never has a seq below lo. Each thread records (time,
// seq) pairs as the recorder does (time first, then the claim); some
// threads are slow, so their blocks age.
TEST(RingBlocks, EveryEventAfterCompleteFromHasASeqInTheWindow) {
  RingFixture f(1 << 12);
  constexpr int kThreads = 6;
  struct Rec {
    uint64_t t, seq;
  };
  std::vector<std::vector<Rec>> recs(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      Ring::Block b{};
      for (int n = 0; n < 40000; ++n) {
        const uint64_t t = monotonic_ns();
        recs[i].push_back({t, f.ring.claim(&b).seq});
        if (i % 2 && n % 97 == 0) std::this_thread::yield();
      }
    });
  for (auto& t : threads) t.join();
  const uint64_t end = f.ring.end();
  int checked = 0;
  for (uint64_t lo : {end - 4096, end - 3000, end - 2048}) {
    const uint64_t from = f.ring.complete_from(lo);
    if (from == 0) continue;
    ++checked;
    for (auto& v : recs)
      for (const Rec& r : v)
        if (r.t >= from) {
          ASSERT_GE(r.seq, lo) << "an event at or after complete_from lies below the window";
        }
  }
  EXPECT_GT(checked, 0);
}
