#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/bundle_schema.h"
#include "common/config.h"

using namespace gpumemrec;

namespace {

Config parse(const std::map<std::string, std::string>& env, std::vector<std::string>* warnings) {
  return parse_config(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

}  // namespace

TEST(Config, DefaultsWithEmptyEnvironment) {
  std::vector<std::string> w;
  Config c = parse({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.dir, "./gpumemrec-dumps");
  EXPECT_EQ(c.ring_events, 65536u);
  EXPECT_EQ(c.stack_depth, 32);
  EXPECT_EQ(c.episode_ms, 2000u);
  EXPECT_EQ(c.max_dumps, 5u);
  EXPECT_EQ(c.max_total_mb, 256u);
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_FALSE(c.disable);
  EXPECT_TRUE(c.python_stacks);
  EXPECT_FALSE(c.has_limit);
  EXPECT_EQ(c.fail_after, 0u);
  EXPECT_EQ(c.dump_signal, 0);
}

TEST(Config, ValidValues) {
  std::vector<std::string> w;
  Config c = parse({{"GPUMEMREC_DIR", "/tmp/x"},
                    {"GPUMEMREC_RING_EVENTS", "1000000"},
                    {"GPUMEMREC_STACK_DEPTH", "0"},
                    {"GPUMEMREC_EPISODE_MS", " 10 "},
                    {"GPUMEMREC_LOG_LEVEL", "DEBUG"},
                    {"GPUMEMREC_DISABLE", "yes"},
                    {"GPUMEMREC_PYTHON_STACKS", "off"},
                    {"GPUMEMREC_LIMIT", "0:24GiB,1:512M"},
                    {"GPUMEMREC_FAIL_AFTER", "7"},
                    {"GPUMEMREC_DUMP_SIGNAL", "SIGUSR2"}},
                   &w);
  EXPECT_TRUE(w.empty()) << (w.empty() ? "" : w[0]);
  EXPECT_EQ(c.dir, "/tmp/x");
  EXPECT_EQ(c.ring_events, 1000000u);
  EXPECT_EQ(c.stack_depth, 0);
  EXPECT_EQ(c.episode_ms, 10u);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_TRUE(c.disable);
  EXPECT_FALSE(c.python_stacks);
  EXPECT_TRUE(c.has_limit);
  EXPECT_EQ(c.limit_bytes[0], 24ull << 30);
  EXPECT_EQ(c.limit_bytes[1], 512ull << 20);
  EXPECT_EQ(c.limit_bytes[2], 0u);
  EXPECT_EQ(c.fail_after, 7u);
  EXPECT_EQ(c.dump_signal, SIGUSR2);
}

TEST(Config, MalformedValuesWarnOnceEachAndKeepDefaults) {
  const char* bad[] = {"", "abc", "-1", "1e99", "99999999999999999999999", "12abc", " "};
  for (const char* v : bad) {
    std::vector<std::string> w;
    Config c = parse({{"GPUMEMREC_RING_EVENTS", v},
                      {"GPUMEMREC_STACK_DEPTH", v},
                      {"GPUMEMREC_EPISODE_MS", v},
                      {"GPUMEMREC_MAX_DUMPS", v},
                      {"GPUMEMREC_MAX_TOTAL_MB", v},
                      {"GPUMEMREC_DISABLE", v},
                      {"GPUMEMREC_LIMIT", v},
                      {"GPUMEMREC_FAIL_AFTER", v},
                      {"GPUMEMREC_LOG_LEVEL", v},
                      {"GPUMEMREC_DIR", std::string(v).find_first_not_of(' ') == std::string::npos ? v : "ok"}},
                     &w);
    EXPECT_EQ(c.ring_events, 65536u) << v;
    EXPECT_EQ(c.stack_depth, 32) << v;
    EXPECT_EQ(c.episode_ms, 2000u) << v;
    EXPECT_EQ(c.max_dumps, 5u) << v;
    EXPECT_FALSE(c.disable) << v;
    EXPECT_FALSE(c.has_limit) << v;
    EXPECT_EQ(c.log_level, "warn") << v;
    // One warning per malformed variable, each naming it.
    EXPECT_GE(w.size(), 8u) << v;
    for (auto& msg : w) EXPECT_NE(msg.find("GPUMEMREC_"), std::string::npos);
  }
}

TEST(Config, OutOfRange) {
  std::vector<std::string> w;
  Config c = parse({{"GPUMEMREC_RING_EVENTS", "4"}, {"GPUMEMREC_STACK_DEPTH", "100000"}}, &w);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(c.ring_events, 65536u);
  EXPECT_EQ(c.stack_depth, 32);
  EXPECT_NE(w[0].find("out of range"), std::string::npos);
}

TEST(Config, Sizes) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_size("1000", &v));
  EXPECT_EQ(v, 1000u);
  EXPECT_TRUE(parse_size("24GiB", &v));
  EXPECT_EQ(v, 24ull << 30);
  EXPECT_TRUE(parse_size("1.5G", &v));
  EXPECT_EQ(v, 3ull << 29);
  EXPECT_TRUE(parse_size("2 MB", &v));
  EXPECT_EQ(v, 2000000u);
  EXPECT_FALSE(parse_size("", &v));
  EXPECT_FALSE(parse_size("GiB", &v));
  EXPECT_FALSE(parse_size("-5G", &v));
  EXPECT_FALSE(parse_size("5 parsecs", &v));
  EXPECT_FALSE(parse_size("1.2.3", &v));
}

TEST(Config, Limits) {
  uint64_t l[kMaxDevices] = {};
  EXPECT_TRUE(parse_limit("8GiB", l));
  EXPECT_EQ(l[0], 8ull << 30);
  EXPECT_EQ(l[63], 8ull << 30);
  EXPECT_FALSE(parse_limit("0:8GiB,x:1G", l));
  EXPECT_FALSE(parse_limit("64:1G", l));
  EXPECT_FALSE(parse_limit("0", l));
  EXPECT_FALSE(parse_limit("0:", l));
}

TEST(Config, Signals) {
  EXPECT_EQ(parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_signal("sigusr2"), SIGUSR2);
  EXPECT_EQ(parse_signal("12"), 12);
  EXPECT_EQ(parse_signal("KILL"), -1);
  EXPECT_EQ(parse_signal("9"), -1);
  EXPECT_EQ(parse_signal("SEGV"), -1);
  EXPECT_EQ(parse_signal("nonsense"), -1);
}

TEST(Config, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

TEST(Config, Compress) {
  std::vector<std::string> w;
  EXPECT_FALSE(parse({}, &w).compress_zstd);  // auto: the default ring's plain bundle fits 256 MiB
  EXPECT_TRUE(parse({}, &w).compress_auto);
  EXPECT_TRUE(parse({{"GPUMEMREC_COMPRESS", " ZSTD "}}, &w).compress_zstd);
  EXPECT_FALSE(parse({{"GPUMEMREC_COMPRESS", "none"}}, &w).compress_zstd);
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(parse({{"GPUMEMREC_COMPRESS", "gzip"}}, &w).compress_zstd);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("GPUMEMREC_COMPRESS"), std::string::npos);
  EXPECT_NE(w[0].find("auto"), std::string::npos);
}

TEST(Config, CompressAutoAtTheRetentionEdge) {
  std::vector<std::string> w;
  // A plain bundle of the full ring against GPUMEMREC_MAX_TOTAL_MB
  // (estimate_bundle, common/bundle_schema.h).
  const uint64_t fits = (256ull << 20) / kEventJsonBytesPerEvent / 2;
  EXPECT_FALSE(parse({{"GPUMEMREC_RING_EVENTS", std::to_string(fits)}}, &w).compress_zstd);
  EXPECT_TRUE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}}, &w).compress_zstd);
  EXPECT_FALSE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}, {"GPUMEMREC_MAX_TOTAL_MB", "0"}}, &w).compress_zstd);
  EXPECT_FALSE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}, {"GPUMEMREC_MAX_TOTAL_MB", "1024"}}, &w).compress_zstd);
  EXPECT_FALSE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}, {"GPUMEMREC_COMPRESS", "none"}}, &w).compress_zstd);
  // The edge itself: a cap one MiB under the estimate compresses.
  const uint64_t mib = (estimate_bundle(1048576).total() + (1 << 20) - 1) >> 20;  // rounded up
  EXPECT_FALSE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}, {"GPUMEMREC_MAX_TOTAL_MB", std::to_string(mib)}},
                     &w).compress_zstd);
  EXPECT_TRUE(parse({{"GPUMEMREC_RING_EVENTS", "1048576"}, {"GPUMEMREC_MAX_TOTAL_MB", std::to_string(mib - 1)}},
                    &w).compress_zstd);
  EXPECT_TRUE(w.empty());
}

TEST(Config, Unwinder) {
  std::vector<std::string> w;
  EXPECT_EQ(parse({}, &w).unwinder, Unwinder::kAuto);
  EXPECT_EQ(parse({{"GPUMEMREC_UNWINDER", "glibc"}}, &w).unwinder, Unwinder::kGlibc);
  EXPECT_EQ(parse({{"GPUMEMREC_UNWINDER", " Bundled "}}, &w).unwinder, Unwinder::kBundled);
  EXPECT_EQ(parse({{"GPUMEMREC_UNWINDER", "system"}}, &w).unwinder, Unwinder::kSystem);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(parse({{"GPUMEMREC_UNWINDER", "libgcc"}}, &w).unwinder, Unwinder::kAuto);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("GPUMEMREC_UNWINDER"), std::string::npos);
  EXPECT_NE(w[0].find("auto"), std::string::npos);
}
