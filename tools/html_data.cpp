#include "tools/html_data.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/analysis.h"
#include "tools/cli.h"
#include "tools/flame_graph.h"
#include "tools/framework_view.h"
#include "tools/role_view.h"
#include "common/names.h"
#include "common/site_rules.h"
#include "tools/output_file.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

constexpr size_t kCurvePoints = 2000;
constexpr size_t kMaxSites = 2000;
constexpr size_t kMaxAllocs = 2000;
constexpr size_t kMaxOoms = 500;
constexpr size_t kStackFrames = 64;
constexpr size_t kFlameNodes = 20000;
constexpr size_t kDiffSites = 200;

// A tiny appender for the hand-written JSON (the page's data is flat and big:
// appending beats building a DOM).
struct Json {
  std::string o;
  Json& raw(const char* s) { o += s; return *this; }
  Json& key(const char* k) { o += '"'; o += k; o += "\":"; return *this; }
  Json& num(uint64_t v) { o += std::to_string(v); return *this; }
  Json& num(int64_t v) { o += std::to_string(v); return *this; }
  Json& num(int32_t v) { o += std::to_string(v); return *this; }
  Json& dbl(double v, int prec = 6) {
    char b[64];
    snprintf(b, sizeof b, "%.*f", prec, v);
    o += b;
    return *this;
  }
  Json& str(const std::string& s) { json_escape(o, s); return *this; }
  Json& opt(const std::optional<uint64_t>& v) { return v ? num(*v) : raw("null"); }
};

struct Page {
  const Bundle& b;
  BundleInsight in;  // framework.json, peak.json, roles, advice
  Json j;
  std::set<uint64_t> stacks_used;
  flame::Graph flame;
};

// The verdict (tools/verdict.h): outcome and detail ("" when none), the
// recovery (null unless recovered) and the count of recovered failures.
void add_verdict(Json& j, const Bundle& b) {
  j.raw(",").key("outcome").str(b.outcome()).raw(",").key("outcome_detail").str(b.outcome_detail());
  j.raw(",").key("recovery");
  const auto& r = b.metadata.recovery;
  if (r && b.outcome() == "recovered") {
    j.raw("{").key("after_ms").dbl(r->after_ms, 3).raw(",").key("freed").num(r->freed_bytes);
    j.raw(",").key("retry_size").num(r->retry_size).raw(",").key("retry_api").str(r->retry_api);
    j.raw(",").key("thread").num(static_cast<uint64_t>(r->thread_id));
    j.raw(",").key("handler").str(r->handler).raw("}");
  } else {
    j.raw("null");
  }
  j.raw(",").key("recovered_failures").num(b.metadata.recovered_count);
}

// Primary contexts destroyed (cudaDeviceReset, the last primary-context
// release ...): what they freed, as `report` says it under WHAT FAILED.
void add_context_destructions(Page& p) {
  Json& j = p.j;
  j.raw(",").key("context_destructions").raw("[");
  bool first = true;
  for (const analysis::ContextDestruction& c : analysis::context_destructions(p.b)) {
    j.raw(first ? "{" : ",{").key("device").num(c.device).raw(",").key("api").str(c.api);
    j.raw(",").key("created").raw(api_destroys_created_context(c.api) ? "true" : "false");
    j.raw(",").key("stack_id").num(c.stack_id).raw(",").key("allocations").num(c.allocations);
    j.raw(",").key("bytes").num(c.bytes).raw(",").key("t").dbl(c.timestamp).raw("}");
    if (c.stack_id) p.stacks_used.insert(c.stack_id);
    first = false;
  }
  j.raw("]");
}

