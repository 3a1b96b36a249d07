// gpumemrec html BUNDLE -o report.html: one self-contained HTML report.
// Never embeds raw events: curves are downsampled (min/max per bucket),
// sites aggregated, tables capped.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/analysis.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/html_template.h"
#include "tools/output_file.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

constexpr size_t kCurvePoints = 2000;
constexpr size_t kMaxSites = 2000;
constexpr size_t kMaxAllocs = 2000;
constexpr size_t kMaxOoms = 500;
constexpr size_t kStackFrames = 64;

struct HtmlOptions {
  std::string bundle;
  std::string output = "gpumemrec-report.html";
};

void num(std::string& o, uint64_t v) { o += std::to_string(v); }
void num(std::string& o, int64_t v) { o += std::to_string(v); }
void num(std::string& o, int32_t v) { o += std::to_string(v); }
void dbl(std::string& o, double v, int prec = 6) {
  char b[64];
  snprintf(b, sizeof b, "%.*f", prec, v);
  o += b;
}
void key(std::string& o, const char* k) {
  o += '"';
  o += k;
  o += "\":";
}

std::string top_frame(const Bundle& b, uint64_t id) {
  const Stack* s = id ? b.find_stack(id) : nullptr;
  if (!s || s->frames.empty()) return id ? "stack " + std::to_string(id) : "(no stack)";
  return format_frame(s->frames.front());
}

std::string build_data(const Bundle& b) {
  const Metadata& m = b.metadata;
  std::string o;
  o.reserve(1 << 20);
  o += "{";
  // meta
  uint64_t live_total = 0;
  for (auto& a : b.allocations) live_total += a.size;
  key(o, "meta");
  o += "{";
  key(o, "bundle"); json_escape(o, b.manifest.bundle_name.empty() ? basename_of(b.path) : b.manifest.bundle_name);
  o += ","; key(o, "api"); json_escape(o, m.api);
  o += ","; key(o, "requested"); num(o, m.requested_bytes);
  o += ","; key(o, "error_name"); json_escape(o, m.error_name);
  o += ","; key(o, "device"); num(o, m.device_id);
  o += ","; key(o, "free"); if (m.device_free_bytes) num(o, *m.device_free_bytes); else o += "null";
  o += ","; key(o, "total"); if (m.device_total_bytes) num(o, *m.device_total_bytes); else o += "null";
  o += ","; key(o, "live_bytes"); num(o, m.live_bytes);
  o += ","; key(o, "live_allocations"); num(o, m.live_allocations);
  o += ","; key(o, "live_total"); num(o, live_total);
  o += ","; key(o, "reason"); json_escape(o, m.reason.empty() ? b.manifest.reason : m.reason);
  o += ","; key(o, "timestamp"); dbl(o, m.timestamp);
  o += ","; key(o, "pid"); num(o, b.manifest.pid);
  o += ","; key(o, "host"); json_escape(o, b.hostname());
  o += ","; key(o, "rank"); if (m.rank) num(o, *m.rank); else o += "null";
  std::string cmd;
  for (auto& a : b.environment.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
  o += ","; key(o, "cmdline"); json_escape(o, cmd);
  o += ","; key(o, "stack_id"); num(o, m.stack_id);
  o += "}";

  std::set<uint64_t> stacks_used;
  if (m.stack_id) stacks_used.insert(m.stack_id);

  // curves
  double tmin = 0, tmax = 0;
  if (!b.events.empty()) {
    tmin = b.events.front().timestamp;
    tmax = b.events.back().timestamp;
    for (auto& e : b.events) {  // not necessarily sorted by time across threads
      tmin = std::min(tmin, e.timestamp);
      tmax = std::max(tmax, e.timestamp);
    }
  }
  o += ","; key(o, "t_min"); dbl(o, tmin);
  o += ","; key(o, "t_max"); dbl(o, tmax);
  o += ","; key(o, "event_count"); num(o, static_cast<uint64_t>(b.events.size()));
  o += ","; key(o, "curves"); o += "[";
  std::string note;
  bool first = true;
  for (int32_t dev : analysis::devices(b)) {
    auto pts = analysis::memory_curve(b, dev, kCurvePoints);
    if (pts.empty()) continue;
    uint64_t peak = 0;
    for (auto& p : pts) peak = std::max(peak, p.v);
    uint64_t total = 0;
    for (auto& d : b.environment.devices)
      if (d.device_id == dev) total = d.total_bytes;
    if (!total && dev == m.device_id && m.device_total_bytes) total = *m.device_total_bytes;
    if (!first) o += ",";
    first = false;
    o += "{"; key(o, "device"); num(o, dev);
    o += ","; key(o, "peak"); num(o, peak);
    o += ","; key(o, "total"); if (total) num(o, total); else o += "null";
    o += ","; key(o, "points"); o += "[";
    for (size_t i = 0; i < pts.size(); ++i) {
      if (i) o += ",";
      o += "[";
      dbl(o, pts[i].t);
      o += ",";
      num(o, pts[i].v);
      o += "]";
    }
    o += "]}";
    size_t n = 0;
    for (auto& e : b.events) n += e.device_id == dev;
    note += (note.empty() ? "" : "; ") + std::string("device ") + std::to_string(dev) + ": " + std::to_string(n) +
            " events" + (n > pts.size() ? " shown as " + std::to_string(pts.size()) + " points (min/max per time bucket)" : "");
  }
  o += "]";
  o += ","; key(o, "curve_note"); json_escape(o, note.empty() ? "" : note + ". Red lines: OOMs.");

  // ooms
  o += ","; key(o, "ooms"); o += "[";
  size_t n_oom = 0;
  for (auto& e : b.events) {
    if (e.kind != EventKind::kOom || n_oom >= kMaxOoms) continue;
    if (n_oom++) o += ",";
    o += "{"; key(o, "device"); num(o, e.device_id);
    o += ","; key(o, "t"); dbl(o, e.timestamp);
    o += ","; key(o, "size"); num(o, e.size);
    o += ","; key(o, "api"); json_escape(o, b.str(e.api));
    o += "}";
  }
  o += "]";

  // sites
  auto sites = analysis::live_sites(b);
  o += ","; key(o, "sites_total"); num(o, static_cast<uint64_t>(sites.size()));
  o += ","; key(o, "sites"); o += "[";
  for (size_t i = 0; i < sites.size() && i < kMaxSites; ++i) {
    if (i) o += ",";
    stacks_used.insert(sites[i].stack_id);
    o += "{"; key(o, "id"); num(o, sites[i].stack_id);
    o += ","; key(o, "bytes"); num(o, sites[i].bytes);
    o += ","; key(o, "count"); num(o, sites[i].count);
    o += ","; key(o, "top"); json_escape(o, top_frame(b, sites[i].stack_id));
    o += "}";
  }
  o += "]";

  // allocations, largest first
  std::vector<size_t> idx(b.allocations.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  size_t keep = std::min(kMaxAllocs, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(),
                    [&](size_t x, size_t y) { return b.allocations[x].size > b.allocations[y].size; });
  o += ","; key(o, "allocs_total"); num(o, static_cast<uint64_t>(b.allocations.size()));
  o += ","; key(o, "allocs"); o += "[";
  for (size_t k = 0; k < keep; ++k) {
    const Allocation& a = b.allocations[idx[k]];
    stacks_used.insert(a.stack_id);
    if (k) o += ",";
    o += "{"; key(o, "a"); json_escape(o, hex(a.address));
    o += ","; key(o, "s"); num(o, a.size);
    o += ","; key(o, "d"); num(o, a.device_id);
    o += ","; key(o, "api"); json_escape(o, a.api);
    o += ","; key(o, "mt"); json_escape(o, a.memory_type);
    o += ","; key(o, "age"); if (m.timestamp > 0 && a.timestamp > 0) dbl(o, m.timestamp - a.timestamp, 3); else o += "null";
    o += ","; key(o, "seq"); num(o, a.seq);
    o += ","; key(o, "site"); num(o, a.stack_id);
    o += ","; key(o, "top"); json_escape(o, top_frame(b, a.stack_id));
    o += "}";
  }
  o += "]";

  // stacks referenced above
  o += ","; key(o, "stacks"); o += "{";
  first = true;
  for (uint64_t id : stacks_used) {
    const Stack* s = id ? b.find_stack(id) : nullptr;
    if (!s) continue;
    if (!first) o += ",";
    first = false;
    o += '"' + std::to_string(id) + "\":[";
    size_t n = std::min(kStackFrames, s->frames.size());
    for (size_t i = 0; i < n; ++i) {
      if (i) o += ",";
      const Frame& f = s->frames[i];
      json_escape(o, std::string(f.kind == FrameKind::kPython ? "py  " : "    ") + format_frame(f));
    }
    if (n < s->frames.size()) {
      o += ",";
      json_escape(o, "    ... " + std::to_string(s->frames.size() - n) + " more frames");
    }
    o += "]";
  }
  o += "}";

  // API counts
  o += ","; key(o, "apis"); o += "[";
  auto counts = analysis::api_counts(b);
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto& c = counts[i];
    if (i) o += ",";
    o += "{"; key(o, "api"); json_escape(o, c.api);
    o += ","; key(o, "alloc"); num(o, c.alloc);
    o += ","; key(o, "free"); num(o, c.free);
    o += ","; key(o, "oom"); num(o, c.oom);
    o += ","; key(o, "failed"); num(o, c.failed);
    o += ","; key(o, "other"); num(o, c.other);
    o += ","; key(o, "total"); num(o, c.total);
    o += "}";
  }
  o += "]}";
  return o;
}

}  // namespace

