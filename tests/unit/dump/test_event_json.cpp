// events.json records: the Stormlog/gpumemprof per-event fields
// (shim/dump/write/event_json.h) and the launcher identity behind them
// (shim/dump/write/launcher_env.h).
// event_json.h first: its json_out.h configures RapidJSON before any include.
#include "shim/dump/write/event_json.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <string>

#include "shim/base/hook_table.h"
#include "shim/dump/write/launcher_env.h"

using namespace gpumemrec;

namespace {

using Env = std::map<std::string, std::string>;

LauncherIdentity identity(const Env& env) {
  return launcher_identity(
      [](const char* name, void* ctx) -> const char* {
        const Env& e = *static_cast<const Env*>(ctx);
        auto it = e.find(name);
        return it == e.end() ? nullptr : it->second.c_str();
      },
      const_cast<Env*>(&env));
}

Event make_event(int device, uint64_t seq = 7) {
  Event e{};
  e.seq = seq;
  e.time_ns = 1763733785123456789ull;
  e.address = 0x7f0000000000ull;
  e.size = 4096;
  e.live_after = 1 << 20;
  e.stack_id = 3;
  e.tid = 4243;
  e.device1 = uint32_t(device + 1);
  e.duration_ns = 3100;
  e.api = uint8_t(0);
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType::kDevice);
  return e;
}

rapidjson::Document format(const Event& e, const EventJsonContext& ctx) {
  char buf[kMaxEventJson];
  std::string s(buf, format_event_json(buf, e, true, ctx));
  s += ctx.tail;
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  EXPECT_FALSE(d.HasParseError()) << s;
  EXPECT_TRUE(d.IsObject()) << s;
  return d;
}

}  // namespace

TEST(LauncherEnv, NothingSetIsRankZeroOfOne) {
  LauncherIdentity id = identity({});
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_FALSE(id.has_job_id);
}

