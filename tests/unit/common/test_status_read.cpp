// The status region's reader (common/status_read.h): what a region made by
// another process may hold, field by field; strings made safe for a
// terminal; the identity checks; the directory and the file names
// (common/status_dir.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/status_dir.h"
#include "common/status_read.h"

using namespace gpumemrec;
using namespace gpumemrec::status;

namespace {

// A region as the recorder writes it: identity, one update, two devices,
// two sites.
std::unique_ptr<Region> good_region() {
  auto r = std::make_unique<Region>();
  std::memset(r.get(), 0, sizeof(Region));
  std::memcpy(r->magic, kMagic, sizeof kMagic);
  r->version = kVersion;
  r->size = sizeof(Region);
  r->uid = 1000;
  r->pid = 4242;
  r->pid_ns = 7;
  r->start_ticks = 99;
  std::strcpy(r->boot_id, "b00t");
  r->rank = 1;
  r->world_size = 4;
  r->dump_signal = 12;
  std::strcpy(r->command, "python train.py");
  std::strcpy(r->dump_dir, "/tmp/dumps");
  r->seq = 6;
  Body& b = r->body;
  b.updates = 3;
  b.updated_mono_ns = 5000000000ull;
  b.updated_real_ns = 1700000000000000000ull;
  b.ndevices = 2;
  b.devices[0].device = 0;
  b.devices[0].flags = kPeakExact;
  b.devices[0].live_bytes = 300;
  b.devices[0].peak_bytes = 500;
  b.devices[1].device = 1;
  b.devices[1].live_bytes = 10;
  b.devices[1].peak_bytes = 10;
  b.curve_count = 3;
  b.curve_newest = 1;  // samples at 239, 0, 1
  b.devices[0].curve[kCurvePoints - 1] = 100;
  b.devices[0].curve[0] = 200;
  b.devices[0].curve[1] = 300;
  b.nsites = 2;
  b.sites_total = 5;
  b.names = kNamesDone;
  b.sites[0] = SiteSlot{200, 2, 7, 1, 1, {}, {}};
  std::strcpy(b.sites[0].label, "train_step (train.py:42)");
  std::strcpy(b.sites[0].library, "libc10_cuda.so");
  b.sites[1] = SiteSlot{100, 1, 9, 2, 1, {}, {}};
  std::strcpy(b.sites[1].label, "helper (a.cpp:3)");
  return r;
}

bool reads(const Region& r, RegionView* v, std::string* why) { return read_region(&r, sizeof r, v, why); }

std::string refusal(const Region& r) {
  RegionView v;
  std::string why;
  EXPECT_FALSE(reads(r, &v, &why));
  return why;
}

}  // namespace

TEST(StatusRead, AGoodRegionReadsBack) {
  auto r = good_region();
  RegionView v;
  std::string why;
  ASSERT_TRUE(reads(*r, &v, &why)) << why;
  EXPECT_EQ(v.pid, 4242);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.command, "python train.py");
  ASSERT_EQ(v.devices.size(), 2u);
  EXPECT_TRUE(v.devices[0].peak_exact);
  EXPECT_FALSE(v.devices[1].peak_exact);
  EXPECT_EQ(v.devices[0].curve, (std::vector<uint64_t>{100, 200, 300}));  // oldest first
  ASSERT_EQ(v.sites.size(), 2u);
  EXPECT_EQ(v.sites[0].label, "train_step (train.py:42)");
  EXPECT_EQ(v.sites[1].stacks, 2u);
  EXPECT_FALSE(v.roles.present);
}