void add_meta(Page& p) {
  const Bundle& b = p.b;
  const Metadata& m = b.metadata;
  uint64_t live_total = 0;
  for (auto& a : b.allocations) live_total += a.size;
  std::string cmd;
  for (auto& a : b.environment.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
  Json& j = p.j;
  j.key("meta").raw("{");
  j.key("bundle").str(b.manifest.bundle_name.empty() ? basename_of(b.path) : b.manifest.bundle_name);
  j.raw(",").key("api").str(m.api).raw(",").key("requested").num(m.requested_bytes);
  j.raw(",").key("error_name").str(m.error_name).raw(",").key("device").num(m.device_id);
  j.raw(",").key("free").opt(m.device_free_bytes).raw(",").key("total").opt(m.device_total_bytes);
  j.raw(",").key("live_bytes").num(m.live_bytes).raw(",").key("live_allocations").num(m.live_allocations);
  j.raw(",").key("live_total").num(live_total);
  j.raw(",").key("reason").str(m.reason.empty() ? b.manifest.reason : m.reason);
  j.raw(",").key("timestamp").dbl(m.timestamp).raw(",").key("pid").num(b.manifest.pid);
  j.raw(",").key("host").str(b.hostname()).raw(",").key("rank");
  if (m.rank) j.num(*m.rank);
  else j.raw("null");
  j.raw(",").key("cmdline").str(cmd).raw(",").key("stack_id").num(m.stack_id);
  j.raw(",").key("fail_site").str(m.stack_id ? analysis::top_frame(b, m.stack_id, false) : std::string());
  j.raw(",").key("fail_lib").str(analysis::library_of(b, m.stack_id));
  add_verdict(j, b);
  add_context_destructions(p);
  // The framework's own view (framework.json, JAX's memory profile), as
  // `report` prints it; "" when the bundle has none.
  j.raw(",").key("framework").str(framework_view_text(p.in.fw, 10));
  j.raw("}");
  if (m.stack_id) p.stacks_used.insert(m.stack_id);
}

void add_curve_points(Json& j, const std::vector<analysis::CurvePoint>& pts) {
  j.key("points").raw("[");
  for (size_t i = 0; i < pts.size(); ++i) {
    if (i) j.raw(",");
    j.raw("[").dbl(pts[i].t).raw(",").num(pts[i].v).raw("]");
  }
  j.raw("]");
}

uint64_t device_total(const Bundle& b, int32_t dev) {
  for (auto& d : b.environment.devices)
    if (d.device_id == dev && d.total_bytes) return d.total_bytes;
  if (dev == b.metadata.device_id && b.metadata.device_total_bytes) return *b.metadata.device_total_bytes;
  return 0;
}

void add_curves(Page& p) {
  const Bundle& b = p.b;
  Json& j = p.j;
  double tmin = 0, tmax = 0;
  if (!b.events.empty()) {
    tmin = tmax = b.events.front().timestamp;
    for (auto& e : b.events) {  // not necessarily sorted by time across threads
      tmin = std::min(tmin, e.timestamp);
      tmax = std::max(tmax, e.timestamp);
    }
  }
  j.raw(",").key("t_min").dbl(tmin).raw(",").key("t_max").dbl(tmax);
  j.raw(",").key("event_count").num(static_cast<uint64_t>(b.events.size()));
  j.raw(",").key("curves").raw("[");
  std::string note;
  bool first = true;
  for (int32_t dev : analysis::devices(b)) {
    auto pts = analysis::memory_curve(b, dev, kCurvePoints);
    if (pts.empty()) continue;
    uint64_t peak = 0;
    for (auto& x : pts) peak = std::max(peak, x.v);
    uint64_t total = device_total(b, dev);
    j.raw(first ? "{" : ",{").key("device").num(dev).raw(",").key("peak").num(peak).raw(",").key("total");
    if (total) j.num(total);
    else j.raw("null");
    j.raw(",");
    add_curve_points(j, pts);
    j.raw("}");
    first = false;
    size_t n = 0;
    for (auto& e : b.events) n += e.device_id == dev;
    note += (note.empty() ? "" : "; ") + std::string("device ") + std::to_string(dev) + ": " + std::to_string(n) + " events" +
            (n > pts.size() ? " shown as " + std::to_string(pts.size()) + " points (min/max per time bucket)" : "");
  }
  j.raw("]").raw(",").key("curve_note").str(note.empty() ? "" : note + ".");
}

void add_ooms(Page& p) {
  Json& j = p.j;
  j.raw(",").key("ooms").raw("[");
  size_t n = 0;
  for (const auto& x : analysis::oom_marks(p.b)) {
    if (n >= kMaxOoms) break;
    j.raw(n++ ? ",{" : "{").key("device").num(x.device).raw(",").key("t").dbl(x.t).raw(",").key("size").num(x.size);
    j.raw(",").key("api").str(p.b.str(x.api)).raw(",").key("thread").num(static_cast<uint64_t>(x.thread));
    j.raw(",").key("recovered").raw(x.recovered ? "true" : "false").raw(",").key("verdict").str(x.verdict).raw("}");
  }
  j.raw("]");
}

int32_t leaf_of(const Page& p, uint64_t stack_id) {
  auto it = p.flame.leaf_of_stack.find(stack_id);
  return it == p.flame.leaf_of_stack.end() ? 0 : it->second;
}

void add_flame(Page& p) {
  Json& j = p.j;
  j.raw(",").key("flame").raw("{").key("labels").raw("[");
  for (size_t i = 0; i < p.flame.labels.size(); ++i) {
    const auto& l = p.flame.labels[i];
    j.raw(i ? ",[" : "[").str(l.short_name).raw(",");
    if (l.full_name == l.short_name) j.raw("0");  // same as the short form
    else j.str(l.full_name);
    j.raw("]");
  }
  j.raw("],").key("nodes").raw("[");
  for (size_t i = 0; i < p.flame.nodes.size(); ++i) {
    const auto& n = p.flame.nodes[i];
    j.raw(i ? ",[" : "[").num(n.parent).raw(",").num(static_cast<uint64_t>(n.name)).raw(",").num(n.bytes).raw(",");
    j.num(n.count).raw(",").num(static_cast<uint64_t>(n.kind)).raw(",").num(n.end).raw("]");
  }
  j.raw("],").key("pruned").num(static_cast<uint64_t>(p.flame.pruned_nodes)).raw("}");
}

void add_sites(Page& p) {
  Json& j = p.j;
  auto sites = model::live_sites(p.b);
  j.raw(",").key("sites_total").num(static_cast<uint64_t>(sites.size())).raw(",").key("sites").raw("[");
  for (size_t i = 0; i < sites.size() && i < kMaxSites; ++i) {
    p.stacks_used.insert(sites[i].stack_id);
    j.raw(i ? ",{" : "{").key("id").num(sites[i].stack_id).raw(",").key("bytes").num(sites[i].bytes);
    j.raw(",").key("count").num(sites[i].count).raw(",").key("leaf").num(leaf_of(p, sites[i].stack_id));
    j.raw(",").key("top").str(analysis::top_frame(p.b, sites[i].stack_id, false));
    j.raw(",").key("lib").str(analysis::library_of(p.b, sites[i].stack_id));
    j.raw(",").key("full").str(analysis::top_frame(p.b, sites[i].stack_id, true)).raw("}");
  }
  j.raw("]");
}

void add_allocs(Page& p) {
  const Bundle& b = p.b;
  Json& j = p.j;
  std::vector<size_t> idx(b.allocations.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  size_t keep = std::min(kMaxAllocs, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(),
                    [&](size_t x, size_t y) { return b.allocations[x].size > b.allocations[y].size; });
  j.raw(",").key("allocs_total").num(static_cast<uint64_t>(b.allocations.size())).raw(",").key("allocs").raw("[");
  for (size_t k = 0; k < keep; ++k) {
    const Allocation& a = b.allocations[idx[k]];
    p.stacks_used.insert(a.stack_id);
    j.raw(k ? ",{" : "{").key("a").str(hex(a.address)).raw(",").key("s").num(a.size).raw(",").key("d").num(a.device_id);
    j.raw(",").key("api").str(a.api).raw(",").key("mt").str(a.memory_type).raw(",").key("age");
    if (b.metadata.timestamp > 0 && a.timestamp > 0) j.dbl(b.metadata.timestamp - a.timestamp, 6);
    else j.raw("null");
    j.raw(",").key("seq").num(a.seq).raw(",").key("site").num(a.stack_id).raw(",").key("leaf").num(leaf_of(p, a.stack_id));
    j.raw(",").key("top").str(analysis::top_frame(b, a.stack_id, false));
    j.raw(",").key("lib").str(analysis::library_of(b, a.stack_id)).raw("}");
  }
  j.raw("]");
}

// A stack as [short, full] lines: the site line first, then the frames with
// runtime, framework and interpreter frames folded (common/site_rules.h);
// the flame graph keeps every frame.
void add_stack(Json& j, const Stack& s) {
  j.raw("[");
  const std::string site = analysis::site_line(s, false);
  j.raw("[").str(site).raw(",").str(analysis::site_line(s, true)).raw("]");
  const std::vector<site::FoldedLine> lines = site::fold_frames(s, site::rules_from_environment());
  size_t n = std::min(kStackFrames, lines.size()), shown = 0;
  for (size_t i = 0; i < n; ++i) {
    const Frame& f = s.frames[lines[i].first];
    shown += lines[i].count;
    if (lines[i].count > 1) {
      const std::string t = "    " + site::folded_text(lines[i]);
      j.raw(",[").str(t).raw(",").str(t).raw("]");
      continue;
    }
    const char* py = f.kind == FrameKind::kPython ? "py  " : "    ";
    j.raw(",[").str(py + names::frame_label(f, false)).raw(",").str(py + names::frame_label(f, true)).raw("]");
  }
  if (shown < s.frames.size()) {
    std::string more = "    ... " + std::to_string(s.frames.size() - shown) + " more frames";
    j.raw(",[").str(more).raw(",").str(more).raw("]");
  }
  std::string why = names::python_status_text(s.python);
  if (!why.empty()) j.raw(",[").str("    (" + why + ")").raw(",0]");
  j.raw("]");
}

// metadata.json device_accounting: one stacked bar per device.
void add_accounting(Page& p) {
  Json& j = p.j;
  j.raw(",").key("accounting").raw("[");
  bool first = true;
  auto opt = [&](const char* k, auto v) {
    j.raw(",").key(k);
    if (v) j.num(static_cast<uint64_t>(*v < 0 ? 0 : *v));
    else j.raw("null");
  };
  for (const DeviceAccounting& a : p.b.metadata.device_accounting) {
    j.raw(first ? "{" : ",{").key("device").num(static_cast<uint64_t>(a.device < 0 ? 0 : a.device));
    first = false;
    opt("total", a.total_bytes ? std::optional<int64_t>(static_cast<int64_t>(*a.total_bytes)) : std::nullopt);
    opt("free", a.free_bytes ? std::optional<int64_t>(static_cast<int64_t>(*a.free_bytes)) : std::nullopt);
    j.raw(",").key("libs").raw("[");
    for (size_t i = 0; i < a.recorded_by_library.size(); ++i)
      j.raw(i ? ",[" : "[").str(a.recorded_by_library[i].first).raw(",").num(a.recorded_by_library[i].second).raw("]");
    j.raw("]");
    opt("unrecorded", a.process_unrecorded_bytes);
    std::optional<int64_t> others;
    if (a.other_processes) {
      others = 0;
      for (const GpuProcessUse& u : *a.other_processes) *others += static_cast<int64_t>(u.used_bytes.value_or(0));
    }
    opt("others", others);
    opt("unaccounted", a.unaccounted_bytes);
    j.raw(",").key("note").str(a.note).raw("}");
  }
  j.raw("]");
}

// Memory by role (common/roles.h): one bar per device beside the
// accounting's; each row [label, bytes or null, layer, role].
void add_roles(Page& p) {
  Json& j = p.j;
  j.raw(",").key("roles").raw("[");
  for (size_t t = 0; t < p.in.roles.size(); ++t) {
    const RoleTable& r = p.in.roles[t];
    j.raw(t ? ",{" : "{").key("device").num(r.device).raw(",").key("total").opt(r.total_bytes);
    j.raw(",").key("from").str(r.roles_from).raw(",").key("rows").raw("[");
    for (size_t i = 0; i < r.rows.size(); ++i) {
      j.raw(i ? ",[" : "[").str(role_row_label(r.rows[i])).raw(",");
      if (r.rows[i].bytes) j.num(*r.rows[i].bytes);
      else j.raw("null");
      j.raw(",").str(r.rows[i].layer).raw(",").str(r.rows[i].role).raw("]");
    }
    j.raw("],").key("notes").raw("[");
    for (size_t i = 0; i < r.notes.size(); ++i) j.raw(i ? "," : "").str(r.notes[i]);
    j.raw("]}");
  }
  j.raw("],").key("advice").raw("[");
  for (size_t i = 0; i < p.in.advice.size(); ++i)
    j.raw(i ? ",[" : "[").str(p.in.advice[i].action).raw(",").str(p.in.advice[i].evidence).raw("]");
  j.raw("],").key("peak").raw("[");
  for (size_t i = 0; i < p.in.peak.devices.size(); ++i) {
    const PeakDevice& d = p.in.peak.devices[i];
    j.raw(i ? ",{" : "{").key("device").num(d.device).raw(",").key("bytes").num(d.peak_bytes);
    j.raw(",").key("t").dbl(double(d.peak_time_ns) / 1e9).raw(",").key("exact").raw(d.exact ? "true" : "false");
    j.raw(",").key("why").str(d.why_inexact).raw("}");
  }
  j.raw("]");
}

void add_stacks(Page& p) {
  Json& j = p.j;
  j.raw(",").key("stacks").raw("{");
  bool first = true;
  for (uint64_t id : p.stacks_used) {
    const Stack* s = id ? p.b.find_stack(id) : nullptr;
    if (!s) continue;
    j.raw(first ? "\"" : ",\"").num(id).raw("\":");
    first = false;
    add_stack(j, *s);
  }
  j.raw("}");
}

void add_apis(Page& p) {
  Json& j = p.j;
  j.raw(",").key("apis").raw("[");
  auto counts = analysis::api_counts(p.b);
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto& c = counts[i];
    j.raw(i ? ",{" : "{").key("api").str(c.api).raw(",").key("alloc").num(c.alloc).raw(",").key("free").num(c.free);
    j.raw(",").key("oom").num(c.oom).raw(",").key("failed").num(c.failed).raw(",").key("other").num(c.other);
    j.raw(",").key("total").num(c.total).raw("}");
  }
  j.raw("]");
}

void add_baseline(Page& p, const diff::SiteTotals* o, const diff::SiteTotals* n) {
  Json& j = p.j;
  j.raw(",").key("baseline");
  if (!o || !n) {
    j.raw("null");
    return;
  }
  j.raw("{").key("bundles").num(static_cast<uint64_t>(o->bundles.size())).raw(",").key("name");
  j.str(o->bundles.size() == 1 ? basename_of(o->bundles[0]) : std::to_string(o->bundles.size()) + " bundles");
  j.raw(",").key("old_bytes").num(o->bytes).raw(",").key("new_bytes").num(n->bytes).raw(",").key("sites").raw("[");
  size_t k = 0;
  for (const auto& d : diff::compare(*o, *n)) {
    if (d.status == diff::Status::kSame || k >= kDiffSites) continue;
    const auto& fr = d.site->frames;
    j.raw(k++ ? ",{" : "{").key("status").str(diff::status_name(d.status)).raw(",").key("delta").num(d.delta());
    j.raw(",").key("old").num(d.old_bytes).raw(",").key("new").num(d.new_bytes);
    const Frame* site = diff::site_of(*d.site);
    j.raw(",").key("top").str(site ? names::frame_label(*site, false) : "(no frames)");
    j.raw(",").key("lib").str(d.site->library);
    j.raw(",").key("frames").raw("[");
    for (size_t i = 0; i < fr.size() && i < kStackFrames; ++i)
      j.raw(i ? "," : "").str(std::string(fr[i].kind == FrameKind::kPython ? "py  " : "    ") + names::frame_label(fr[i], false));
    j.raw("]}");
  }
  j.raw("]}");
}

}  // namespace

std::string build_html_data(const Bundle& b, const diff::SiteTotals* baseline, const diff::SiteTotals* baseline_new) {
  Page p{b, read_insight(b), {}, {}, flame::build(b, kFlameNodes)};
  p.j.o.reserve(1 << 20);
  p.j.raw("{");
  add_meta(p);
  add_curves(p);
  add_ooms(p);
  add_flame(p);
  add_sites(p);
  add_allocs(p);
  add_stacks(p);
  add_accounting(p);
  add_roles(p);
  add_apis(p);
  add_baseline(p, baseline, baseline_new);
  p.j.raw("}");
  return std::move(p.j.o);
}

}  // namespace gpumemrec::cli