TEST(LauncherEnv, GroupsInStormlogsOrder) {
  LauncherIdentity t = identity({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"},
                                 {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.world_size, 8);
  LauncherIdentity o = identity({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                 {"OMPI_COMM_WORLD_SIZE", "6"}, {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}});
  EXPECT_EQ(o.rank, 5);
  EXPECT_EQ(o.world_size, 6);
  LauncherIdentity s = identity({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "991"}});
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.local_rank, 2);  // no SLURM_LOCALID: the rank
  EXPECT_EQ(s.world_size, 4);
  EXPECT_TRUE(s.has_job_id);
  EXPECT_EQ(s.job_id, "991");
  LauncherIdentity p = identity({{"PMI_RANK", " 1 "}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.world_size, 2);
}

// A group that does not hold together is not trusted; the next one may be.
TEST(LauncherEnv, InvalidGroupsAreSkipped) {
  EXPECT_EQ(identity({{"RANK", "8"}, {"WORLD_SIZE", "8"}}).world_size, 1);    // rank >= world
  EXPECT_EQ(identity({{"RANK", "x"}, {"WORLD_SIZE", "8"}}).world_size, 1);    // not a number
  EXPECT_EQ(identity({{"RANK", "-1"}, {"WORLD_SIZE", "8"}}).world_size, 1);   // negative
  EXPECT_EQ(identity({{"RANK", "1"}, {"WORLD_SIZE", "0"}}).world_size, 1);    // empty world
  EXPECT_EQ(identity({{"LOCAL_RANK", "1"}}).world_size, 1);                   // no rank, no size
  LauncherIdentity n = identity({{"RANK", "2x"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(n.rank, 1);
  EXPECT_EQ(n.world_size, 2);
  LauncherIdentity l = identity({{"RANK", "1"}, {"LOCAL_RANK", "9"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(l.local_rank, 1);  // an impossible local rank: the rank
}

TEST(LauncherEnv, JobIdPrecedenceAndBlanks) {
  EXPECT_EQ(identity({{"TORCHELASTIC_RUN_ID", "te"}, {"SLURM_JOB_ID", "s"}}).job_id, "te");
  EXPECT_EQ(identity({{"TORCHELASTIC_RUN_ID", "  "}, {"PBS_JOBID", "p.1"}}).job_id, "p.1");
  EXPECT_EQ(identity({{"LSB_JOBID", "77"}}).job_id, "77");
  EXPECT_FALSE(identity({{"SLURM_JOB_ID", ""}}).has_job_id);
}

TEST(EventJson, StormlogFieldsAndExistingKeys) {
  EventJsonContext ctx;
  ctx.device_total[1] = 85097152512ull;
  LauncherIdentity id;
  id.rank = 3;
  id.local_rank = 3;
  id.world_size = 8;
  id.has_job_id = true;
  id.job_id = "12345";
  ctx.set_identity(4242, id);
  Event e = make_event(1);
  e.stream = 0x5000;
  rapidjson::Document d = format(e, ctx);
  for (const char* k : {"seq", "timestamp", "event_type", "memory_allocated", "memory_change", "device_id", "context",
                        "backend", "api", "memory_type", "address", "size", "result", "thread_id", "stack_id",
                        "duration_ns", "stream", "timestamp_ns", "device_total", "pid", "rank", "local_rank",
                        "world_size", "job_id"})
    EXPECT_TRUE(d.HasMember(k)) << k;
  EXPECT_EQ(d["stream"].GetUint64(), 0x5000u);
  EXPECT_EQ(d["timestamp_ns"].GetUint64(), 1763733785123456789ull);
  EXPECT_TRUE(d["timestamp"].IsDouble());
  EXPECT_EQ(d["device_total"].GetUint64(), 85097152512ull);
  EXPECT_EQ(d["pid"].GetInt(), 4242);
  EXPECT_EQ(d["rank"].GetInt(), 3);
  EXPECT_EQ(d["local_rank"].GetInt(), 3);
  EXPECT_EQ(d["world_size"].GetInt(), 8);
  EXPECT_STREQ(d["job_id"].GetString(), "12345");
  // Left out: the values a reader assumes (docs/bundle-format.md, "Keys left
  // out"): memory_reserved and device_used = memory_allocated, metadata {},
  // device_free unknown (not the failing event).
  for (const char* k : {"memory_reserved", "device_used", "metadata", "device_free"}) EXPECT_FALSE(d.HasMember(k)) << k;
}

// Rank 0 of 1 without a job id (no launcher variables): the identity keys are
// left out as a group (Stormlog's loader then assumes rank 0, local_rank =
// rank, world_size 1, job_id null); a rank 0 of 4, or a job id alone, writes
// what it knows.
TEST(EventJson, DefaultIdentityLeftOut) {
  EventJsonContext ctx;
  ctx.set_identity(77, LauncherIdentity());
  rapidjson::Document d = format(make_event(0), ctx);
  EXPECT_EQ(d["pid"].GetInt(), 77);
  for (const char* k : {"rank", "local_rank", "world_size", "job_id", "metadata", "stream"})
    EXPECT_FALSE(d.HasMember(k)) << k;
  LauncherIdentity four;
  four.world_size = 4;
  ctx.set_identity(77, four);
  d = format(make_event(0), ctx);
  EXPECT_EQ(d["rank"].GetInt(), 0);
  EXPECT_EQ(d["local_rank"].GetInt(), 0);
  EXPECT_EQ(d["world_size"].GetInt(), 4);
  EXPECT_FALSE(d.HasMember("job_id"));
  LauncherIdentity job;
  job.has_job_id = true;
  job.job_id = "j1";
  ctx.set_identity(77, job);
  d = format(make_event(0), ctx);
  EXPECT_STREQ(d["job_id"].GetString(), "j1");
  EXPECT_FALSE(d.HasMember("rank"));
}

TEST(EventJson, UnknownDeviceAndFailureFree) {
  EventJsonContext ctx;
  ctx.device_total[0] = 1000;
  ctx.failure_seq = 9;
  ctx.has_failure_free = true;
  ctx.failure_free = 123;
  ctx.set_identity(1, LauncherIdentity());
  rapidjson::Document unknown = format(make_event(-1), ctx);
  EXPECT_EQ(unknown["device_id"].GetInt(), -1);
  EXPECT_FALSE(unknown.HasMember("device_total"));  // unknown: left out (null)
  rapidjson::Document other = format(make_event(0, 8), ctx);
  EXPECT_EQ(other["device_total"].GetUint64(), 1000u);
  EXPECT_FALSE(other.HasMember("device_free"));
  rapidjson::Document failing = format(make_event(0, 9), ctx);
  EXPECT_EQ(failing["device_free"].GetUint64(), 123u);
  EXPECT_EQ(failing["device_total"].GetUint64(), 1000u);
  // A free count of 0 bytes is known, not left out.
  ctx.failure_free = 0;
  EXPECT_EQ(format(make_event(0, 9), ctx)["device_free"].GetUint64(), 0u);
}

// The job id comes from the environment: whatever it holds, the record is
// valid JSON and the value survives.
TEST(EventJson, HostileJobIdStaysValidJson) {
  EventJsonContext ctx;
  LauncherIdentity id;
  id.has_job_id = true;
  id.job_id = std::string("a\"b\\c\n\x01}{") + "\xff" + std::string(3000, 'x');
  ctx.set_identity(1, id);
  rapidjson::Document d = format(make_event(0), ctx);
  ASSERT_TRUE(d["job_id"].IsString());
  std::string got = d["job_id"].GetString();
  EXPECT_EQ(got.substr(0, 9), std::string("a\"b\\c\n\x01}{"));
  EXPECT_EQ(got.size(), 9 + 2 + 3000u);  // \xff is written as U+00FF (two UTF-8 bytes)
}

// The per-event part fits its buffer at the extremes of every number.
TEST(EventJson, LongestRecordFits) {
  Event e = make_event(254, UINT64_MAX);
  e.time_ns = UINT64_MAX;
  e.address = e.size = e.stream = e.live_after = UINT64_MAX;
  e.stack_id = UINT32_MAX;
  e.duration_ns = UINT32_MAX;
  e.result = INT16_MIN;
  e.tid = (1u << 24) - 1;
  EventJsonContext ctx;
  ctx.device_total[254] = UINT64_MAX;
  ctx.failure_seq = UINT64_MAX;
  ctx.has_failure_free = true;
  ctx.failure_free = UINT64_MAX;
  ctx.set_identity(INT32_MAX, LauncherIdentity());
  size_t longest = 0;
  for (int api = 0; api < kHookCount; ++api) {
    e.api = uint8_t(api);
    for (int k = 0; k <= int(EventKind::kUnmap); ++k) {
      e.kind_type = pack_kind_type(EventKind(k), MemoryType::kPhysical);
      char buf[4 * kMaxEventJson];  // room to see an overflow instead of causing one
      longest = std::max(longest, format_event_json(buf, e, false, ctx));
    }
  }
  EXPECT_LT(longest, kMaxEventJson);
}

// allocations.json records: valid JSON with docs/bundle-format.md's keys, in
// its order, the timestamp as events.json writes it; the longest fits.
TEST(LiveJson, KeysValuesAndOrder) {
  model::Allocation a;
  a.address = 0x7f0000001000ull;
  a.size = 268435456;
  a.timestamp = double(1763733785123456789ull / 1000) / 1e6;  // as dump_model.cpp keeps it
  a.seq = 77;
  a.stack_id = 12;
  a.thread_id = 4243;
  a.device_id = 1;
  a.api = "cudaMalloc";
  a.memory_type = "device";
  char buf[kMaxLiveJson];
  const std::string first(buf, format_live_json(buf, a, true));
  EXPECT_EQ(first, "{\"address\":139637976731648,\"size\":268435456,\"device_id\":1,\"api\":\"cudaMalloc\","
                   "\"memory_type\":\"device\",\"timestamp\":1763733785.123456,\"thread_id\":4243,\"stack_id\":12,"
                   "\"seq\":77}");
  const std::string array = "[" + first + std::string(buf, format_live_json(buf, a, false)) + "]";
  rapidjson::Document d;
  d.Parse(array.c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_EQ(d.Size(), 2u);
  EXPECT_EQ(d[1]["address"].GetUint64(), a.address);
  EXPECT_DOUBLE_EQ(d[1]["timestamp"].GetDouble(), 1763733785.123456);
}

TEST(LiveJson, LongestRecordFits) {
  model::Allocation a;
  a.address = a.size = a.seq = UINT64_MAX;
  a.timestamp = double(UINT64_MAX / 1000) / 1e6;
  a.stack_id = a.thread_id = UINT32_MAX;
  a.device_id = INT16_MIN;
  size_t longest = 0;
  for (int api = 0; api < kHookCount; ++api) {
    for (int t = 0; t <= int(MemoryType::kMapping); ++t) {
      a.api = hook_name(uint8_t(api));
      a.memory_type = memory_type_name(MemoryType(t));
      char buf[4 * kMaxLiveJson];
      longest = std::max(longest, format_live_json(buf, a, false));
    }
  }
  EXPECT_LT(longest, kMaxLiveJson);
}
