// bundle_reader: values land in the model; every kind of bad input is one
// clear error naming the file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/bundle_reader.h"

using namespace gpumemrec::model;  // the tools' bundle model

using namespace gpumemrec;

namespace {

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/gmr-reader-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Dir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
  }
  void remove(const std::string& name) const { ::unlink((path_ + "/" + name).c_str()); }

 private:
  std::string path_;
};

const char* kManifest =
    R"({"schema_version": 1, "bundle_name": "oom_dump_x", "created_at_utc": "2026-11-21T14:03:05Z",
        "reason": "oom", "backend": "cuda", "event_count": 2,
        "files": ["metadata.json", "events.json", "allocations.json", "stacks.json", "manifest.json"],
        "generator": "test", "pid": 4242})";
const char* kMetadata =
    R"({"reason": "oom", "api": "cudaMalloc", "error_code": 2, "error_name": "cudaErrorMemoryAllocation",
        "requested_bytes": 536870912, "device_id": 0, "device_free_bytes": null, "device_total_bytes": 1073741824,
        "live_bytes": 18446744073709551615, "live_allocations": 1, "live_bytes_by_device": {"0": 5, "3": 7},
        "thread_id": 4243, "stack_id": 17, "context": "ctx", "backend": "cuda", "captured_event_count": 2,
        "total_event_count": 9, "failed_calls_before_dump": 0, "timestamp": 1763733785.5,
        "custom_metadata": {"rank": "3", "world_size": 8, "hostname": "node7"}})";
const char* kEvents =
    R"([{"seq": 8, "timestamp": 1763733785.25, "event_type": "allocation", "memory_allocated": 100,
         "memory_reserved": 150, "memory_change": 100, "device_id": 0, "context": "cudaMalloc", "backend": "cuda",
         "api": "cudaMalloc", "memory_type": "device", "address": 18446744073709551615, "size": 100, "result": 0,
         "thread_id": 4243, "stack_id": 17, "duration_ns": 3100, "stream": 0, "future_key": {"x": [1, 2]}},
        {"seq": 9, "timestamp": 1763733785, "event_type": "oom", "memory_allocated": 100, "memory_change": -5,
         "device_id": -1, "api": "cudaMalloc", "memory_type": "device", "address": 0, "size": 536870912,
         "result": 2, "thread_id": 4243, "stack_id": 0, "duration_ns": 1, "stream": 7}])";
const char* kAllocations =
    R"([{"address": 140230000000000, "size": 100, "device_id": 0, "api": "cudaMalloc", "memory_type": "device",
         "timestamp": 1763733784.5, "thread_id": 4243, "stack_id": 17, "seq": 8}])";
const char* kStacks =
    R"([{"stack_id": 17, "python": "captured", "frames": [
         {"kind": "python", "module": "", "offset": 0, "function": "forward", "file": "/m.py", "line": 42},
         {"kind": "native", "module": "/usr/lib/libx.so", "offset": 4660, "function": "", "file": "", "line": 0}]}])";

void write_good(const Dir& d) {
  d.write("manifest.json", kManifest);
  d.write("metadata.json", kMetadata);
  d.write("events.json", kEvents);
  d.write("allocations.json", kAllocations);
  d.write("stacks.json", kStacks);
}

std::string read_error(const std::string& dir) {
  Bundle b;
  ReadError err;
  EXPECT_FALSE(read_bundle(dir, ReadOptions(), &b, &err));
  std::string m = err.message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  return m;
}

}  // namespace

TEST(BundleReader, ReadsEveryField) {
  Dir d;
  write_good(d);
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &b, &err)) << err.message();
  EXPECT_EQ(b.manifest.schema_version, 1);
  EXPECT_EQ(b.manifest.pid, 4242);
  EXPECT_EQ(b.metadata.requested_bytes, 536870912u);
  EXPECT_FALSE(b.metadata.device_free_bytes.has_value());
  EXPECT_EQ(*b.metadata.device_total_bytes, 1073741824u);
  EXPECT_EQ(b.metadata.live_bytes, UINT64_MAX);
  EXPECT_EQ(b.metadata.live_bytes_by_device.at(3), 7u);
  ASSERT_TRUE(b.metadata.rank.has_value());
  EXPECT_EQ(*b.metadata.rank, 3);
  EXPECT_EQ(b.hostname(), "node7");
  ASSERT_EQ(b.events.size(), 2u);
  const Event& e = b.events[0];
  EXPECT_EQ(e.seq, 8u);
  EXPECT_DOUBLE_EQ(e.timestamp, 1763733785.25);
  EXPECT_EQ(e.kind, EventKind::kAlloc);
  EXPECT_EQ(e.address, UINT64_MAX);
  EXPECT_EQ(b.str(e.api), "cudaMalloc");
  EXPECT_EQ(e.duration_ns, 3100u);
  EXPECT_EQ(e.memory_reserved, 150u);
  const Event& o = b.events[1];
  EXPECT_EQ(o.memory_reserved, 100u);  // left out by the shim: memory_allocated
  EXPECT_EQ(o.kind, EventKind::kOom);
  EXPECT_EQ(o.device_id, -1);
  EXPECT_EQ(o.memory_change, -5);
  EXPECT_EQ(o.result, 2);
  EXPECT_EQ(o.stream, 7u);
  EXPECT_DOUBLE_EQ(o.timestamp, 1763733785.0);
  EXPECT_EQ(b.events[0].api, b.events[1].api);  // interned
  ASSERT_EQ(b.allocations.size(), 1u);
  EXPECT_EQ(b.allocations[0].address, 140230000000000u);
  const Stack* s = b.find_stack(17);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->frames.size(), 2u);
  EXPECT_EQ(format_frame(s->frames[0]), "forward (/m.py:42)");
  EXPECT_EQ(format_frame(s->frames[1]), "libx.so+0x1234");
  EXPECT_FALSE(b.environment.present);  // optional
}

