// The bundle's files (shim/dump/write/): write_bundle from a real freeze of
// the recorder, every file read back; the verdict's rewrite; and what a full
// disk (RLIMIT_FSIZE: a short write, then EFBIG), a planted file and a
// closed pipe do to OutFile and FdOut: an error said, never a partial file
// passed off as whole, never an old file lost.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/dump/write/bundle_writer.h"
#include "shim/record/recorder.h"
#include "tests/unit/unit_files.h"

using namespace gpumemrec;
using unit_files::list_dir;
using unit_files::read_json;
using unit_files::read_text;

namespace {

constexpr int kDevice = 7;  // no other test of this program records on it
constexpr uint64_t kA = 0x7e0000000000ull, kB = 0x7e0000400000ull;
constexpr uint64_t kFailSize = 3ull << 30;

// RLIMIT_FSIZE for the scope, SIGXFSZ ignored (writes past it fail EFBIG).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_ = signal(SIGXFSZ, SIG_IGN);
    struct rlimit l = saved_;
    l.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &l);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_);
  }

 private:
  struct rlimit saved_;
  sighandler_t old_;
};

// One out-of-memory bundle's input, from the recorder's own state.
class BundleFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    r = recorder();
    ASSERT_NE(r, nullptr);
    dir = unit_files::make_tmpdir();
    dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd, 0);
    const uint64_t t0 = monotonic_ns();  // the events' clock (recorder.cpp)
    record_alloc(HookId::cudaMalloc, kDevice, kA, 1 << 20, 0, MemoryType::kDevice, t0, 0);
    record_alloc(HookId::cuMemAlloc_v2, kDevice, kB, 2 << 20, 0, MemoryType::kDevice, t0, 0);
    const PendingFree p = begin_free(kA, MemoryType::kDevice);
    end_free(HookId::cudaFree, p, kA, kDevice, 0, MemoryType::kDevice, monotonic_ns(), 0);
    ASSERT_TRUE(record_alloc_failure(HookId::cudaMalloc, kDevice, kFailSize, 0, MemoryType::kDevice, t0, 2, true,
                                     DumpReason::kOom, &failure));
    set = freeze_acquire();
    ASSERT_GE(set, 0);
    const char* why = nullptr;
    ASSERT_TRUE(freeze(r, set, &frozen, &why)) << why;
    freeze_collect(set, &frozen);  // the writer's part of the freeze
    in.recorder = r;
    in.reason = DumpReason::kOom;
    in.failure = &failure;
    in.backend = Backend::kCuda;
    in.bundle_name = "oom_dump_unit_test";
    in.created_ns = realtime_ns();
    in.episode_ms = 60000;
    buffer.resize(1 << 16);
  }
  void TearDown() override {
    if (set >= 0) freeze_done(set);
    if (dirfd >= 0) close(dirfd);
    const PendingFree p = begin_free(kB, MemoryType::kDevice);
    end_free(HookId::cuMemFree_v2, p, kB, kDevice, 0, MemoryType::kDevice, 0, 0);
  }
  WriteBuffer buf() { return WriteBuffer{buffer.data(), buffer.size()}; }
  bool write(std::string* error) { return write_bundle(dirfd, in, frozen, symbolizer, buf(), &build, error); }

  Recorder* r = nullptr;
  std::string dir;
  int dirfd = -1;
  FailureInfo failure;
  int set = -1;
  FrozenState frozen;
  BundleInput in;
  Symbolizer symbolizer;
  std::vector<char> buffer;
  BundleBuild build;
};

std::string dump_json_member_string(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsString() ? v[key].GetString() : "<missing>";
}

}  // namespace

