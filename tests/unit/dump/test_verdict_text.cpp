// The verdict in words (shim/dump/verdict/verdict_text.cpp): the one text
// metadata.json, summary.txt and the stderr line share.
#include "shim/dump/verdict/verdict_text.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>

using namespace gpumemrec;

TEST(VerdictText, RecoveryPhrase) {
  Recovery r;
  r.freed_bytes = uint64_t(3.2 * (1ull << 30));
  r.after_ns = 12345678;
  EXPECT_EQ(recovery_phrase(r), "recovered after freeing 3.20 GiB of cache (12.3 ms later)");
  r.freed_bytes = 0;
  r.after_ns = 0;
  EXPECT_EQ(recovery_phrase(r), "recovered after freeing 0 B of cache (0.0 ms later)");
  // A trainer's handler caught the error (Episodes::close_by_handler).
  std::snprintf(r.handler, sizeof r.handler, "%s", "accelerate's find_executable_batch_size");
  r.after_ns = 4100000;
  EXPECT_EQ(recovery_phrase(r),
            "recovered: accelerate's find_executable_batch_size caught the error and retries with less (4.1 ms later)");
}

TEST(VerdictText, EveryOutcomeHasItsSentence) {
  Verdict v;
  EXPECT_EQ(outcome_detail(v, 2000),
            "not known when this was written (the process may have ended before the verdict)");
  v.outcome = Outcome::kFatal;
  v.cause = FatalCause::kNoRetry;
  EXPECT_EQ(outcome_detail(v, 2000), "not recovered: no retry of the request succeeded within 2000 ms");
  v.cause = FatalCause::kExit;
  EXPECT_EQ(outcome_detail(v, 2000), "not recovered: the program exited");
  v.cause = FatalCause::kSignal;
  v.signal = SIGSEGV;
  EXPECT_EQ(outcome_detail(v, 2000), "not recovered: the program ended by signal 11 (SIGSEGV)");
  v.signal = 200;  // no such signal: no name, no crash
  EXPECT_EQ(outcome_detail(v, 2000), "not recovered: the program ended by signal 200 (SIG?)");
  v.outcome = Outcome::kRecovered;
  v.recovery.freed_bytes = 1024;
  v.recovery.after_ns = 1500000;
  EXPECT_EQ(outcome_detail(v, 2000), recovery_phrase(v.recovery));
}