TEST(StatusRead, EveryLayoutProblemIsOnePhrase) {
  auto check = [](void (*spoil)(Region&), const char* expect) {
    auto r = good_region();
    spoil(*r);
    EXPECT_NE(refusal(*r).find(expect), std::string::npos) << expect << " / got: " << refusal(*r);
  };
  check([](Region& r) { r.magic[0] = 'X'; }, "not a gpumemrec status region");
  check([](Region& r) { r.version = 2; }, "region version 2");
  check([](Region& r) { r.size = 12; }, "size 12");
  check([](Region& r) { r.seq = 7; }, "being written");
  check([](Region& r) { r.body.updates = 0; }, "never updated");
  check([](Region& r) { r.body.ndevices = 9; }, "9 devices listed");
  check([](Region& r) { r.body.nsites = 17; }, "17 sites listed");
  check([](Region& r) { r.body.state = 7; }, "unknown state 7");
  check([](Region& r) { r.body.names = 3; }, "unknown names state");
  check([](Region& r) { r.body.curve_newest = kCurvePoints; }, "curve index");
  check([](Region& r) { r.body.sites_total = 1; }, "fewer sites in total");
  check([](Region& r) { r.body.devices[1].device = 0; }, "listed twice");
  check([](Region& r) { r.body.devices[0].device = 65; }, "out of range");
  check([](Region& r) { r.body.devices[0].flags = 6; }, "unknown device flags");
  check([](Region& r) { r.body.sites[0].named = 2; }, "named flag");
  check([](Region& r) { r.body.roles.present = 5; }, "present flag");
  check([](Region& r) { std::memset(r.command, 'A', sizeof r.command); }, "field command is not terminated");
  check([](Region& r) { std::memset(r.body.sites[1].label, 'A', kLabelBytes); }, "field label");
  check([](Region& r) { r.rank = 4; }, "rank 4 of 4 is impossible");
  check([](Region& r) { r.pid = -3; }, "not a process id");
  check([](Region& r) { r.dump_signal = 99; }, "not a signal");
}

