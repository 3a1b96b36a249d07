// One dump job (shim/dump/dump_job.cpp) run by the thread that holds the
// dump slot, as signal and exit dumps are: a published bundle, the slot and
// the frozen set given back, errno as it was; a recovered episode gets no
// bundle; an unusable directory and a full disk leave nothing behind and no
// signal reaches the program.
#include "shim/dump/dump_job.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/record/recorder.h"
#include "tests/unit/unit_files.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;
using unit_files::list_dir;

namespace {

constexpr int kDevice = 9;

class DumpJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    r = recorder();
    ASSERT_NE(r, nullptr);
    dir = unit_files::make_tmpdir() + "/dumps";
    r->cfg.dir = dir;
    r->cfg.episode_ms = 60000;
    r->cfg.keep_recovered = false;
    buffer.resize(1 << 16);
    rewrite_buffer.resize(1 << 16);
    s.episodes = &episodes;
    s.symbolizer = &symbolizer;
    s.buffer = WriteBuffer{buffer.data(), buffer.size()};
    s.rewrite_buffer = WriteBuffer{rewrite_buffer.data(), rewrite_buffer.size()};
    s.seq = &seq;
    s.program_ending = &ending;
    record_alloc(HookId::cudaMalloc, kDevice, 0x7d0000000000ull, 1 << 20, 0, MemoryType::kDevice, monotonic_ns(), 0);
  }

  // The job of a dump the caller runs itself: the slot taken, the inline
  // set frozen.
  DumpJob inline_job(DumpReason reason) {
    DumpJob job;
    EXPECT_TRUE(dump_slot_try_acquire(reason));
    job.recorder = r;
    job.reason = reason;
    job.created_ns = realtime_ns();
    job.set = kInlineSet;
    const char* why = nullptr;
    EXPECT_TRUE(freeze(r, kInlineSet, &job.frozen, &why)) << why;
    return job;
  }

  // A failure that opened an episode of `episodes`.
  void add_failure(DumpJob* job, PendingRequest* mine) {
    ASSERT_TRUE(record_alloc_failure(HookId::cudaMalloc, kDevice, 1ull << 30, 0, MemoryType::kDevice, monotonic_ns(),
                                     2, true, DumpReason::kOom, &job->failure));
    job->has_failure = true;
    job->episode = episodes.on_failure(job->failure, monotonic_ns(), 1 << 20, 60000000000ull, mine);
    ASSERT_NE(job->episode, 0u);
  }

  Recorder* r = nullptr;
  std::string dir;
  Episodes episodes;
  Symbolizer symbolizer;
  std::vector<char> buffer, rewrite_buffer;
  std::atomic<int> seq{0};
  std::atomic<bool> ending{false};
  DumpServices s;
};

std::string only_bundle(const std::string& dir) {
  const auto names = list_dir(dir);
  return names.size() == 1 ? names[0] : "";
}

}  // namespace

TEST_F(DumpJobTest, SignalDumpIsPublishedAndTheSlotGivenBack) {
  DumpJob job = inline_job(DumpReason::kSignal);
  job.signal_requests = model::SignalRequests{SIGUSR2, 3, 1000, 2000, 4242};
  errno = 99;
  EXPECT_TRUE(run_dump_job(job, s, false));
  EXPECT_EQ(errno, 99);
  EXPECT_FALSE(dump_slot_held_by_this_thread());
  const std::string name = only_bundle(dir);
  ASSERT_EQ(name.rfind("oom_dump_", 0), 0u) << name;
  auto manifest = unit_files::read_json(dir + "/" + name + "/manifest.json");
  ASSERT_TRUE(manifest.IsObject());
  EXPECT_STREQ(manifest["reason"].GetString(), "signal");
  EXPECT_FALSE(manifest.HasMember("outcome"));  // no failure, no verdict
  // The requests it serves, as the signal thread took them.
  auto metadata = unit_files::read_json(dir + "/" + name + "/metadata.json");
  ASSERT_TRUE(metadata.IsObject() && metadata.HasMember("signal_requests"));
  const auto& req = metadata["signal_requests"];
  EXPECT_EQ(req["signal"].GetInt(), SIGUSR2);
  EXPECT_EQ(req["count"].GetUint64(), 3u);
  EXPECT_EQ(req["first_ns"].GetUint64(), 1000u);
  EXPECT_EQ(req["last_ns"].GetUint64(), 2000u);
  EXPECT_EQ(req["sender_pid"].GetInt64(), 4242);
  EXPECT_EQ(seq.load(), 1);
  // The slot and the inline set are free: a second dump goes through.
  DumpJob again = inline_job(DumpReason::kSignal);
  EXPECT_TRUE(run_dump_job(again, s, false));
  EXPECT_EQ(list_dir(dir).size(), 2u);
}

