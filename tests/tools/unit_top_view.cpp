// gpumemrec top's text (tools/top_view.h): the screen is exactly its size
// whatever the regions hold, a cut never breaks a UTF-8 character, the
// curve fits its width, rows sort as the keys say.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/cli.h"
#include "tools/top_view.h"

using namespace gpumemrec;
using namespace gpumemrec::cli;

namespace {

TopSnapshot snapshot(int processes, size_t label_len) {
  TopSnapshot s;
  s.time = 1700000000;
  for (int p = 0; p < processes; ++p) {
    TopProcess tp;
    status::RegionView& v = tp.v;
    v.pid = 1000 + p;
    v.rank = p % 3 - 1;
    v.command = std::string(300, 'c') + "\u2588";
    v.names = status::kNamesDone;
    for (int d = 0; d < 2; ++d) {
      status::DeviceView dv;
      dv.device = d;
      dv.live_bytes = uint64_t(p + 1) << (20 + d);
      dv.peak_bytes = ~uint64_t(0) >> p;  // absurd figures are shown, never a crash
      dv.curve = std::vector<uint64_t>(size_t(p * 17 % 240), uint64_t(p) << 30);
      v.devices.push_back(dv);
    }
    for (int i = 0; i < 16; ++i) {
      status::SiteView site;
      site.bytes = uint64_t(1) << (40 - i);
      site.count = 3;
      site.named = i % 2 == 0;
      site.stacks = uint32_t(i);
      site.label = std::string(label_len, 'x') + "\u00e9";
      site.library = "libc10_cuda.so";
      v.sites.push_back(site);
    }
    v.roles.present = p == 0;
    v.roles.bytes[0] = 123;
    s.processes.push_back(tp);
  }
  s.skipped.push_back({"x.status", 5, "truncated"});
  return s;
}

void expect_fits(const std::vector<TopLine>& lines, int w, int h) {
  ASSERT_EQ(lines.size(), size_t(h));
  for (const TopLine& l : lines) EXPECT_LE(display_width(l.text), size_t(w)) << l.text;
}

}  // namespace

TEST(TopView, TheScreenIsExactlyItsSize) {
  for (int procs : {0, 1, 3, 40})
    for (auto [w, h] : std::vector<std::pair<int, int>>{{80, 24}, {1, 1}, {20, 5}, {60, 14}, {200, 60}, {300, 3}})
      for (bool help : {false, true}) {
        TopSnapshot s = snapshot(procs, 250);
        TopHistory hist;
        Cards cards;
        std::vector<TopRow> rows = top_rows(s, cards, &hist);
        sort_rows(s, TopSort::kGrowth, &rows);
        ScreenState st;
        st.width = w;
        st.height = h;
        st.help = help;
        st.selected = rows.empty() ? 0 : rows.size() - 1;
        expect_fits(render_screen(s, rows, st, "no NVML"), w, h);
      }
}

TEST(TopView, RowsSortByTheKey) {
  TopSnapshot s = snapshot(3, 10);
  TopHistory hist;
  Cards cards;
  std::vector<TopRow> rows = top_rows(s, cards, &hist);
  sort_rows(s, TopSort::kLive, &rows);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(s.processes[rows[0].process].v.pid, 1002);  // 3 MiB << 1 on device 1
  EXPECT_EQ(s.processes[rows[0].process].v.devices[rows[0].device].device, 1);
  sort_rows(s, TopSort::kPeak, &rows);
  EXPECT_EQ(s.processes[rows[0].process].v.pid, 1000);
  // A second reading: the change against the first.
  s.processes[1].v.devices[0].live_bytes += 5;
  s.mono_ns += 1000000000;
  rows = top_rows(s, cards, &hist);
  sort_rows(s, TopSort::kGrowth, &rows);
  EXPECT_EQ(s.processes[rows[0].process].v.pid, 1001);
  EXPECT_EQ(rows[0].change, 5);
}

TEST(TopView, CutsAndCurves) {
  EXPECT_EQ(fit("abc", 3), "abc");
  EXPECT_EQ(fit("abcd", 3), "ab\u2026");
  EXPECT_EQ(fit("\u00e9\u00e9\u00e9\u00e9", 3), "\u00e9\u00e9\u2026");
  EXPECT_EQ(fit("abc", 0), "");
  EXPECT_EQ(sparkline({}, 10, true), "");
  EXPECT_EQ(sparkline({0, 0}, 10, false), "  ");
  EXPECT_EQ(display_width(sparkline(std::vector<uint64_t>(240, 7), 50, true)), 50u);
  EXPECT_EQ(sparkline({0, ~uint64_t(0)}, 2, false), " @");
  EXPECT_EQ(display_width(sparkline({1, 2, 3}, 80, true)), 3u);
}

TEST(TopView, PlainTextHasNoEscapes) {
  TopSnapshot s = snapshot(2, 20);
  TopHistory hist;
  Cards cards;
  std::vector<TopRow> rows = top_rows(s, cards, &hist);
  const std::string text = render_text(s, rows, 5, "no NVML");
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("skipped x.status: truncated"), std::string::npos);
  EXPECT_NE(text.find("not named yet"), std::string::npos);
}
