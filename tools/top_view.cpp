#include "tools/top_view.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "common/format.h"
#include "common/framework_roles.h"
#include "tools/cli.h"

namespace gpumemrec::cli {

namespace {

const status::DeviceView& device_of(const TopSnapshot& s, const TopRow& r) {
  return s.processes[r.process].v.devices[r.device];
}

std::string pad_left(const std::string& t, size_t w) {
  const size_t n = display_width(t);
  return n >= w ? t : std::string(w - n, ' ') + t;
}

std::string pad_right(const std::string& t, size_t w) {
  const size_t n = display_width(t);
  return n >= w ? t : t + std::string(w - n, ' ');
}

std::string clock_time(double t) {
  const time_t s = time_t(t);
  struct tm tm;
  localtime_r(&s, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string rank_text(const status::RegionView& v) { return v.rank < 0 ? "-" : std::to_string(v.rank); }

// The command as `top` shows it: the program's file name, then its arguments.
std::string short_command(const std::string& command) {
  const size_t end = command.find(' ');
  const std::string program = command.substr(0, end);
  const size_t slash = program.rfind('/');
  return (slash == std::string::npos ? program : program.substr(slash + 1)) +
         (end == std::string::npos ? "" : command.substr(end));
}

std::string change_text(const TopRow& r) { return r.change_known ? format_bytes_signed(r.change) : "?"; }

std::string free_text(const CardMemory& c) { return c.known ? format_bytes(c.free) : "?"; }

std::string peak_text(const status::DeviceView& d) {
  return format_bytes(d.peak_bytes) + (d.peak_exact ? "" : " (at least)");
}

// The table's head and one row (fixed columns, the command takes the rest;
// a narrower terminal cuts the row).
std::string table_head(size_t width) {
  const std::string h = "    PID RANK DEV        LIVE        PEAK       CHANGE   CARD FREE  COMMAND";
  return fit(h, width);
}

std::string table_row(const TopSnapshot& s, const TopRow& r, size_t width) {
  const status::RegionView& v = s.processes[r.process].v;
  const status::DeviceView& d = v.devices[r.device];
  std::string line = pad_left(std::to_string(v.pid), 7) + pad_left(rank_text(v), 5) +
                     pad_left(d.device < 0 ? "?" : std::to_string(d.device), 4) + pad_left(format_bytes(d.live_bytes), 12) +
                     pad_left(format_bytes(d.peak_bytes) + (d.peak_exact ? " " : "+"), 12) +
                     pad_left(change_text(r), 13) + pad_left(free_text(r.card), 12) + "  ";
  return fit(line + short_command(v.command), width);
}

std::string site_line(const status::SiteView& site, size_t width) {
  std::string where = !site.named ? "(stack " + std::to_string(site.stack_id) + ", not named yet)"
                      : site.label.empty() ? "(no stack recorded)"
                                           : site.label;
  if (site.stacks > 1) where += "  [" + std::to_string(site.stacks) + " call paths]";
  std::string line = pad_left(format_bytes(site.bytes), 12) + pad_left(std::to_string(site.count), 8) + "  " +
                     pad_right(site.library.empty() ? "-" : site.library, 20) + " " + where;
  return fit(line, width);
}

std::string sites_head(size_t width) { return fit("        LIVE  ALLOCS  LIBRARY              SITE", width); }

// A process's state in words, when its figures are not a bundle's.
std::string state_words(const status::RegionView& v) {
  if (v.state == status::kStateExact && v.note.empty()) return "";
  return v.note.empty() ? state_name(v.state) : v.note;
}

std::string detail_head(const TopSnapshot& s, const TopRow& r) {
  const status::RegionView& v = s.processes[r.process].v;
  const status::DeviceView& d = device_of(s, r);
  std::string t = "pid " + std::to_string(v.pid);
  if (v.rank >= 0) t += " rank " + std::to_string(v.rank);
  return t + " device " + (d.device < 0 ? std::string("?") : std::to_string(d.device)) + ": live " +
         format_bytes(d.live_bytes) + ", peak " + peak_text(d);
}

std::string card_line(const TopRow& r, const std::string& command) {
  std::string t = r.card.known ? "card: " + format_bytes(r.card.free) + " free of " + format_bytes(r.card.total) +
                                     (r.card.by_index ? " (by index)" : "")
                               : "card: ?";
  return t + "  " + command;
}

// "last 4 min ", "last 35 s ": what the curve covers.
std::string curve_label(size_t samples) {
  return samples >= 120 ? "last " + std::to_string(samples / 60) + " min " : "last " + std::to_string(samples) + " s ";
}

// The detail of the selected row: head, curve, sites (as many as fit),
// roles, the process's state.
void detail_lines(const TopSnapshot& s, const TopRow& r, const ScreenState& st, size_t room,
                  std::vector<TopLine>* out) {
  const status::RegionView& v = s.processes[r.process].v;
  const status::DeviceView& d = device_of(s, r);
  const size_t w = size_t(st.width);
  const size_t start = out->size();
  auto add = [&](std::string t, LineStyle style = LineStyle::kPlain) {
    if (out->size() - start < room) out->push_back({fit(t, w), style});
  };
  add(detail_head(s, r), LineStyle::kHeader);
  add(card_line(r, v.command));
  const std::string label = curve_label(d.curve.size());
  if (!d.curve.empty() && w > label.size() + 10) add(label + sparkline(d.curve, w - label.size(), st.utf8));
  const std::string words = state_words(v);
  if (!words.empty()) add("(" + words + ")", LineStyle::kNote);
  const size_t tail = v.roles.present ? 1 : 0;
  add(sites_head(w), LineStyle::kHeader);
  if (v.sites.empty()) add("  no live allocations" + std::string(v.state == status::kStateNoSites ? " known" : ""));
  for (size_t i = 0; i < v.sites.size() && out->size() - start + tail < room; ++i) add(site_line(v.sites[i], w));
  if (v.roles.present) add(roles_text(v.roles));
}

std::string header_line(const TopSnapshot& s, const ScreenState& st) {
  char every[32];
  std::snprintf(every, sizeof every, "%.1f s", st.interval_s);
  std::string t = "gpumemrec top  " + clock_time(s.time) + "  " + std::to_string(s.processes.size()) +
                  (s.processes.size() == 1 ? " process" : " processes") + "  every " + every + "  sort: " +
                  top_sort_name(st.sort);
  if (!s.skipped.empty()) t += "  (" + std::to_string(s.skipped.size()) + " skipped)";
  return t;
}

std::string keys_line(const ScreenState& st) {
  if (!st.message.empty()) return st.message;
  return "q quit  up/down select  l/p/g sort by live/peak/growth  d dump  h help";
}

std::vector<TopLine> help_lines(const TopSnapshot& s, const std::string& cards_problem) {
  std::vector<TopLine> h = {
      {"Keys", LineStyle::kHeader},
      {"  up/down, k/j   select a process and device"},
      {"  l p g          sort by live bytes, peak, growth over the interval (also < and >)"},
      {"  d              write a bundle of the selected process now (its GPUMEMREC_DUMP_SIGNAL)"},
      {"  h ?            this help (any key goes back)"},
      {"  q Q Esc        quit"},
      {""},
      {"LIVE: recorded live bytes now. PEAK: the run's high-water mark (+: at least)."},
      {"CHANGE: live bytes now against the previous refresh. CARD FREE: NVML."},
  };
  if (!cards_problem.empty()) h.push_back({cards_problem, LineStyle::kNote});
  for (const TopSkipped& k : s.skipped)
    h.push_back({"skipped " + (k.file.empty() ? "pid " + std::to_string(k.pid) : k.file) + ": " + k.why,
                 LineStyle::kNote});
  return h;
}

}  // namespace

const char* top_sort_name(TopSort s) {
  return s == TopSort::kLive ? "live" : s == TopSort::kPeak ? "peak" : "growth";
}

bool parse_top_sort(const std::string& text, TopSort* out) {
  if (text == "live") *out = TopSort::kLive;
  else if (text == "peak") *out = TopSort::kPeak;
  else if (text == "growth") *out = TopSort::kGrowth;
  else return false;
  return true;
}

const char* state_name(uint32_t state) {
  return state == status::kStateExact ? "exact" : state == status::kStateSettled ? "settled" : "no_sites";
}

const char* names_name(uint32_t names) {
  return names == status::kNamesDone ? "done" : names == status::kNamesPartial ? "partial" : "off";
}

std::string fit(const std::string& text, size_t width) {
  if (display_width(text) <= width) return text;
  if (width == 0) return "";
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) ++len;
    if (cols + 1 == width) break;
    out.append(text, i, len);
    ++cols;
    i += len;
  }
  return out + "\u2026";
}

std::string sparkline(const std::vector<uint64_t>& curve, size_t width, bool utf8) {
  static const char* kBlocks[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  static const char kAscii[] = " .:-=+*#%@";
  if (curve.empty() || width == 0) return "";
  const size_t cols = std::min(width, curve.size());
  std::vector<uint64_t> col(cols, 0);
  for (size_t i = 0; i < curve.size(); ++i) {
    const size_t c = i * cols / curve.size();
    col[c] = std::max(col[c], curve[i]);
  }
  const uint64_t top = *std::max_element(col.begin(), col.end());
  std::string out;
  for (uint64_t v : col) {
    const size_t levels = utf8 ? 8 : 9;
    const size_t k = top == 0 ? 0 : size_t((long double)v * levels / (long double)top + 0.5L);
    if (utf8) out += kBlocks[std::min<size_t>(k, 8)];
    else out += kAscii[std::min<size_t>(k, 9)];
  }
  return out;
}

std::string roles_text(const status::RolesView& r) {
  std::string t = "roles";
  if (!r.at.empty()) t += " at " + r.at;
  if (r.at_real_ns) t += " " + clock_time(double(r.at_real_ns) / 1e9);
  if (r.device >= 0) t += " (device " + std::to_string(r.device) + ")";
  if (!r.status.empty() && r.status != "complete") t += " [" + r.status + "]";
  t += ":";
  for (size_t i = 0; i < kRoleCount; ++i)
    if (r.bytes[i]) t += std::string(" ") + role_label(kRoles[i]) + " " + format_bytes(r.bytes[i]) + ",";
  if (t.back() == ',') t.pop_back();
  return t;
}

void TopHistory::fill(const TopSnapshot& s, std::vector<TopRow>* rows) {
  std::map<Key, std::pair<uint64_t, uint64_t>> now;
  for (TopRow& r : *rows) {
    const status::RegionView& v = s.processes[r.process].v;
    const status::DeviceView& d = v.devices[r.device];
    const Key key{v.pid, v.start_ticks, d.device};
    auto it = last_.find(key);
    if (it != last_.end() && s.mono_ns > it->second.second) {
      r.change_known = true;
      r.change = int64_t(d.live_bytes - it->second.first);  // modular: absurd figures never overflow
      r.change_over_s = double(s.mono_ns - it->second.second) / 1e9;
    } else if (d.curve.size() >= 1) {
      r.change_known = true;
      r.change = int64_t(d.live_bytes - d.curve.back());
      r.change_over_s = 1;
    }
    now[key] = {d.live_bytes, s.mono_ns};
  }
  last_.swap(now);
}

std::vector<TopRow> top_rows(const TopSnapshot& s, Cards& cards, TopHistory* history) {
  std::vector<TopRow> rows;
  cards.refresh();
  for (size_t p = 0; p < s.processes.size(); ++p)
    for (size_t d = 0; d < s.processes[p].v.devices.size(); ++d) {
      TopRow r;
      r.process = p;
      r.device = d;
      const status::DeviceView& dv = s.processes[p].v.devices[d];
      r.card = cards.memory(dv.bus_id, dv.device);
      rows.push_back(r);
    }
  history->fill(s, &rows);
  return rows;
}

void sort_rows(const TopSnapshot& s, TopSort sort, std::vector<TopRow>* rows) {
  auto bytes = [&](const TopRow& r) {
    const status::DeviceView& d = device_of(s, r);
    return sort == TopSort::kLive ? d.live_bytes : d.peak_bytes;
  };
  auto growth = [](const TopRow& r) { return r.change_known ? r.change : INT64_MIN; };
  std::stable_sort(rows->begin(), rows->end(), [&](const TopRow& a, const TopRow& b) {
    return sort == TopSort::kGrowth ? growth(a) > growth(b) : bytes(a) > bytes(b);
  });
}

std::vector<TopLine> render_screen(const TopSnapshot& s, const std::vector<TopRow>& rows, const ScreenState& st,
                                   const std::string& cards_problem) {
  const size_t w = size_t(std::max(st.width, 1)), h = size_t(std::max(st.height, 1));
  std::vector<TopLine> out;
  out.push_back({fit(header_line(s, st), w), LineStyle::kHeader});
  if (st.help) {
    for (const TopLine& l : help_lines(s, cards_problem)) out.push_back({fit(l.text, w), l.style});
  } else {
    out.push_back({table_head(w), LineStyle::kHeader});
    // The table takes up to half of what is left; the detail the rest.
    const size_t body = h > 3 ? h - 3 : 0;
    const size_t table = std::min(rows.size(), std::max<size_t>(1, body / 2));
    const size_t first = st.selected >= table ? st.selected - table + 1 : 0;
    for (size_t i = first; i < rows.size() && i < first + table; ++i)
      out.push_back({table_row(s, rows[i], w), i == st.selected ? LineStyle::kSelected : LineStyle::kPlain});
    if (rows.empty())
      out.push_back({fit(std::string("  no process runs with the recorder here") +
                             (s.skipped.empty() ? "" : " (h: what was skipped)"),
                         w),
                     LineStyle::kNote});
    if (!rows.empty() && st.selected < rows.size() && out.size() + 2 < h) {
      out.push_back({""});
      detail_lines(s, rows[st.selected], st, h - 1 - out.size(), &out);
    }
  }
  while (out.size() + 1 < h) out.push_back({""});
  if (out.size() >= h) out.resize(h - 1);
  out.push_back({fit(keys_line(st), w), st.message.empty() ? LineStyle::kNote : LineStyle::kHeader});
  return out;
}

std::string render_text(const TopSnapshot& s, const std::vector<TopRow>& rows, size_t top_sites,
                        const std::string& cards_problem) {
  const size_t w = 4096;
  ScreenState st;
  std::string out = header_line(s, st) + "\n" + table_head(w) + "\n";
  for (const TopRow& r : rows) out += table_row(s, r, w) + "\n";
  if (rows.empty()) out += "  no process runs with the recorder here\n";
  for (const TopProcess& p : s.processes) {
    const status::RegionView& v = p.v;
    out += "\npid " + std::to_string(v.pid) + ": top sites (" + std::to_string(v.sites_total) + " in all)";
    const std::string words = state_words(v);
    out += words.empty() ? "\n" : "  (" + words + ")\n";
    out += sites_head(w) + "\n";
    for (size_t i = 0; i < v.sites.size() && i < top_sites; ++i) out += site_line(v.sites[i], w) + "\n";
    if (v.sites.empty()) out += "  no live allocations\n";
    if (v.roles.present) out += roles_text(v.roles) + "\n";
  }
  if (!cards_problem.empty() && !rows.empty()) out += "\n(" + cards_problem + ")\n";
  for (const TopSkipped& k : s.skipped)
    out += "skipped " + (k.file.empty() ? "pid " + std::to_string(k.pid) : k.file) + ": " + k.why + "\n";
  return out;
}

}  // namespace gpumemrec::cli
