// The out-of-memory verdict fields (manifest/metadata `outcome`,
// `outcome_detail`, `recovery`, `recovered_failures`): read when present,
// defaults when absent (older bundles, signal/exit bundles), one clear error
// for a wrong type, never a crash; and how the tools' OOM marks use them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/bundle_reader.h"
#include "tools/analysis.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace {

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/gmr-verdict-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Dir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ + "/" + name) << text; }

 private:
  std::string path_;
};

std::string manifest(const std::string& extra) {
  return R"({"schema_version": 1, "bundle_name": "oom_dump_x", "reason": "oom", "backend": "cuda",
             "event_count": 3, "files": ["metadata.json", "events.json", "allocations.json", "stacks.json",
             "manifest.json"], "pid": 4242)" + extra + "}";
}

// The failing OOM (thread 4243, device 0, 8 GiB), no retry after it (the
// ring is cut at the failure), and an earlier OOM of thread 7 that the same
// thread's larger allocation resolved.
const char* kEvents =
    R"([{"seq": 1, "timestamp": 10.0, "event_type": "oom", "device_id": 0, "api": "cudaMalloc", "size": 100,
         "result": 2, "thread_id": 7},
        {"seq": 2, "timestamp": 10.5, "event_type": "allocation", "device_id": 0, "api": "cudaMalloc", "size": 200,
         "result": 0, "thread_id": 7, "address": 4096},
        {"seq": 3, "timestamp": 11.0, "event_type": "oom", "device_id": 0, "api": "cudaMalloc", "size": 8589934592,
         "result": 2, "thread_id": 4243}])";

std::string metadata(const std::string& extra) {
  return R"({"reason": "oom", "api": "cudaMalloc", "requested_bytes": 8589934592, "device_id": 0,
             "thread_id": 4243, "timestamp": 11.0)" + extra + "}";
}

void write_bundle(const Dir& d, const std::string& manifest_extra, const std::string& metadata_extra) {
  d.write("manifest.json", manifest(manifest_extra));
  d.write("metadata.json", metadata(metadata_extra));
  d.write("events.json", kEvents);
  d.write("allocations.json", "[]");
  d.write("stacks.json", R"([{"stack_id": 5, "python": "captured", "frames": [{"kind": "python",
                              "function": "train_step", "file": "/t.py", "line": 3}]}])");
}

bool read(const Dir& d, Bundle* b, ReadError* err) { return read_bundle(d.path(), ReadOptions(), b, err); }

std::string error_of(const std::string& metadata_extra) {
  Dir d;
  write_bundle(d, "", metadata_extra);
  Bundle b;
  ReadError err;
  EXPECT_FALSE(read(d, &b, &err)) << metadata_extra;
  std::string m = err.message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("metadata.json"), std::string::npos) << m;
  return m;
}

const char* kRecovered =
    R"J(, "outcome": "recovered", "outcome_detail": "recovered after freeing 3.20 GiB of cache (12.3 ms later)",
       "recovery": {"after_ms": 12.3, "freed_bytes": 3435973837, "retry_size": 8589934592,
                    "retry_api": "cudaMalloc", "thread_id": 4243},
       "recovered_failures": {"count": 3, "listed": [
         {"timestamp": 5.5, "device_id": 1, "size": 1024, "api": "cuMemCreate", "thread_id": 9,
          "stack_id": 5, "after_ms": 0.25, "freed_bytes": 2048}]})J";

}  // namespace