TEST_F(DumpJobTest, FailureBundleCarriesTheVerdictKnownSoFar) {
  DumpJob job = inline_job(DumpReason::kOom);
  PendingRequest mine{};
  add_failure(&job, &mine);
  EXPECT_TRUE(run_dump_job(job, s, false));
  const std::string name = only_bundle(dir);
  ASSERT_FALSE(name.empty());
  auto manifest = unit_files::read_json(dir + "/" + name + "/manifest.json");
  ASSERT_TRUE(manifest.IsObject());
  EXPECT_STREQ(manifest["reason"].GetString(), "oom");
  EXPECT_STREQ(manifest["outcome"].GetString(), "unknown");
  auto meta = unit_files::read_json(dir + "/" + name + "/metadata.json");
  ASSERT_TRUE(meta.IsObject());
  EXPECT_EQ(meta["requested_bytes"].GetUint64(), 1ull << 30);
}

TEST_F(DumpJobTest, RecoveredEpisodeGetsNoBundle) {
  DumpJob job = inline_job(DumpReason::kOom);
  PendingRequest mine{};
  add_failure(&job, &mine);
  ASSERT_TRUE(episodes.on_success(&mine, job.failure.tid, HookId::cudaMalloc, kDevice, 1ull << 30, monotonic_ns(),
                                  0));
  ASSERT_EQ(episodes.verdict(job.episode).outcome, Outcome::kRecovered);
  EXPECT_TRUE(run_dump_job(job, s, false));
  EXPECT_TRUE(list_dir(dir).empty());
  EXPECT_FALSE(dump_slot_held_by_this_thread());
}

TEST_F(DumpJobTest, UnusableDirectoryWritesNothingAndFreesTheSlot) {
  r->cfg.dir = "/dev/null/dumps";  // a file where a directory must be
  DumpJob job = inline_job(DumpReason::kSignal);
  EXPECT_FALSE(run_dump_job(job, s, false));
  EXPECT_FALSE(dump_slot_held_by_this_thread());
  DumpJob again = inline_job(DumpReason::kSignal);  // the set was given back
  EXPECT_FALSE(run_dump_job(again, s, false));
}

// RLIMIT_FSIZE with SIGXFSZ at its default action (core dump): the job's
// signal guard keeps the signal from the program; the half-written bundle
// is removed. In a child: a guard that failed would kill the test program.
TEST_F(DumpJobTest, FullDiskLeavesNothingBehindAndNoSignal) {
  const int status = unit_process::in_child([&] {
    signal(SIGXFSZ, SIG_DFL);
    DumpJob job = inline_job(DumpReason::kSignal);
    struct rlimit l;
    getrlimit(RLIMIT_FSIZE, &l);
    l.rlim_cur = 200;
    setrlimit(RLIMIT_FSIZE, &l);
    const bool ok = run_dump_job(job, s, false);
    return ok ? 1 : dump_slot_held_by_this_thread() ? 2 : 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(list_dir(dir).empty());  // no bundle, no .tmp- directory
}

TEST(DescribeFailure, SaysTheCallTheSizeAndTheError) {
  FailureInfo f;
  f.api = HookId::cudaMalloc;
  f.device = 0;
  f.size = 1024;
  f.result = 2;
  f.reason = DumpReason::kOom;
  EXPECT_EQ(describe_failure(f), "cudaMalloc(1024 bytes, 1.00 KiB) on device 0 failed with cudaErrorMemoryAllocation (2)");
  f.reason = DumpReason::kLimit;
  f.api = HookId::cuMemAlloc_v2;
  EXPECT_EQ(describe_failure(f),
            "cuMemAlloc_v2(1024 bytes, 1.00 KiB) on device 0 failed with CUDA_ERROR_OUT_OF_MEMORY (2) "
            "[GPUMEMREC_LIMIT]");
}
