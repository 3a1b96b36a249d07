// Bundle names (shim/dump/place/bundle_name.h): gpumemprof's fields first, then
// host and a random part; a collision retries instead of losing a bundle.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "shim/dump/place/bundle_name.h"

using namespace gpumemrec;

namespace {

std::string make_tmpdir() {
  char tmpl[] = "/tmp/gpumemrec-name-XXXXXX";
  return mkdtemp(tmpl);
}

int g_calls = 0;
std::string fixed_then_fresh() { return ++g_calls <= 2 ? "aaaaaaaa" : "bbbbbbbb"; }
std::string always_same() { return "cccccccc"; }

const uint64_t kT = 1763733785ull * 1000000000ull;  // 2025-11-21T14:03:05Z

}  // namespace

TEST(BundleName, KeepsTheFieldOrderAndAddsHostAndRandom) {
  const std::string n = make_bundle_name(kT, Backend::kHip, 3, "node-7.example", "0123abcd");
  EXPECT_EQ(n, "oom_dump_20251121T140305Z_" + std::to_string(getpid()) + "_rocm_3_node-7.example_0123abcd");
  const std::regex re(R"(oom_dump_\d{8}T\d{6}Z_\d+_(cuda|hip)_\d+_[A-Za-z0-9.-]+_[0-9a-f]{8})");
  EXPECT_TRUE(std::regex_match(make_bundle_name(kT, Backend::kCuda, 1, bundle_host_part(), bundle_random_part()), re));
}

TEST(BundleName, HostPartIsSafeInAFileName) {
  const std::string h = bundle_host_part();
  ASSERT_FALSE(h.empty());
  EXPECT_LE(h.size(), 64u);
  EXPECT_EQ(h.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-"), std::string::npos);
  EXPECT_NE(h[0], '.');
}

TEST(BundleName, RandomPartsDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(bundle_random_part());
  EXPECT_GT(seen.size(), 990u);
  for (auto& s : seen) EXPECT_EQ(s.size(), 8u);
}

// Another process already holds the temporary name, or already renamed its
// bundle to that name: a fresh random part is tried.
TEST(BundleName, CollisionRetriesWithAFreshRandomPart) {
  const std::string d = make_tmpdir();
  const int dirfd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dirfd, 0);
  const std::string host = bundle_host_part();
  const std::string taken_tmp = ".tmp-" + make_bundle_name(kT, Backend::kCuda, 1, host, "aaaaaaaa");
  ASSERT_EQ(mkdirat(dirfd, taken_tmp.c_str(), 0700), 0);
  std::string name;
  char tmp[256];
  g_calls = 0;
  ASSERT_EQ(claim_bundle_name(dirfd, kT, Backend::kCuda, 1, &name, tmp, sizeof tmp, fixed_then_fresh), 0);
  EXPECT_EQ(name, make_bundle_name(kT, Backend::kCuda, 1, host, "bbbbbbbb"));
  EXPECT_EQ(std::string(tmp), ".tmp-" + name);
  struct stat st;
  EXPECT_EQ(fstatat(dirfd, tmp, &st, 0), 0);

  // A finished bundle with the name: refused before anything is written.
  const std::string done = make_bundle_name(kT, Backend::kCuda, 2, host, "aaaaaaaa");
  ASSERT_EQ(mkdirat(dirfd, done.c_str(), 0700), 0);
  g_calls = 0;
  ASSERT_EQ(claim_bundle_name(dirfd, kT, Backend::kCuda, 2, &name, tmp, sizeof tmp, fixed_then_fresh), 0);
  EXPECT_EQ(name, make_bundle_name(kT, Backend::kCuda, 2, host, "bbbbbbbb"));
  EXPECT_NE(fstatat(dirfd, (".tmp-" + done).c_str(), &st, 0), 0) << "the refused temporary directory was left";

  // Every attempt collides: an error, not a silent overwrite.
  const std::string stuck = ".tmp-" + make_bundle_name(kT, Backend::kCuda, 3, host, "cccccccc");
  ASSERT_EQ(mkdirat(dirfd, stuck.c_str(), 0700), 0);
  EXPECT_EQ(claim_bundle_name(dirfd, kT, Backend::kCuda, 3, &name, tmp, sizeof tmp, always_same), EEXIST);
  close(dirfd);
  std::system(("rm -rf " + d).c_str());
}

TEST(BundleName, RenameNeverReplacesAnExistingDirectory) {
  const std::string d = make_tmpdir();
  const int dirfd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dirfd, 0);
  ASSERT_EQ(mkdirat(dirfd, ".tmp-x", 0700), 0);
  ASSERT_EQ(mkdirat(dirfd, "x", 0700), 0);  // empty: renameat alone would replace it
  EXPECT_NE(rename_bundle_into_place(dirfd, ".tmp-x", "x"), 0);
  ASSERT_EQ(mkdirat(dirfd, ".tmp-y", 0700), 0);
  EXPECT_EQ(rename_bundle_into_place(dirfd, ".tmp-y", "y"), 0);
  close(dirfd);
  std::system(("rm -rf " + d).c_str());
}

// The exit wait's give-up (shim/dump/exit_wait.cpp): once the gate is shut
// and the directories removed, a writer still claiming names leaves nothing
// behind, whatever the interleaving.
TEST(BundleName, ClosedGateLetsNoDirectoryAppearAfterTheRemoval) {
  const std::string d = make_tmpdir();
  const int dirfd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dirfd, 0);
  std::atomic<int> made{0};
  std::atomic<int> last{0};
  std::thread writer([&] {
    for (int seq = 1;; ++seq) {
      std::string name;
      char tmp[256];
      const int err = claim_bundle_name(dirfd, kT, Backend::kCuda, seq, &name, tmp, sizeof tmp);
      if (err) {
        last = err;
        return;
      }
      made.fetch_add(1);
    }
  });
  while (made.load() < 50) sched_yield();  // progress, not a clock
  EXPECT_TRUE(close_tmp_gate(60000));
  std::system(("find " + d + " -mindepth 1 -delete").c_str());
  writer.join();
  EXPECT_EQ(last.load(), ECANCELED);
  DIR* dir = opendir(d.c_str());
  int left = 0;
  while (struct dirent* e = readdir(dir)) left += e->d_name[0] == '.' && e->d_name[1] == 't';
  closedir(dir);
  EXPECT_EQ(left, 0) << "a temporary directory appeared after the gate was shut";
  std::string name;
  char tmp[256];
  EXPECT_EQ(claim_bundle_name(dirfd, kT, Backend::kCuda, 1, &name, tmp, sizeof tmp), ECANCELED);
  reopen_tmp_gate_after_fork();
  EXPECT_EQ(claim_bundle_name(dirfd, kT, Backend::kCuda, 1, &name, tmp, sizeof tmp), 0);
  close(dirfd);
  std::system(("rm -rf " + d).c_str());
}