// A signal bundle's requests (metadata signal_requests): read when present,
// absent or null = none, a wrong type is one error naming the key.
TEST(BundleReader, SignalRequests) {
  Dir d;
  write_good(d);
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &b, &err)) << err.message();
  EXPECT_FALSE(b.metadata.signal_requests.has_value());
  std::string md = kMetadata;
  md.insert(md.rfind('}'), R"(, "signal_requests": {"signal": 12, "count": 3, "first_ns": 1763733785000000000,
        "last_ns": 1763733785500000000, "sender_pid": 1234})");
  d.write("metadata.json", md);
  b = Bundle();
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &b, &err)) << err.message();
  ASSERT_TRUE(b.metadata.signal_requests.has_value());
  const SignalRequests& r = *b.metadata.signal_requests;
  EXPECT_EQ(r.signal, 12);
  EXPECT_EQ(r.count, 3u);
  EXPECT_EQ(r.first_ns, 1763733785000000000u);
  EXPECT_EQ(r.last_ns, 1763733785500000000u);
  EXPECT_EQ(r.sender_pid, 1234);
  md = kMetadata;
  md.insert(md.rfind('}'), R"(, "signal_requests": null)");
  d.write("metadata.json", md);
  b = Bundle();
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &b, &err)) << err.message();
  EXPECT_FALSE(b.metadata.signal_requests.has_value());
  md = kMetadata;
  md.insert(md.rfind('}'), R"(, "signal_requests": [1])");
  d.write("metadata.json", md);
  EXPECT_NE(read_error(d.path()).find("key 'signal_requests' is not an object"), std::string::npos);
  md = kMetadata;
  md.insert(md.rfind('}'), R"(, "signal_requests": {"count": "many"})");
  d.write("metadata.json", md);
  const std::string m = read_error(d.path());
  EXPECT_NE(m.find("key 'signal_requests': key 'count' is not a number"), std::string::npos) << m;
}

TEST(BundleReader, LightReadSkipsBigFiles) {
  Dir d;
  write_good(d);
  d.write("events.json", "[garbage");
  Bundle b;
  ReadError err;
  ReadOptions o;
  o.events = o.allocations = o.stacks = false;
  EXPECT_TRUE(read_bundle(d.path(), o, &b, &err)) << err.message();
}

TEST(BundleReader, MissingDirectoryAndFile) {
  EXPECT_NE(read_error("/no/such/bundle").find("/no/such/bundle: no such file"), std::string::npos);
  Dir d;
  d.write("f.txt", "x");
  EXPECT_NE(read_error(d.path() + "/f.txt").find("got a file"), std::string::npos);
}

TEST(BundleReader, NotABundle) {
  Dir d;
  EXPECT_NE(read_error(d.path()).find("manifest.json is missing"), std::string::npos);
}

TEST(BundleReader, WrongSchemaVersion) {
  Dir d;
  write_good(d);
  d.write("manifest.json", R"({"schema_version": 99})");
  std::string m = read_error(d.path());
  EXPECT_NE(m.find("manifest.json: unsupported schema_version 99"), std::string::npos) << m;
  d.write("manifest.json", R"({"schema_version": "1"})");
  EXPECT_NE(read_error(d.path()).find("schema_version is not an integer"), std::string::npos);
  d.write("manifest.json", R"({"bundle_name": "x"})");
  EXPECT_NE(read_error(d.path()).find("no schema_version"), std::string::npos);
}

