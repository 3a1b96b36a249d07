// Bundle directory handling: names, pruning, removal, the temporary directory.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "shim/base/dump_progress.h"
#include "shim/dump/place/bundle_dir.h"

using namespace gpumemrec;

namespace {

std::string make_tmpdir() {
  char tmpl[] = "/tmp/gpumemrec-unit-dir-XXXXXX";
  return mkdtemp(tmpl);
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

}  // namespace

TEST(BundleDir, PruneKeepsTheNewestWithinTheCount) {
  std::vector<BundleOnDisk> b = {{"oom_dump_c", 30, 1}, {"oom_dump_a", 10, 1}, {"oom_dump_b", 20, 1}};
  EXPECT_EQ(bundles_to_prune(b, 2, 0, "oom_dump_c"), (std::vector<std::string>{"oom_dump_a"}));
  EXPECT_TRUE(bundles_to_prune(b, 3, 0, "").empty());
  EXPECT_TRUE(bundles_to_prune(b, 0, 0, "").empty());  // no limits
}

TEST(BundleDir, PruneByTotalSizeOldestFirst) {
  const uint64_t mb = 1 << 20;
  std::vector<BundleOnDisk> b = {{"oom_dump_a", 10, 3 * mb}, {"oom_dump_b", 20, 3 * mb}, {"oom_dump_c", 30, 3 * mb}};
  EXPECT_EQ(bundles_to_prune(b, 0, 4, "oom_dump_c"), (std::vector<std::string>{"oom_dump_a", "oom_dump_b"}));
}

TEST(BundleDir, PruneNeverRemovesTheBundleJustWritten) {
  // The one just written is the oldest by mtime (a clock step): it stays,
  // the next oldest goes instead.
  std::vector<BundleOnDisk> b = {{"oom_dump_new", 5, 1}, {"oom_dump_a", 10, 1}, {"oom_dump_b", 20, 1}};
  EXPECT_EQ(bundles_to_prune(b, 2, 0, "oom_dump_new"), (std::vector<std::string>{"oom_dump_a"}));
  // Same mtime: ordered by name.
  std::vector<BundleOnDisk> same = {{"oom_dump_2", 10, 1}, {"oom_dump_1", 10, 1}, {"oom_dump_3", 10, 1}};
  EXPECT_EQ(bundles_to_prune(same, 1, 0, "oom_dump_3"), (std::vector<std::string>{"oom_dump_1", "oom_dump_2"}));
}

TEST(BundleDir, PruneKeepsTheEarliestOfTheNewestBurst) {
  const int64_t s = 1000000000ll;
  // An old burst (a, b) and the newest one (c..g, ranks failing together).
  std::vector<BundleOnDisk> b = {{"a", 0, 1},        {"b", 1 * s, 1},    {"c", 100 * s, 1}, {"d", 101 * s, 1},
                                 {"e", 102 * s, 1},  {"f", 102 * s, 1},  {"g", 103 * s, 1}};
  // MAX_DUMPS 5: the old burst goes first, oldest first.
  EXPECT_EQ(bundles_to_prune(b, 5, 0, "g", 10 * s), (std::vector<std::string>{"a", "b"}));
  // MAX_DUMPS 3: then the newest burst's latest, the one just written included.
  EXPECT_EQ(bundles_to_prune(b, 3, 0, "g", 10 * s), (std::vector<std::string>{"a", "b", "g", "f"}));
  // Without bursts: oldest first, never the one just written.
  EXPECT_EQ(bundles_to_prune(b, 3, 0, "g", 0), (std::vector<std::string>{"a", "b", "c", "d"}));
  // `keep` in an older burst (a clock step) stays.
  EXPECT_EQ(bundles_to_prune(b, 6, 0, "a", 10 * s), (std::vector<std::string>{"b"}));
}

// GPUMEMREC_RECOVERED=keep: five recovered episodes and the fatal one that
// ends the burst, under the default MAX_DUMPS=5. Newest-burst-latest-first
// alone would remove the fatal bundle (the one just written); recovered
// bundles go first, in the same order (the burst's latest first).
TEST(BundleDir, PruneRemovesRecoveredBundlesFirst) {
  const int64_t s = 1000000000ll;
  std::vector<BundleOnDisk> b = {{"r1", 0, 1, true},     {"r2", 1 * s, 1, true}, {"r3", 2 * s, 1, true},
                                 {"r4", 3 * s, 1, true}, {"r5", 4 * s, 1, true}, {"fatal", 5 * s, 1, false}};
  EXPECT_EQ(bundles_to_prune(b, 5, 0, "fatal", 10 * s), (std::vector<std::string>{"r5"}));
  EXPECT_EQ(bundles_to_prune(b, 2, 0, "fatal", 10 * s), (std::vector<std::string>{"r5", "r4", "r3", "r2"}));
  EXPECT_EQ(bundles_to_prune(b, 5, 0, "fatal", 0), (std::vector<std::string>{"r1"}));  // no bursts: oldest first
  // An older fatal bundle outlives a newer recovered one.
  std::vector<BundleOnDisk> mixed = {{"old_fatal", 0, 1, false}, {"rec", 100 * s, 1, true}, {"new", 200 * s, 1, false}};
  EXPECT_EQ(bundles_to_prune(mixed, 2, 0, "new", 10 * s), (std::vector<std::string>{"rec"}));
  // Only recovered ones, `keep` among them in an older burst (a clock step): it stays.
  std::vector<BundleOnDisk> rec = {{"k", 0, 1, true}, {"x", 100 * s, 1, true}, {"y", 101 * s, 1, true}};
  EXPECT_EQ(bundles_to_prune(rec, 1, 0, "k", 10 * s), (std::vector<std::string>{"y", "x"}));
}

TEST(BundleDir, ListReadsTheOutcomeFromTheManifest) {
  const std::string dir = make_tmpdir();
  const char* kManifests[][2] = {{"oom_dump_rec", "{\"schema_version\":1,\"outcome\":\"recovered\"}"},
                                 {"oom_dump_fatal", "{\"schema_version\":1,\"outcome\":\"fatal\"}"},
                                 {"oom_dump_none", nullptr}};
  for (auto& m : kManifests) {
    mkdir((dir + "/" + m[0]).c_str(), 0700);
    if (m[1]) std::ofstream(dir + "/" + m[0] + "/manifest.json") << m[1];
  }
  mkdir((dir + "/oom_dump_fifo").c_str(), 0700);  // a FIFO for a manifest: not read, not waited for
  mkfifo((dir + "/oom_dump_fifo/manifest.json").c_str(), 0600);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  std::map<std::string, bool> got;
  for (const BundleOnDisk& b : list_bundles(fd)) got[b.name] = b.recovered;
  close(fd);
  EXPECT_EQ(got, (std::map<std::string, bool>{
                     {"oom_dump_fatal", false}, {"oom_dump_fifo", false}, {"oom_dump_none", false}, {"oom_dump_rec", true}}));
  std::string cmd = "rm -rf " + dir;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

// One bundle bigger than GPUMEMREC_MAX_TOTAL_MB on its own (a 1M-event ring
// against 256 MiB): no pruning can make it fit; the one just
// written stays (the next dump removes it), every other bundle goes. Before
// the retention rule keeping the newest evidence it was removed at once in the newest burst (with a message about
// MAX_DUMPS), and kept without bursts.
TEST(BundleDir, PruneKeepsTheBundleJustWrittenThatAloneExceedsTheCap) {
  const uint64_t mb = 1 << 20;
  const int64_t s = 1000000000ll;
  std::vector<BundleOnDisk> one = {{"big", 100 * s, 385 * mb}};
  EXPECT_TRUE(bundles_to_prune(one, 5, 256, "big", 10 * s).empty());
  EXPECT_TRUE(bundles_to_prune(one, 5, 256, "big", 0).empty());
  // Older bundles (an older burst and the same burst) go; it stays.
  std::vector<BundleOnDisk> b = {{"a", 0, 10 * mb}, {"c", 99 * s, 10 * mb}, {"big", 100 * s, 385 * mb}};
  EXPECT_EQ(bundles_to_prune(b, 5, 256, "big", 10 * s), (std::vector<std::string>{"a", "c"}));
  // The next dump (a small one, later) removes it.
  b = {{"big", 100 * s, 385 * mb}, {"next", 200 * s, 10 * mb}};
  EXPECT_EQ(bundles_to_prune(b, 5, 256, "next", 10 * s), (std::vector<std::string>{"big"}));
  // MAX_DUMPS still applies to it in the newest burst.
  b = {{"e", 100 * s, mb}, {"big", 101 * s, 385 * mb}};
  EXPECT_EQ(bundles_to_prune(b, 1, 256, "big", 10 * s), (std::vector<std::string>{"big"}));
  // Not bigger than the cap alone: the newest burst's latest go first, as before.
  b = {{"e", 100 * s, 200 * mb}, {"f", 101 * s, 200 * mb}};
  EXPECT_EQ(bundles_to_prune(b, 5, 256, "f", 10 * s), (std::vector<std::string>{"f"}));
}

TEST(BundleDir, BundleExceedsTotalCap) {
  const std::string d = make_tmpdir();
  ASSERT_EQ(mkdir((d + "/oom_dump_x").c_str(), 0700), 0);
  std::ofstream(d + "/oom_dump_x/events.json") << std::string(3 << 20, 'x');
  std::ofstream(d + "/oom_dump_x/manifest.json") << "{}";
  int fd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  Config c;
  uint64_t bytes = 0;
  c.max_total_mb = 2;
  EXPECT_TRUE(bundle_exceeds_total_cap(fd, "oom_dump_x", c, &bytes));
  EXPECT_EQ(bytes, (3u << 20) + 2);
  c.max_total_mb = 4;
  EXPECT_FALSE(bundle_exceeds_total_cap(fd, "oom_dump_x", c));
  c.max_total_mb = 0;  // no cap
  EXPECT_FALSE(bundle_exceeds_total_cap(fd, "oom_dump_x", c));
  c.max_total_mb = 1;
  EXPECT_FALSE(bundle_exceeds_total_cap(fd, "oom_dump_missing", c, &bytes));
  EXPECT_EQ(bytes, 0u);
  remove_bundle_dir(fd, "oom_dump_x");
  close(fd);
  rmdir(d.c_str());
}

TEST(BundleDir, StaleTemporaryDirectories) {
  const int64_t s = 1000000000ll;
  struct stat st = {};
  st.st_uid = geteuid();
  st.st_mtim.tv_sec = 1000;
  const int64_t t = 1000 * s;
  // A pid that cannot exist (above pid_max) on this host, untouched for 2 min: stale.
  const std::string dead = "oom_dump_20261121T140305Z_2147483600_cuda_1_node7_0123abcd";
  EXPECT_TRUE(is_stale_tmp(dead, st, geteuid(), "node7", t + 120 * s));
  EXPECT_FALSE(is_stale_tmp(dead, st, geteuid(), "node7", t + 30 * s));   // too recent
  EXPECT_FALSE(is_stale_tmp(dead, st, geteuid(), "other", t + 120 * s));  // another host's
  EXPECT_TRUE(is_stale_tmp(dead, st, geteuid(), "other", t + 2 * 86400 * s));  // a day old
  EXPECT_FALSE(is_stale_tmp(dead, st, geteuid() + 1, "node7", t + 2 * 86400 * s));  // not ours
  // A live process's (ours): never.
  const std::string live = "oom_dump_20261121T140305Z_" + std::to_string(getppid()) + "_cuda_1_node7_0123abcd";
  EXPECT_FALSE(is_stale_tmp(live, st, geteuid(), "node7", t + 120 * s));
  // Old five-field names carry no host: only the age rule.
  EXPECT_FALSE(is_stale_tmp("oom_dump_20261121T140305Z_2147483600_cuda_1", st, geteuid(), "node7", t + 120 * s));
}

TEST(BundleDir, PrunesOnDiskOnlyOwnBundleDirectories) {
  const std::string d = make_tmpdir();
  for (const char* n : {"oom_dump_1", "oom_dump_2", "oom_dump_3"}) {
    ASSERT_EQ(mkdir((d + "/" + n).c_str(), 0700), 0);
    std::ofstream(d + "/" + n + "/events.json") << "[]";
  }
  std::ofstream(d + "/oom_dump_file") << "not a directory";
  ASSERT_EQ(symlink("/tmp", (d + "/oom_dump_link").c_str()), 0);
  int fd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(list_bundles(fd).size(), 3u);
  Config c;
  c.max_dumps = 1;
  c.max_total_mb = 0;
  // Made within the same burst: the earliest stays, even over the one just
  // written (which prune_bundles reports as removed).
  EXPECT_FALSE(prune_bundles(fd, c, "oom_dump_2"));
  close(fd);
  EXPECT_TRUE(exists(d + "/oom_dump_1"));
  EXPECT_FALSE(exists(d + "/oom_dump_2"));
  EXPECT_FALSE(exists(d + "/oom_dump_3"));
  EXPECT_TRUE(exists(d + "/oom_dump_file"));
  EXPECT_TRUE(exists(d + "/oom_dump_link"));
}

TEST(BundleDir, TmpBundleIsRemovedUnlessPublished) {
  const std::string d = make_tmpdir();
  int fd = open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  const uint64_t ns = 1763726585ull * 1000000000ull;
  std::string why, name;
  {
    TmpBundle t(fd);
    ASSERT_TRUE(t.claim(ns, Backend::kCuda, 1, &why)) << why;
    int f = openat(t.fd(), "events.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(f, 0);
    close(f);
    EXPECT_TRUE(exists(d + "/" + t.tmp_name() + "/events.json"));
    name = t.tmp_name();
  }
  EXPECT_FALSE(exists(d + "/" + name));
  {
    TmpBundle t(fd);
    ASSERT_TRUE(t.claim(ns, Backend::kCuda, 2, &why)) << why;
    int f = openat(t.fd(), "events.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
    close(f);
    EXPECT_TRUE(t.publish(&why)) << why;
    EXPECT_TRUE(exists(d + "/" + t.name()));
    EXPECT_FALSE(exists(d + "/" + t.tmp_name()));
  }
  {
    TmpBundle t(fd);
    ASSERT_TRUE(t.claim(ns, Backend::kCuda, 3, &why)) << why;
    // Someone takes the name meanwhile: publishing fails, nothing is left.
    ASSERT_EQ(mkdirat(fd, t.name().c_str(), 0700), 0);
    ASSERT_EQ(close(openat(fd, (t.name() + "/x").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
    EXPECT_FALSE(t.publish(&why));
    name = t.tmp_name();
  }
  EXPECT_FALSE(exists(d + "/" + name));
  close(fd);
}

namespace {

// A child that holds the dump directory's lock (its own open file
// description, as another rank would) and says so on `ready`; for
// `progress_ms` it keeps changing the directory (a prune at work), then it
// either lets go (exit) or, with progress_ms < 0, holds on changing nothing
// until killed.
pid_t lock_holder(const std::string& dir, int progress_ms, int ready[2]) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
  if (write(ready[1], "r", 1) != 1) _exit(1);
  if (progress_ms < 0) {
    for (;;) pause();
  }
  for (int waited = 0; waited < progress_ms; waited += 10) {
    mkdirat(fd, "work", 0700);  // each mkdir and rmdir changes the directory's mtime
    unlinkat(fd, "work", AT_REMOVEDIR);
    usleep(10000);
  }
  _exit(0);
}

void wait_ready(int ready[2]) {
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
}

}  // namespace

// 16 ranks fail at once and queue for the lock, each prune a fraction of a
// second on a busy node: the wait follows the holders' progress (the
// directory changing), not a clock. Here the holder works 4 times longer
// than the stall bound; a fixed bound would give up.
TEST(BundleDir, LockWaitsWhileTheHolderGetsOn) {
  const std::string dir = make_tmpdir();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = lock_holder(dir, 2000, ready);
  wait_ready(ready);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  const uint64_t steps = dump_progress_steps();
  EXPECT_EQ(lock_dir(fd, 500, 600000), DirLock::kLocked);
  EXPECT_GT(dump_progress_steps(), steps);  // the exit wait sees the wait progress
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(fd);
  close(ready[0]);
  close(ready[1]);
}

// A holder that hangs (stopped, or stuck on a dead file server): the prune
// is skipped after the stall bound; and a holder that works for ever is
// bounded by max_ms.
TEST(BundleDir, LockGivesUpOnAHolderThatHangsOrNeverEnds) {
  const std::string dir = make_tmpdir();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = lock_holder(dir, -1, ready);
  wait_ready(ready);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_EQ(lock_dir(fd, 200, 600000), DirLock::kStalled);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  pid = lock_holder(dir, 600000, ready);
  wait_ready(ready);
  EXPECT_EQ(lock_dir(fd, 600000, 300), DirLock::kTooLong);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(lock_dir(fd), DirLock::kLocked);  // free again
  close(fd);
  close(ready[0]);
  close(ready[1]);
}
