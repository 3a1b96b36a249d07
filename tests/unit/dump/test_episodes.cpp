// Out-of-memory episodes: one bundle per episode, and the failures that got
// no bundle counted in the next one (metadata failed_calls_before_dump).
#include <dirent.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/dumper.h"
#include "shim/dump/episodes.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

TEST(Episodes, FirstFailureStartsNothingByItself) {
  Episodes e;
  EXPECT_FALSE(e.in_episode(1000, 100));  // no episode yet: the caller decides
  EXPECT_EQ(e.start(1000), 0u);
  EXPECT_TRUE(e.in_episode(1050, 100));
  EXPECT_TRUE(e.in_episode(1140, 100));   // the window slides with each failure
  EXPECT_FALSE(e.in_episode(1300, 100));  // quiet for longer than the window
  EXPECT_EQ(e.start(1300), 2u);           // the two retries got no bundle
  EXPECT_EQ(e.take_unreported(), 0u);
}

TEST(Episodes, AFailureThatCouldNotDumpStartsNoEpisode) {
  Episodes e;
  // A signal dump holds the slot: the failure is missed, no episode starts...
  EXPECT_FALSE(e.in_episode(1000, 100));
  e.missed();
  // ...so the next failure, even a moment later, gets its bundle.
  EXPECT_FALSE(e.in_episode(1001, 100));
  EXPECT_EQ(e.start(1001), 1u);
}

TEST(Episodes, TimestampsFromOtherThreadsOutOfOrderAreTheSameEpisode) {
  Episodes e;
  e.start(5000);
  // Taken by another thread just before the episode's start was stored:
  // an unsigned difference would wrap and start a new episode.
  EXPECT_TRUE(e.in_episode(4990, 100));
  EXPECT_TRUE(e.in_episode(5000, 100));
}

TEST(Episodes, ResetForgetsEverything) {
  Episodes e;
  e.start(10);
  e.missed();
  e.reset();
  EXPECT_FALSE(e.in_episode(11, 100));
  EXPECT_EQ(e.take_unreported(), 0u);
}

namespace {

std::vector<std::string> bundles_in(const std::string& d) {
  std::vector<std::string> out;
  if (DIR* dir = opendir(d.c_str())) {
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind("oom_dump_", 0) == 0) out.push_back(e->d_name);
    closedir(dir);
  }
  // By <seq>, the sixth field of the name (docs/bundle-format.md).
  auto seq = [](const std::string& n) {
    size_t p = 0;
    for (int field = 0; field < 5; ++field) p = n.find('_', p) + 1;
    return std::stoi(n.substr(p, n.find('_', p) - p));
  };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return seq(a) < seq(b); });
  return out;
}

uint64_t failed_before(const std::string& bundle) {
  std::ifstream in(bundle + "/metadata.json");
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  EXPECT_TRUE(d.IsObject() && d.HasMember("failed_calls_before_dump")) << bundle;
  return d["failed_calls_before_dump"].GetUint64();
}

void fail_alloc() {
  FailureInfo f;
  if (record_alloc_failure(HookId::cudaMalloc, 0, 1ull << 40, 0, MemoryType::kDevice, realtime_ns(), 2, true,
                           DumpReason::kOom, &f))
    dumper_on_failure(f);
}

}  // namespace

TEST(Episodes, DumperWritesFailedCallsBeforeDump) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  char tmpl[] = "/tmp/gpumemrec-unit-ep-XXXXXX";
  r->cfg.dir = mkdtemp(tmpl);
  r->cfg.max_dumps = 0;
  // Long enough that a slow dump (a loaded machine) stays within it.
  r->cfg.episode_ms = 3000;
  usleep(3100000);  // out of any episode an earlier test left
  fail_alloc();    // bundle 1
  fail_alloc();    // retries: same episode
  fail_alloc();
  usleep(3100000);
  fail_alloc();  // a new episode: bundle 2 reports the two retries
  auto names = bundles_in(r->cfg.dir);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[0]), 0u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[1]), 2u);
  // A signal dump takes the count too (nothing since bundle 2).
  ASSERT_TRUE(dump_now(r, DumpReason::kSignal, nullptr));
  names = bundles_in(r->cfg.dir);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[2]), 0u);
  r->cfg.max_dumps = 5;
  r->cfg.episode_ms = 60000;
}