TEST(BundleReader, TruncatedAndCorruptJson) {
  Dir d;
  write_good(d);
  std::string ev = kEvents;
  d.write("events.json", ev.substr(0, ev.size() / 2));
  std::string m = read_error(d.path());
  EXPECT_NE(m.find("events.json: truncated JSON"), std::string::npos) << m;
  d.write("events.json", "[{\"seq\": 1,, }]");
  m = read_error(d.path());
  EXPECT_NE(m.find("events.json: invalid JSON at byte"), std::string::npos) << m;
  d.write("events.json", "");
  EXPECT_NE(read_error(d.path()).find("events.json: empty file"), std::string::npos);
  d.write("events.json", "[1, 2]");
  EXPECT_NE(read_error(d.path()).find("events.json: event #0 is not a JSON object"), std::string::npos);
  d.write("events.json", "{}");
  EXPECT_NE(read_error(d.path()).find("expected a JSON array"), std::string::npos);
  d.write("events.json", "[{\"size\": \"big\"}]");
  EXPECT_NE(read_error(d.path()).find("key 'size' is not a number"), std::string::npos);
  d.write("events.json", kEvents);
  d.write("metadata.json", "{\"api\": 5}");
  EXPECT_NE(read_error(d.path()).find("metadata.json: key 'api' is not a string"), std::string::npos);
  d.write("metadata.json", "[]");
  EXPECT_NE(read_error(d.path()).find("metadata.json: expected a JSON object"), std::string::npos);
  d.write("metadata.json", kMetadata);
  d.write("stacks.json", "[{\"stack_id\": 1, \"frames\": 3}]");
  EXPECT_NE(read_error(d.path()).find("stacks.json: stack #0: key 'frames' is not an array"), std::string::npos);
}

TEST(BundleReader, FileListedInManifestIsMissing) {
  Dir d;
  write_good(d);
  d.remove("allocations.json");
  std::string m = read_error(d.path());
  EXPECT_NE(m.find("allocations.json: missing file"), std::string::npos) << m;
}

namespace {
std::string big_events(size_t n, const std::string& middle_context) {
  std::string s = "[\n";
  for (size_t i = 0; i < n; ++i) {
    std::string ctx = i == n / 2 && !middle_context.empty() ? middle_context : (i % 3 ? "cudaMalloc" : "cuMemAlloc_v2");
    s += "{\"seq\":" + std::to_string(i + 1) + ",\"timestamp\":" + std::to_string(1000 + i) +
         ".5,\"event_type\":\"" + (i % 2 ? "deallocation" : "allocation") + "\",\"memory_allocated\":" +
         std::to_string(i * 7) + ",\"device_id\":" + std::to_string(i % 3) + ",\"context\":\"" + ctx +
         "\",\"api\":\"" + (i % 5 ? "cudaMalloc" : "api" + std::to_string(i % 7)) + "\",\"memory_type\":\"device\"," +
         "\"address\":" + std::to_string(0x7f0000000000ull + i * 4096) + ",\"size\":" + std::to_string(i) +
         ",\"stack_id\":" + std::to_string(i % 11) + ",\"padding\":\"" + std::string(200, 'p') + "\"}";
    s += i + 1 < n ? ",\n" : "\n";
  }
  return s + "]\n";
}

void expect_same(const Bundle& a, const Bundle& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    ASSERT_EQ(x.seq, y.seq);
    ASSERT_EQ(x.timestamp, y.timestamp);
    ASSERT_EQ(x.address, y.address);
    ASSERT_EQ(x.size, y.size);
    ASSERT_EQ(x.device_id, y.device_id);
    ASSERT_EQ(x.kind, y.kind);
    ASSERT_EQ(a.str(x.api), b.str(y.api)) << i;
    ASSERT_EQ(a.str(x.context), b.str(y.context)) << i;
  }
}
}  // namespace

TEST(BundleReader, ParallelParseMatchesSequential) {
  Dir d;
  write_good(d);
  d.write("events.json", big_events(90000, ""));  // > 16 MiB: parsed on two threads
  Bundle par, seq;
  ReadError err;
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &par, &err)) << err.message();
  ReadOptions one;
  one.threads = 1;
  ASSERT_TRUE(read_bundle(d.path(), one, &seq, &err)) << err.message();
  ASSERT_EQ(par.events.size(), 90000u);
  expect_same(par, seq);
}

TEST(BundleReader, ParallelParseSurvivesACutInsideAString) {
  Dir d;
  write_good(d);
  // The middle of the file is inside a 20 MB string that looks like "},{".
  std::string trap;
  for (int i = 0; i < 3000000; ++i) trap += "x},{\\\"";  // 18 MB
  d.write("events.json", big_events(1001, trap));
  Bundle par, seq;
  ReadError err;
  ASSERT_TRUE(read_bundle(d.path(), ReadOptions(), &par, &err)) << err.message();
  ReadOptions one;
  one.threads = 1;
  ASSERT_TRUE(read_bundle(d.path(), one, &seq, &err)) << err.message();
  expect_same(par, seq);
}

TEST(BundleReader, ParallelParseReportsTruncation) {
  Dir d;
  write_good(d);
  std::string ev = big_events(90000, "");
  d.write("events.json", ev.substr(0, ev.size() - 1000));
  std::string m = read_error(d.path());
  EXPECT_NE(m.find("events.json: truncated JSON"), std::string::npos) << m;
}