TEST_F(BundleFilesTest, EveryFileIsWrittenOwnerOnlyAndListedInTheManifest) {
  std::string error;
  ASSERT_TRUE(write(&error)) << error;
  EXPECT_TRUE(error.empty()) << error;
  const auto names = list_dir(dir);
  for (const char* f : {"events.json", "allocations.json", "stacks.json", "metadata.json", "environment.json",
                        "summary.txt", "manifest.json"})
    EXPECT_NE(std::find(names.begin(), names.end(), f), names.end()) << f;
  for (const auto& n : names) {
    struct stat st;
    ASSERT_EQ(stat((dir + "/" + n).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << n;
    EXPECT_GT(st.st_size, 0) << n;
  }
  auto manifest = read_json(dir + "/manifest.json");
  ASSERT_TRUE(manifest.IsObject());
  std::vector<std::string> listed;
  for (auto& f : manifest["files"].GetArray()) listed.push_back(f.GetString());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, names);  // every file listed, nothing else in the directory
  EXPECT_EQ(dump_json_member_string(manifest, "bundle_name"), "oom_dump_unit_test");
  EXPECT_EQ(dump_json_member_string(manifest, "reason"), "oom");
  EXPECT_EQ(dump_json_member_string(manifest, "outcome"), "unknown");
  auto events = read_json(dir + "/events.json");
  ASSERT_TRUE(events.IsArray());
  EXPECT_EQ(manifest["event_count"].GetUint64(), events.Size());
  // A small ring and memory to spare: snapshot.pickle too, a whole pickle
  // (PROTO first, STOP last).
  const std::string pickle = read_text(dir + "/snapshot.pickle");
  ASSERT_GE(pickle.size(), 3u);
  EXPECT_EQ(uint8_t(pickle.front()), 0x80);
  EXPECT_EQ(pickle.back(), '.');
}

TEST_F(BundleFilesTest, EventsAllocationsAndStacksSayWhatWasRecorded) {
  std::string error;
  ASSERT_TRUE(write(&error)) << error;
  auto events = read_json(dir + "/events.json");
  ASSERT_TRUE(events.IsArray());
  std::vector<std::string> mine;  // "event_type api size" of device kDevice, in order
  uint64_t last_seq = 0;
  std::set<uint64_t> stack_ids;
  for (auto& e : events.GetArray()) {
    EXPECT_GT(e["seq"].GetUint64(), last_seq);  // one history, in order
    last_seq = e["seq"].GetUint64();
    if (e["stack_id"].GetUint64()) stack_ids.insert(e["stack_id"].GetUint64());
    if (e["device_id"].GetInt() != kDevice) continue;
    mine.push_back(std::string(e["event_type"].GetString()) + " " + e["api"].GetString() + " " +
                   std::to_string(e["size"].GetUint64()));
  }
  const std::vector<std::string> expect = {"allocation cudaMalloc 1048576", "allocation cuMemAlloc_v2 2097152",
                                           "deallocation cudaFree 1048576", "oom cudaMalloc 3221225472"};
  EXPECT_EQ(mine, expect);

  auto allocs = read_json(dir + "/allocations.json");
  ASSERT_TRUE(allocs.IsArray());
  int found_b = 0;
  for (auto& a : allocs.GetArray()) {
    EXPECT_NE(a["address"].GetUint64(), kA);  // freed
    if (a["address"].GetUint64() != kB) continue;
    ++found_b;
    EXPECT_EQ(a["size"].GetUint64(), 2u << 20);
    EXPECT_EQ(a["device_id"].GetInt(), kDevice);
    EXPECT_STREQ(a["api"].GetString(), "cuMemAlloc_v2");
    if (a["stack_id"].GetUint64()) stack_ids.insert(a["stack_id"].GetUint64());
  }
  EXPECT_EQ(found_b, 1);

  auto stacks = read_json(dir + "/stacks.json");
  ASSERT_TRUE(stacks.IsArray());
  std::set<uint64_t> written;
  for (auto& s : stacks.GetArray()) written.insert(s["stack_id"].GetUint64());
  for (uint64_t id : stack_ids) EXPECT_TRUE(written.count(id)) << "stack " << id << " referred to, not written";

  auto meta = read_json(dir + "/metadata.json");
  ASSERT_TRUE(meta.IsObject());
  EXPECT_EQ(meta["requested_bytes"].GetUint64(), kFailSize);
  EXPECT_EQ(meta["device_id"].GetInt(), kDevice);
  EXPECT_STREQ(meta["api"].GetString(), "cudaMalloc");
  EXPECT_TRUE(read_json(dir + "/environment.json").IsObject());
  const std::string summary = read_text(dir + "/summary.txt");
  EXPECT_NE(summary.find("cudaMalloc"), std::string::npos) << summary;
}

TEST_F(BundleFilesTest, VerdictRewriteReplacesOnlyTheVerdictFiles) {
  std::string error;
  ASSERT_TRUE(write(&error)) << error;
  const std::string events_before = read_text(dir + "/events.json");
  const std::string summary_before = read_text(dir + "/summary.txt");
  in.verdict.outcome = Outcome::kFatal;
  ASSERT_TRUE(rewrite_verdict_files(dirfd, in, build, buf(), &error)) << error;
  EXPECT_EQ(dump_json_member_string(read_json(dir + "/manifest.json"), "outcome"), "fatal");
  EXPECT_EQ(dump_json_member_string(read_json(dir + "/metadata.json"), "outcome"), "fatal");
  EXPECT_EQ(read_text(dir + "/events.json"), events_before);
  EXPECT_NE(read_text(dir + "/summary.txt"), summary_before);
  for (const auto& n : list_dir(dir)) EXPECT_EQ(n.find(".new"), std::string::npos) << n;
  std::vector<std::string> listed;
  const rapidjson::Document manifest = read_json(dir + "/manifest.json");  // outlives the loop (a temporary would not)
  for (auto& f : manifest["files"].GetArray()) listed.push_back(f.GetString());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, list_dir(dir));
}

TEST_F(BundleFilesTest, FullDiskFailsTheBundleWithTheReason) {
  std::string error;
  {
    FileSizeLimit limit(300);  // events.json is longer than that
    EXPECT_FALSE(write(&error));
  }
  EXPECT_NE(error.find("cannot write events.json"), std::string::npos) << error;
  EXPECT_NE(error.find(std::strerror(EFBIG)), std::string::npos) << error;
}

