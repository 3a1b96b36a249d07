// The status region's writer side (shim/dump/status/): the figures from the
// keeper's state brought up to the ring's end (status_figures.h), the file
// (status_file.h) and the body under its sequence lock (status_writer.h),
// read back with the tools' reader (common/status_read.h).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/status_dir.h"
#include "common/status_read.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/status/status_figures.h"
#include "shim/dump/status/status_file.h"
#include "shim/dump/status/status_names.h"
#include "shim/dump/status/status_writer.h"
#include "shim/record/live_bytes.h"
#include "tests/unit/dump/ring_events.h"

using namespace gpumemrec;

namespace {

// A ring the keeper tails, the live bytes the recorder would count.
struct Program {
  RingFixture f{4096};
  Writer w{f};
  LiveBytes live;
  PeakTail tail;
  uint64_t allocate(uint64_t size, uint32_t stack) {
    live.add(w.device, int64_t(size));
    return w.allocate(size, stack);
  }
  void release(uint64_t addr, uint64_t size, uint32_t stack) {
    live.add(w.device, -int64_t(size));
    w.release(addr, size, stack);
  }
  void pass() { peak_tail_step(f.ring, &tail, w.t); }
};

const DeviceFigure* device(const StatusFigures& s, int d) {
  for (const DeviceFigure& f : s.devices)
    if (f.device == d) return &f;
  return nullptr;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/gmr-status-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  return tmpl;
}

}  // namespace

// The keeper alone is a ring's floor behind: a small program's events are
// all past it. The figures bring its replay up to the end, as a bundle does.
TEST(StatusFigures, ExactAtTheRingsEndThoughTheKeeperLags) {
  Program p;
  const uint64_t a = p.allocate(1000, 1);
  p.allocate(500, 2);  // the peak: 1500
  p.release(a, 1000, 1);
  p.w.device = 1;
  p.allocate(70, 3);
  p.pass();
  EXPECT_LT(p.tail.kept.cursor, p.f.ring.end());  // the keeper has not read them
  FigureCollector c;
  StatusFigures s;
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t, &s);
  EXPECT_EQ(s.state, status::kStateExact);
  ASSERT_NE(device(s, 0), nullptr);
  EXPECT_EQ(device(s, 0)->live, 500u);
  EXPECT_EQ(device(s, 0)->peak, 1500u);
  EXPECT_TRUE(device(s, 0)->exact);
  EXPECT_EQ(device(s, 1)->live, 70u);
  ASSERT_EQ(s.stacks.size(), 2u);
  EXPECT_EQ(s.stacks[0].stack_id, 2u);
  EXPECT_EQ(s.stacks[0].bytes, 500u);
  EXPECT_EQ(s.stacks[1].stack_id, 3u);
  EXPECT_EQ(s.stacks_total, 2u);
  EXPECT_EQ(c.peeks(), 1u);
  // Nothing new: the same figures, no new peek.
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t + 100 * kMs, &s);
  EXPECT_EQ(c.peeks(), 1u);
  EXPECT_EQ(device(s, 0)->peak, 1500u);
  // One more event in the block the thread holds: end() does not move, the
  // figures do.
  const uint64_t end = p.f.ring.end();
  p.w.device = 0;
  p.allocate(2000, 4);
  ASSERT_EQ(p.f.ring.end(), end);
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t + 200 * kMs, &s);
  EXPECT_EQ(c.peeks(), 2u);
  EXPECT_EQ(device(s, 0)->live, 2500u);
  EXPECT_EQ(device(s, 0)->peak, 2500u);
  EXPECT_TRUE(device(s, 0)->exact);
}

TEST(StatusFigures, StacksAcrossDevicesAreOne) {
  Program p;
  p.allocate(10, 5);
  p.w.device = 2;
  p.allocate(30, 5);
  p.allocate(20, 6);
  FigureCollector c;
  StatusFigures s;
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t, &s);
  ASSERT_EQ(s.stacks.size(), 2u);
  EXPECT_EQ(s.stacks[0].stack_id, 5u);
  EXPECT_EQ(s.stacks[0].bytes, 40u);
  EXPECT_EQ(s.stacks[0].count, 2u);
}

TEST(StatusFigures, PastTheBudgetTheKeepersOwnFiguresAreSettled) {
  Program p;
  for (int i = 0; i < 2000; ++i) p.allocate(8, 7);
  p.pass();
  FigureCollector c(0, 0);  // no CPU time to spend on peeks
  StatusFigures s;
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t, &s);
  EXPECT_EQ(c.skipped(), 1u);
  EXPECT_EQ(c.peeks(), 0u);
  EXPECT_EQ(s.state, status::kStateSettled);
  EXPECT_NE(std::string(s.note).find("busy"), std::string::npos);
  EXPECT_EQ(device(s, 0)->live, p.live.read(0));  // live bytes are always now
}

