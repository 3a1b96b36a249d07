// The bundle writer and dumper, driven through the recorder's own API (the
// same calls the hooks make), with the files read back and checked.
#include <dirent.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/dumper.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

std::string make_tmpdir() {
  char tmpl[] = "/tmp/gpumemrec-unit-XXXXXX";
  return mkdtemp(tmpl);
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> out;
  if (DIR* dir = opendir(d.c_str())) {
    while (dirent* e = readdir(dir))
      if (e->d_name[0] != '.' || std::string(e->d_name).rfind(".tmp", 0) == 0) out.push_back(e->d_name);
    closedir(dir);
  }
  return out;
}

// The writer thread publishes the bundle a moment after the failed call
// returned (a grace period for the verdict, then the files): wait for it.
std::vector<std::string> wait_for_bundles(const std::string& d, size_t n) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) {
    names = list_dir(d);
    size_t published = 0;
    for (auto& name : names) published += name.rfind("oom_dump_", 0) == 0;
    if (published >= n && published == names.size()) break;
    usleep(10000);
  }
  return names;
}

rapidjson::Document read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  EXPECT_FALSE(d.HasParseError()) << path;
  return d;
}

void fail_alloc(uint64_t size) {
  FailureInfo f;
  if (record_alloc_failure(HookId::cudaMalloc, 0, size, 0, MemoryType::kDevice, monotonic_ns(), 2, true,
                           DumpReason::kOom, &f))
    dumper_on_failure(f);
}

}  // namespace