TEST(VerdictReader, ReadsEveryField) {
  Dir d;
  write_bundle(d, R"(, "outcome": "recovered")", kRecovered);
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read(d, &b, &err)) << err.message();
  EXPECT_EQ(b.manifest.outcome, "recovered");
  EXPECT_EQ(b.outcome(), "recovered");
  EXPECT_EQ(b.outcome_detail(), "recovered after freeing 3.20 GiB of cache (12.3 ms later)");
  ASSERT_TRUE(b.metadata.recovery.has_value());
  EXPECT_DOUBLE_EQ(b.metadata.recovery->after_ms, 12.3);
  EXPECT_EQ(b.metadata.recovery->freed_bytes, 3435973837u);
  EXPECT_EQ(b.metadata.recovery->retry_size, 8589934592u);
  EXPECT_EQ(b.metadata.recovery->retry_api, "cudaMalloc");
  EXPECT_EQ(b.metadata.recovery->thread_id, 4243u);
  EXPECT_EQ(b.metadata.recovered_count, 3u);
  ASSERT_EQ(b.metadata.recovered_listed.size(), 1u);
  const RecoveredFailure& f = b.metadata.recovered_listed[0];
  EXPECT_DOUBLE_EQ(f.timestamp, 5.5);
  EXPECT_EQ(f.device_id, 1);
  EXPECT_EQ(f.size, 1024u);
  EXPECT_EQ(f.api, "cuMemCreate");
  EXPECT_EQ(f.thread_id, 9u);
  EXPECT_EQ(f.stack_id, 5u);
  EXPECT_DOUBLE_EQ(f.after_ms, 0.25);
  EXPECT_EQ(f.freed_bytes, 2048u);
}

TEST(VerdictReader, AbsentInOlderBundles) {
  Dir d;
  write_bundle(d, "", "");
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read(d, &b, &err)) << err.message();
  EXPECT_EQ(b.outcome(), "");
  EXPECT_EQ(b.outcome_detail(), "");
  EXPECT_FALSE(b.metadata.recovery.has_value());
  EXPECT_EQ(b.metadata.recovered_count, 0u);
  EXPECT_TRUE(b.metadata.recovered_listed.empty());
}

TEST(VerdictReader, NullMeansAbsent) {
  Dir d;
  write_bundle(d, R"(, "outcome": null)",
               R"(, "outcome": null, "outcome_detail": null, "recovery": null, "recovered_failures": null)");
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read(d, &b, &err)) << err.message();
  EXPECT_EQ(b.outcome(), "");
  EXPECT_FALSE(b.metadata.recovery.has_value());
  EXPECT_EQ(b.metadata.recovered_count, 0u);
}

// The files are replaced one after the other when the verdict is known: a
// process that dies in between leaves one of them at "unknown".
TEST(VerdictReader, DecidedVerdictWinsOverUnknown) {
  struct Case {
    const char* manifest;
    const char* metadata;
    const char* want;
    const char* detail;
  } cases[] = {
      {R"(, "outcome": "unknown")", R"(, "outcome": "fatal", "outcome_detail": "not recovered: x")", "fatal",
       "not recovered: x"},
      {R"(, "outcome": "fatal")", R"(, "outcome": "unknown", "outcome_detail": "the process ended")", "fatal", ""},
      {R"(, "outcome": "unknown")", R"(, "outcome": "unknown", "outcome_detail": "d")", "unknown", "d"},
      {R"(, "outcome": "fatal")", "", "fatal", ""},
      {"", R"(, "outcome": "recovered")", "recovered", ""},
  };
  for (const Case& c : cases) {
    Dir d;
    write_bundle(d, c.manifest, c.metadata);
    Bundle b;
    ReadError err;
    ASSERT_TRUE(read(d, &b, &err)) << err.message();
    EXPECT_EQ(b.outcome(), c.want) << c.manifest << c.metadata;
    EXPECT_EQ(b.outcome_detail(), c.detail) << c.manifest << c.metadata;
  }
}