RunFn add_html(CLI::App& root) {
  auto o = std::make_shared<HtmlOptions>();
  CLI::App* app = root.add_subcommand("html", "Write a self-contained HTML report (no network needed to view it)");
  app->add_option("BUNDLE", o->bundle, "Bundle directory")->required();
  app->add_option("-o,--output", o->output, "Output HTML file ('-' for stdout)")->capture_default_str();
  app->footer("The page shows memory over time per device (downsampled to ~2000 points, min/max per bucket)\n"
              "with OOMs marked, a treemap of live bytes by call site, sortable tables of sites and of the\n"
              "2000 largest live allocations, and the stack of whatever you click.");
  return [=]() -> int {
    if (!is_bundle_dir(o->bundle) && is_directory(o->bundle) && !find_bundles(o->bundle).empty())
      bad_input(o->bundle, "is a directory of bundles; give one bundle (see 'gpumemrec ls " + o->bundle + "')");
    Bundle b;
    Progress progress;
    load_bundle(o->bundle, &b, false, &progress);
    if (progress.enabled()) progress.update("writing HTML", 0.5);
    std::string data = build_data(b);
    std::string head = kHtmlHead;
    std::string title = "gpumemrec report: " + (b.manifest.bundle_name.empty() ? basename_of(b.path) : b.manifest.bundle_name);
    std::string t_esc;
    for (char c : title) t_esc += c == '<' ? "&lt;" : c == '&' ? "&amp;" : std::string(1, c);
    size_t p = head.find("@@TITLE@@");
    if (p != std::string::npos) head.replace(p, 9, t_esc);
    OutputFile out(o->output);
    out.write(head);
    out.write(data);
    out.write(kHtmlTail);
    out.close();
    progress.done();
    return kOk;
  };
}

}  // namespace gpumemrec::cli