TEST(BundleWriter, WritesACompleteBundleOnOom) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const std::string dir = make_tmpdir() + "/nested/dumps";  // created on demand
  r->cfg.dir = dir;
  r->cfg.episode_ms = 60000;

  const uint64_t t0 = monotonic_ns();  // the events' clock (recorder.cpp)
  record_alloc(HookId::cudaMalloc, 0, 0x7f0000001000, 4096, 0, MemoryType::kDevice, t0, 0);
  record_alloc(HookId::cuMemAlloc_v2, 0, 0x7f0000100000, 1 << 20, 0, MemoryType::kDevice, t0, 0);
  record_alloc(HookId::cuMemCreate, 1, 0xabc, 2 << 20, 0, MemoryType::kPhysical, t0, 0);
  PendingFree p = begin_free(0x7f0000001000, MemoryType::kDevice);
  EXPECT_TRUE(p.known);
  end_free(HookId::cudaFree, p, 0x7f0000001000, -1, 0, MemoryType::kDevice, monotonic_ns(), 0);
  // Unknown pointer: recorded, size 0, nothing subtracted.
  PendingFree unknown = begin_free(0x1234, MemoryType::kDevice);
  EXPECT_FALSE(unknown.known);
  end_free(HookId::cudaFree, unknown, 0x1234, -1, 0, MemoryType::kDevice, monotonic_ns(), 1);

  fail_alloc(3ull << 30);
  fail_alloc(3ull << 30);  // same episode: no second bundle

  auto names = wait_for_bundles(dir, 1);
  ASSERT_EQ(names.size(), 1u);
  const std::string bundle = dir + "/" + names[0];
  EXPECT_EQ(names[0].rfind("oom_dump_", 0), 0u);
  EXPECT_NE(names[0].find("_cuda_1"), std::string::npos);

  struct stat st;
  ASSERT_EQ(stat(bundle.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto manifest = read_json(bundle + "/manifest.json");
  EXPECT_EQ(manifest["schema_version"].GetInt(), 1);
  EXPECT_EQ(std::string(manifest["bundle_name"].GetString()), names[0]);
  EXPECT_EQ(std::string(manifest["reason"].GetString()), "oom");
  EXPECT_EQ(std::string(manifest["backend"].GetString()), "cuda");
  // Nobody retried yet and the episode lasts 60 s: the verdict is not known.
  ASSERT_TRUE(manifest.HasMember("outcome"));
  EXPECT_EQ(std::string(manifest["outcome"].GetString()), "unknown");
  ASSERT_TRUE(manifest["created_at_utc"].IsString());
  const auto& files = manifest["files"];
  std::vector<std::string> listed;
  for (auto& f : files.GetArray()) listed.push_back(f.GetString());
  for (const char* f : {"metadata.json", "events.json", "allocations.json", "stacks.json", "environment.json",
                        "summary.txt", "manifest.json"}) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), f), listed.end()) << f;
    ASSERT_EQ(stat((bundle + "/" + f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }

  auto events = read_json(bundle + "/events.json");
  ASSERT_TRUE(events.IsArray());
  ASSERT_GE(events.Size(), 6u);
  EXPECT_EQ(manifest["event_count"].GetUint64(), events.Size());
  const auto& last = events[events.Size() - 1];
  EXPECT_EQ(std::string(last["event_type"].GetString()), "oom");
  EXPECT_EQ(std::string(last["api"].GetString()), "cudaMalloc");
  EXPECT_EQ(last["size"].GetUint64(), 3ull << 30);
  EXPECT_EQ(last["result"].GetInt(), 2);
  // Time order (one thread here: seqs increase too); memory_allocated
  // follows the changes.
  for (rapidjson::SizeType i = 1; i < events.Size(); ++i) {
    EXPECT_GE(events[i]["timestamp_ns"].GetUint64(), events[i - 1]["timestamp_ns"].GetUint64());
    EXPECT_GT(events[i]["seq"].GetUint64(), events[i - 1]["seq"].GetUint64());
  }
  bool saw_free = false;
  for (auto& e : events.GetArray()) {
    for (const char* k : {"timestamp", "event_type", "memory_allocated", "memory_change",
                          "device_id", "context", "backend", "seq", "api", "address", "size", "result", "thread_id",
                          "stack_id", "duration_ns"})
      EXPECT_TRUE(e.HasMember(k)) << k;
    if (std::string(e["event_type"].GetString()) == "deallocation" && e["address"].GetUint64() == 0x7f0000001000) {
      EXPECT_EQ(e["memory_change"].GetInt64(), -4096);
      saw_free = true;
    }
  }
  EXPECT_TRUE(saw_free);

  auto allocs = read_json(bundle + "/allocations.json");
  ASSERT_TRUE(allocs.IsArray());
  ASSERT_EQ(allocs.Size(), 2u);
  EXPECT_EQ(allocs[0]["size"].GetUint64(), 2u << 20);  // largest first
  EXPECT_EQ(std::string(allocs[0]["memory_type"].GetString()), "physical");
  EXPECT_EQ(allocs[1]["address"].GetUint64(), 0x7f0000100000u);
  EXPECT_EQ(std::string(allocs[1]["api"].GetString()), "cuMemAlloc_v2");

  auto meta = read_json(bundle + "/metadata.json");
  EXPECT_EQ(std::string(meta["reason"].GetString()), "oom");
  EXPECT_EQ(std::string(meta["api"].GetString()), "cudaMalloc");
  EXPECT_EQ(meta["error_code"].GetInt(), 2);
  EXPECT_EQ(std::string(meta["error_name"].GetString()), "cudaErrorMemoryAllocation");
  EXPECT_EQ(meta["requested_bytes"].GetUint64(), 3ull << 30);
  EXPECT_EQ(meta["live_bytes"].GetUint64(), (1u << 20) + (2u << 20));
  EXPECT_EQ(meta["live_allocations"].GetUint64(), 2u);
  EXPECT_TRUE(meta["device_free_bytes"].IsNull());  // no driver in this process
  EXPECT_TRUE(meta["custom_metadata"].IsObject());

  auto env = read_json(bundle + "/environment.json");
  EXPECT_EQ(env["pid"].GetInt(), getpid());
  EXPECT_TRUE(env["modules"].IsArray());

  std::ifstream summary(bundle + "/summary.txt");
  std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("cudaMalloc"), std::string::npos);
  EXPECT_NE(text.find("3.00 GiB"), std::string::npos);
  EXPECT_NE(text.find("Top allocation sites"), std::string::npos);

  // Clean up what this test added to the live table.
  PendingFree a = begin_free(0x7f0000100000, MemoryType::kDevice);
  end_free(HookId::cuMemFree_v2, a, 0x7f0000100000, -1, 0, MemoryType::kDevice, t0, 0);
  PendingFree b = begin_free(0xabc, MemoryType::kPhysical);
  end_free(HookId::cuMemRelease, b, 0xabc, -1, 0, MemoryType::kPhysical, t0, 0);
}

TEST(BundleWriter, UnwritableDirectoryIsReportedNotFatal) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const std::string base = make_tmpdir();
  const std::string file = base + "/not-a-dir";
  std::ofstream(file) << "x";
  r->cfg.dir = file + "/dumps";
  EXPECT_FALSE(dump_now(r, DumpReason::kSignal, nullptr));
  // A symlink planted where the directory should be is not followed.
  const std::string target = make_tmpdir();
  const std::string link = base + "/link";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  r->cfg.dir = link;
  EXPECT_FALSE(dump_now(r, DumpReason::kSignal, nullptr));
  EXPECT_TRUE(list_dir(target).empty());
}

TEST(BundleWriter, PrunesOldBundles) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  r->cfg.dir = make_tmpdir();
  r->cfg.max_dumps = 2;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(dump_now(r, DumpReason::kSignal, nullptr));
  EXPECT_EQ(list_dir(r->cfg.dir).size(), 2u);
  r->cfg.max_dumps = 5;
}