TEST_F(BundleFilesTest, FullDiskDuringTheRewriteKeepsTheOldFiles) {
  std::string error;
  ASSERT_TRUE(write(&error)) << error;
  const std::string meta_before = read_text(dir + "/metadata.json");
  const std::string manifest_before = read_text(dir + "/manifest.json");
  in.verdict.outcome = Outcome::kFatal;
  {
    FileSizeLimit limit(64);
    EXPECT_FALSE(rewrite_verdict_files(dirfd, in, build, buf(), &error));
  }
  EXPECT_NE(error.find("cannot write metadata.json"), std::string::npos) << error;
  EXPECT_EQ(read_text(dir + "/metadata.json"), meta_before);
  EXPECT_EQ(read_text(dir + "/manifest.json"), manifest_before);
  for (const auto& n : list_dir(dir)) EXPECT_EQ(n.find(".new"), std::string::npos) << n;
}

// OutFile and FdOut on their own.
namespace {

struct Dir {
  Dir() : path(unit_files::make_tmpdir()), fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~Dir() { close(fd); }
  std::string path;
  int fd;
};

}  // namespace

TEST(OutFile, RefusesANameThatExistsAndAPlantedSymlink) {
  Dir d;
  char storage[256];
  BundleFiles files;
  files.dirfd = d.fd;
  files.buf = WriteBuffer{storage, sizeof storage};
  ASSERT_EQ(symlinkat("/tmp/gpumemrec-unit-target-never-written", d.fd, "stacks.json"), 0);
  int fd = openat(d.fd, "summary.txt", O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "old", 3), 3);
  close(fd);
  for (const char* name : {"stacks.json", "summary.txt"}) {
    OutFile f(files, name);
    EXPECT_FALSE(f.ok()) << name;
    std::string error;
    EXPECT_FALSE(f.finish(&error));
    EXPECT_EQ(error, std::string("cannot create ") + name + ": " + std::strerror(EEXIST));
  }
  EXPECT_TRUE(files.names.empty());
  EXPECT_EQ(read_text(d.path + "/summary.txt"), "old");
  EXPECT_NE(access("/tmp/gpumemrec-unit-target-never-written", F_OK), 0);
}

TEST(OutFile, StreamsThroughASmallBufferAndListsTheName) {
  Dir d;
  char storage[7];  // many drains
  BundleFiles files;
  files.dirfd = d.fd;
  files.buf = WriteBuffer{storage, sizeof storage};
  std::string expect;
  {
    OutFile f(files, "events.json");
    ASSERT_TRUE(f.ok());
    for (int i = 0; i < 300; ++i) {
      const std::string piece = std::to_string(i) + ",";
      f.out().write(piece.c_str());
      expect += piece;
    }
    f.out().Put('!');
    expect += '!';
    std::string error;
    EXPECT_TRUE(f.finish(&error)) << error;
    EXPECT_EQ(f.out().bytes_written(), expect.size());
  }
  EXPECT_EQ(read_text(d.path + "/events.json"), expect);
  EXPECT_EQ(files.names, std::vector<std::string>{"events.json"});
}

TEST(OutFile, ShortWriteThenFullDiskIsAnError) {
  Dir d;
  std::vector<char> storage(4096);
  BundleFiles files;
  files.dirfd = d.fd;
  files.buf = WriteBuffer{storage.data(), storage.size()};
  std::string error;
  {
    OutFile f(files, "events.json");
    ASSERT_TRUE(f.ok());
    // The second drain of the 4096-byte buffer is cut short at 5000 bytes,
    // the rest of it fails.
    FileSizeLimit limit(5000);
    const std::string kb(1000, 'x');
    for (int i = 0; i < 10; ++i) f.out().write(kb.c_str(), kb.size());
    EXPECT_FALSE(f.finish(&error));
    EXPECT_EQ(f.out().error(), EFBIG);
  }
  EXPECT_EQ(error, std::string("cannot write events.json: ") + std::strerror(EFBIG));
  struct stat st;
  ASSERT_EQ(stat((d.path + "/events.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 5000);  // what the short write put there; the caller discards the bundle
}

TEST(FdOut, ClosedPipeIsAnErrorNotASignal) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  close(p[0]);
  sighandler_t old = signal(SIGPIPE, SIG_IGN);
  char storage[16];
  FdOut out(p[1], storage, sizeof storage);
  out.write("more than sixteen bytes of output");
  EXPECT_FALSE(out.finish());
  EXPECT_EQ(out.error(), EPIPE);
  EXPECT_EQ(out.bytes_written(), 0u);
  signal(SIGPIPE, old);
  close(p[1]);
}

TEST(FdOut, FullDeviceIsAnError) {
  int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  char storage[64];
  FdOut out(fd, storage, sizeof storage);
  out.write("x");
  EXPECT_FALSE(out.finish());
  EXPECT_EQ(out.error(), ENOSPC);
  close(fd);
}