TEST(StatusFigures, AKeeperThatLostEventsHasNoSites) {
  Program p;
  p.allocate(100, 1);
  p.pass();
  for (int i = 0; i < 10000; ++i) p.allocate(1, 2);  // more than the ring between two passes
  for (int i = 0; i < 3; ++i) peak_tail_step(p.f.ring, &p.tail, p.w.t + uint64_t(i) * kSlackNs * 2);
  ASSERT_TRUE(p.tail.kept.stopped());
  FigureCollector c;
  StatusFigures s;
  c.collect(p.f.ring, p.live, p.tail.kept, p.w.t, &s);
  EXPECT_EQ(s.state, status::kStateNoSites);
  EXPECT_TRUE(s.stacks.empty());
  EXPECT_EQ(device(s, 0)->live, 10100u);
  EXPECT_FALSE(device(s, 0)->exact);
  EXPECT_GE(device(s, 0)->peak, 10100u);
}

TEST(StatusFile, MadeOwnedNamedAndRemovedOnlyIfOurs) {
  const std::string dir = temp_dir() + "/status";
  StatusIdentity id;
  id.command = "prog --flag";
  id.dump_dir = "/tmp/d";
  std::string why;
  status::Region* reg = status_file_create(dir, id, [](status::Region* r) { r->body.updates = 1; }, &why);
  ASSERT_NE(reg, nullptr) << why;
  uint64_t ticks = 0;
  ASSERT_TRUE(status::process_start_ticks(getpid(), &ticks));
  const std::string path = dir + "/" + status::file_name(getpid(), ticks);
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(size_t(st.st_size), sizeof(status::Region));
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Replaced by another file of that name: not ours, left alone.
  ASSERT_EQ(unlink(path.c_str()), 0);
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  status_file_remove();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  unlink(path.c_str());
  status_file_forget(reg);
}

TEST(StatusFile, RefusesADirectoryOthersCanEnter) {
  const std::string dir = temp_dir();
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  std::string why;
  EXPECT_EQ(status_file_create(dir, StatusIdentity(), [](status::Region*) {}, &why), nullptr);
  EXPECT_NE(why.find("open to other users"), std::string::npos);
}

TEST(StatusWriter, TheBodyReadsBackWithTheToolsReader) {
  const std::string dir = temp_dir() + "/s";
  StatusFigures f;
  f.devices.push_back({0, 300, 500, 0, true});
  f.devices.push_back({3, 20, 20, 0, false});
  f.stacks.push_back({9, 300, 3});
  std::vector<SiteFigure> sites(1);
  sites[0].bytes = 300;
  sites[0].count = 3;
  sites[0].stack_id = 9;
  sites[0].stacks = 1;
  sites[0].named = true;
  sites[0].label = std::string(300, 'x');  // cut to fit, still terminated
  sites[0].library = "libfoo.so";
  RegionWriter w;
  StatusUpdate u{&f, &sites, 4, status::kNamesDone, 10 * 1000 * kMs, 1700000000ull * 1000 * kMs};
  StatusIdentity id;
  id.rank = 2;
  id.world_size = 8;
  id.dump_signal = 12;
  std::string why;
  status::Region* reg = status_file_create(dir, id, [&](status::Region* r) { w.write(r, u); }, &why);
  ASSERT_NE(reg, nullptr) << why;
  for (int i = 1; i <= 3; ++i) {  // three more updates, 0.9 s apart: two curve samples
    u.now_mono_ns += 900 * kMs;
    w.write(reg, u);
  }
  status::RegionView v;
  ASSERT_TRUE(status::read_region(reg, sizeof *reg, &v, &why)) << why;
  EXPECT_EQ(v.seq % 2, 0u);
  EXPECT_EQ(v.updates, 4u);
  EXPECT_EQ(v.pid, getpid());
  EXPECT_EQ(v.rank, 2);
  ASSERT_EQ(v.devices.size(), 2u);
  EXPECT_EQ(v.devices[1].device, 3);
  EXPECT_TRUE(v.devices[0].peak_exact);
  EXPECT_EQ(v.devices[0].curve, (std::vector<uint64_t>{300, 300}));
  ASSERT_EQ(v.sites.size(), 1u);
  EXPECT_EQ(v.sites[0].label.size(), status::kLabelBytes - 1);
  EXPECT_EQ(v.sites[0].library, "libfoo.so");
  EXPECT_EQ(v.sites_total, 4u);
  status_file_remove();
  status_file_forget(reg);
}

TEST(SiteNamer, UnnamedStacksAreSitesOfTheirOwn) {
  SiteNamer n(nullptr, {});
  std::vector<SiteFigure> sites;
  EXPECT_FALSE(n.group({{4, 300, 3}, {2, 300, 1}, {8, 5, 1}}, &sites));
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0].stack_id, 2u);  // a tie: the lower stack id first, as `report`
  EXPECT_FALSE(sites[0].named);
  EXPECT_EQ(sites[2].bytes, 5u);
}