TEST(VerdictReader, WrongTypesAreOneClearError) {
  EXPECT_NE(error_of(R"(, "outcome": 1)").find("key 'outcome' is not a string"), std::string::npos);
  EXPECT_NE(error_of(R"(, "outcome": ["fatal"])").find("key 'outcome' is not a string"), std::string::npos);
  EXPECT_NE(error_of(R"(, "outcome_detail": {})").find("key 'outcome_detail' is not a string"), std::string::npos);
  EXPECT_NE(error_of(R"(, "recovery": "yes")").find("key 'recovery' is not an object or null"), std::string::npos);
  EXPECT_NE(error_of(R"(, "recovery": {"after_ms": "soon"})").find("recovery: key 'after_ms' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": 3)").find("key 'recovered_failures' is not an object"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"count": -1})").find("key 'count' is negative"), std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"count": -1e300})").find("key 'count' is negative"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"count": "3"})").find("key 'count' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"listed": {}})").find("key 'listed' is not an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"listed": [1]})").find("recovered_failures.listed #0 is not a JSON object"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "recovered_failures": {"listed": [{}, {"device_id": 99999}]})")
                .find("recovered_failures.listed #1: key 'device_id' out of range"),
            std::string::npos);
  Dir d;
  write_bundle(d, R"(, "outcome": 7)", "");
  Bundle b;
  ReadError err;
  ASSERT_FALSE(read(d, &b, &err));
  EXPECT_NE(err.message().find("manifest.json: key 'outcome' is not a string"), std::string::npos) << err.message();
}

TEST(VerdictReader, HugeCountsAndListsAreBounded) {
  Dir d;
  write_bundle(d, "", R"(, "recovered_failures": {"count": 1e300})");
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read(d, &b, &err)) << err.message();
  EXPECT_EQ(b.metadata.recovered_count, UINT64_MAX);  // saturates
  // A million listed entries: the first kMaxRecoveredListed are kept; the
  // count is at least the number listed even when the file says less.
  std::string listed;
  for (int i = 0; i < 1000000; ++i) listed += i ? ",{\"size\":" + std::to_string(i) + "}" : "{\"size\":0}";
  Dir d2;
  write_bundle(d2, "", R"(, "recovered_failures": {"count": 2, "listed": [)" + listed + "]}");
  Bundle b2;
  ASSERT_TRUE(read(d2, &b2, &err)) << err.message();
  EXPECT_EQ(b2.metadata.recovered_count, 1000000u);
  ASSERT_EQ(b2.metadata.recovered_listed.size(), kMaxRecoveredListed);
  EXPECT_EQ(b2.metadata.recovered_listed.back().size, kMaxRecoveredListed - 1);
}

TEST(VerdictMarks, OwnFailureTakesTheVerdict) {
  struct Case {
    const char* outcome;
    bool own_recovered;
    const char* verdict;
  } cases[] = {
      {"", false, ""},  // older bundle: inferred, and the ring has no retry
      {R"(, "outcome": "recovered")", true, "recovered"},
      {R"(, "outcome": "fatal")", false, "fatal"},
      {R"(, "outcome": "unknown")", false, "unknown"},
  };
  for (const Case& c : cases) {
    Dir d;
    write_bundle(d, "", c.outcome);
    Bundle b;
    ReadError err;
    ASSERT_TRUE(read(d, &b, &err)) << err.message();
    EXPECT_EQ(gpumemrec::analysis::failing_oom_event(b), 2);
    auto marks = gpumemrec::analysis::oom_marks(b);
    ASSERT_EQ(marks.size(), 2u);
    EXPECT_TRUE(marks[0].recovered) << "thread 7's earlier OOM stays inferred";
    EXPECT_EQ(marks[0].verdict, "");
    EXPECT_EQ(marks[1].recovered, c.own_recovered) << c.outcome;
    EXPECT_EQ(marks[1].verdict, c.verdict) << c.outcome;
  }
}

TEST(VerdictMarks, NoOwnEventWhenTheRingDoesNotHoldIt) {
  Dir d;
  write_bundle(d, "", R"(, "outcome": "fatal")");
  d.write("events.json", "[]");
  Bundle b;
  ReadError err;
  ASSERT_TRUE(read(d, &b, &err)) << err.message();
  EXPECT_EQ(gpumemrec::analysis::failing_oom_event(b), -1);
  EXPECT_TRUE(gpumemrec::analysis::oom_marks(b).empty());
}