TEST(StatusRead, TruncatedAndOversizedBytes) {
  auto r = good_region();
  RegionView v;
  std::string why;
  EXPECT_FALSE(read_region(r.get(), 3, &v, &why));
  EXPECT_NE(why.find("truncated (3 bytes)"), std::string::npos);
  EXPECT_FALSE(read_region(r.get(), sizeof(Region) - 1, &v, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos);
  std::vector<char> big(sizeof(Region) + 64, 0);
  std::memcpy(big.data(), r.get(), sizeof(Region));
  EXPECT_FALSE(read_region(big.data(), big.size(), &v, &why));
  EXPECT_NE(why.find("size"), std::string::npos);
}

TEST(StatusRead, StringsAreSafeForATerminal) {
  std::string out;
  const char esc[] = "\x1b[2J\x1b]0;pwned\x07ok";
  ASSERT_TRUE(field_text(esc, sizeof esc, &out));
  EXPECT_EQ(out, "?[2J?]0;pwned?ok");
  const char utf8[] = "caf\xc3\xa9 \xe2\x96\x88";  // café █
  ASSERT_TRUE(field_text(utf8, sizeof utf8, &out));
  EXPECT_EQ(out, utf8);
  const char bad[] = "\xc2\x9b" "31m \xff\xfe \xed\xa0\x80 \xc0\xaf";  // C1 CSI, bytes, a surrogate, overlong
  ASSERT_TRUE(field_text(bad, sizeof bad, &out));
  EXPECT_EQ(out.find_first_of("\x1b\x9b\xff\xfe\xed\xc0"), std::string::npos) << out;
  const char cut[4] = {'a', 'b', 'c', 'd'};
  EXPECT_FALSE(field_text(cut, sizeof cut, &out));
}

TEST(StatusRead, IdentityChecks) {
  auto r = good_region();
  RegionView v;
  std::string why;
  ASSERT_TRUE(reads(*r, &v, &why));
  Expect e;
  e.uid = 1000;
  e.pid = 4242;
  e.start_ticks = 99;
  e.boot_id = "b00t";
  e.pid_ns = 7;
  e.alive = true;
  e.now_mono_ns = v.updated_mono_ns + 1000000000ull;
  EXPECT_EQ(check_identity(v, e), "");
  auto with = [&](void (*change)(Expect&)) {
    Expect x = e;
    change(x);
    return check_identity(v, x);
  };
  EXPECT_EQ(with([](Expect& x) { x.uid = 0; }), "written for uid 1000");
  EXPECT_EQ(with([](Expect& x) { x.pid = 1; }), "its name does not match its process");
  EXPECT_EQ(with([](Expect& x) { x.start_ticks = 98; }), "its name does not match its process");
  EXPECT_EQ(with([](Expect& x) { x.boot_id = "other"; }), "left from an earlier boot");
  EXPECT_NE(with([](Expect& x) { x.pid_ns = 8; }).find("another PID namespace"), std::string::npos);
  EXPECT_EQ(with([](Expect& x) { x.alive = false; }), "process gone");
  EXPECT_NE(with([](Expect& x) { x.now_mono_ns += 10000000000ull; }).find("no update for 11 s"), std::string::npos);
  EXPECT_EQ(with([](Expect& x) { x.now_mono_ns = 1; }), "updated in the future");
  // Times near 2^64 do not wrap (found by fuzz_status_region).
  v.updated_mono_ns = UINT64_MAX - 1;
  EXPECT_EQ(with([](Expect& x) { x.now_mono_ns = UINT64_MAX - 1; }), "");
  EXPECT_EQ(with([](Expect& x) { x.now_mono_ns = 5; }), "updated in the future");
}

TEST(StatusDir, FileNames) {
  int pid = 0;
  uint64_t ticks = 0;
  EXPECT_EQ(file_name(4242, 123), "4242-123.status");
  EXPECT_TRUE(parse_file_name("4242-123.status", &pid, &ticks));
  EXPECT_EQ(pid, 4242);
  EXPECT_EQ(ticks, 123u);
  for (const char* bad : {"", "-1.status", "0-5.status", "12-.status", "12-3.status.tmp", ".12-3.status.tmp",
                          "12-3", "x12-3.status", "99999999999-1.status", "12-99999999999999999999.status"})
    EXPECT_FALSE(parse_file_name(bad, &pid, &ticks)) << bad;
}

TEST(StatusDir, ProcessStartTicks) {
  uint64_t self = 0, again = 0;
  ASSERT_TRUE(process_start_ticks(getpid(), &self));
  ASSERT_TRUE(process_start_ticks(getpid(), &again));
  EXPECT_EQ(self, again);
  EXPECT_FALSE(process_start_ticks(0, &self));
  EXPECT_FALSE(process_start_ticks(0x7ffffff0, &self));
  char boot[kBootIdBytes];
  EXPECT_TRUE(read_boot_id(boot));
  EXPECT_EQ(std::strlen(boot), 36u);
  EXPECT_NE(own_pid_namespace(), 0u);
}

TEST(StatusDir, RefusesLinksAndDirectoriesOpenToOthers) {
  char tmpl[] = "/tmp/gmr-statusdir-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  std::string why;
  const std::string made = base + "/made";
  int fd = open_dir(made.c_str(), true, &why);
  ASSERT_GE(fd, 0) << why;
  close(fd);
  struct stat st;
  ASSERT_EQ(stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string link = base + "/link";
  ASSERT_EQ(symlink(made.c_str(), link.c_str()), 0);
  EXPECT_LT(open_dir(link.c_str(), true, &why), 0);
  EXPECT_NE(why.find("not a directory"), std::string::npos);
  ASSERT_EQ(chmod(made.c_str(), 0755), 0);
  EXPECT_LT(open_dir(made.c_str(), false, &why), 0);
  EXPECT_NE(why.find("open to other users (mode 0755"), std::string::npos);
  EXPECT_LT(open_dir((base + "/missing").c_str(), false, &why), 0);
  EXPECT_EQ(resolve_dir("/x/y", 5), "/x/y");
  EXPECT_NE(resolve_dir("", 5).find("/gpumemrec-5"), std::string::npos);
  unlink(link.c_str());
  rmdir(made.c_str());
  rmdir(base.c_str());
}
