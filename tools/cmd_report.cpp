// gpumemrec report BUNDLE|DIR: the terminal answer to "why did it OOM?".
// Text by default, --json for scripts (keys documented in docs/cli.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/analysis.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/framework_view.h"
#include "tools/json_out.h"
#include "tools/peak_view.h"
#include "tools/role_view.h"
#include "tools/verdict.h"
#include "common/card_accounting.h"
#include "common/card_accounting_json.h"
#include "common/names.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

struct ReportOptions {
  std::string path;
  size_t top = 10;
  size_t frames = 8;
  size_t oldest = 10;
  size_t width = 64;
  bool ascii = false;
  bool json = false;
  bool verbose = false;
  bool all_frames = false;
};

void out(const std::string& s) { fputs(s.c_str(), stdout); }

constexpr size_t kRecoveredRows = 32;  // the shim lists at most 32
constexpr size_t kFrameworkRows = 10;  // mostly-free segments, JAX buffer sites

std::string dev_name(int32_t d) { return d < 0 ? "unknown device" : "device " + std::to_string(d); }
std::string reason_of(const Bundle& b) { return b.metadata.reason.empty() ? b.manifest.reason : b.metadata.reason; }
int64_t pid_of(const Bundle& b) { return b.manifest.pid ? b.manifest.pid : b.environment.pid; }
std::string plural(uint64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// ---- text, one function per section ----------------------------------------

void text_header(const Bundle& b) {
  const Metadata& m = b.metadata;
  std::string host = b.hostname();
  out("gpumemrec report: " + b.path + "\n");
  std::string line = "  ";
  if (!host.empty()) line += "host " + host + "  ";
  line += "pid " + std::to_string(pid_of(b)) + "  ";
  if (m.rank) line += "rank " + std::to_string(*m.rank) + "  ";
  line += "backend " + (m.backend.empty() ? b.manifest.backend : m.backend) + "  ";
  line += "reason " + reason_of(b) + "  " + utc_time(m.timestamp);
  out(line + "\n" + outcome_line(b));
  if (!b.environment.cmdline.empty()) {
    std::string c;
    for (auto& a : b.environment.cmdline) c += (c.empty() ? "" : " ") + a;
    if (c.size() > 120) c = c.substr(0, 117) + "...";
    out("  command: " + c + "\n");
  }
}

std::string live_line(const Metadata& m) {
  std::string live = "  live: " + format_bytes(m.live_bytes) + " in " + plural(m.live_allocations, "allocation");
  if (m.live_bytes_by_device.empty()) return live;
  live += " (";
  bool first = true;
  for (auto& kv : m.live_bytes_by_device) {
    live += (first ? "" : ", ") + dev_name(kv.first) + ": " + format_bytes(kv.second);
    first = false;
  }
  return live + ")";
}

// "asked by signal 10 x3 from pid 1234, first at ..., last at ...": the
// requests a signal bundle serves (several signals coalesce into one).
std::string signal_requests_line(const SignalRequests& r) {
  std::string l = "  asked by signal " + std::to_string(r.signal) + " x" + std::to_string(r.count);
  l += r.sender_pid > 0 ? " from pid " + std::to_string(r.sender_pid) : std::string(" (sender unknown)");
  const double first = double(r.first_ns) / 1e9, last = double(r.last_ns) / 1e9;
  l += ", first at " + utc_time(first);
  if (r.count > 1) l += ", last at " + utc_time(last) + " (" + human_duration(last - first) + " later)";
  return l + "\n";
}

// "device 0's primary context was destroyed by cudaDeviceReset (stack 7):
// 4 allocations, 128.00 MiB freed with it, recorded at ...": said in words,
// since a reset frees without a free per allocation (docs/bundle-format.md,
// `api`; the time is when the recorder let them go).
void text_context_destructions(const Bundle& b) {
  for (const analysis::ContextDestruction& c : analysis::context_destructions(b))
    out("  " + (api_destroys_created_context(c.api) ? "a context of " + dev_name(c.device) + " (cuCtxCreate)"
                                                     : dev_name(c.device) + "'s primary context") +
        " was destroyed by " + c.api +
        (c.stack_id ? " (stack " + std::to_string(c.stack_id) + ")" : std::string()) + ": " +
        std::to_string(c.allocations) + " allocations, " + format_bytes(c.bytes) + " freed with it, recorded at " +
        utc_time(c.timestamp) + "\n");
}

void text_failure(const Bundle& b, const ReportOptions& o) {
  const Metadata& m = b.metadata;
  out("\nWHAT FAILED\n");
  if (!m.api.empty()) {
    std::string l = "  " + m.api + "(" + format_bytes(m.requested_bytes) + ") on " + dev_name(m.device_id);
    if (!m.error_name.empty() || m.error_code)
      l += " -> " + (m.error_name.empty() ? std::string("error") : m.error_name) + " (" + std::to_string(m.error_code) + ")";
    out(l + "\n");
  } else {
    out("  no failed call (" + reason_of(b) + " dump)\n");
    if (m.signal_requests) out(signal_requests_line(*m.signal_requests));
  }
  if (m.device_free_bytes || m.device_total_bytes) {
    out("  " + dev_name(m.device_id) + ": " + (m.device_free_bytes ? format_bytes(*m.device_free_bytes) : "?") +
        " free of " + (m.device_total_bytes ? format_bytes(*m.device_total_bytes) : "?") + " total\n");
  } else {
    out("  device free/total: not reported by the driver\n");
  }
  out(live_line(m) + "\n");
  if (m.requested_bytes && m.device_free_bytes && *m.device_free_bytes < m.requested_bytes)
    out("  short by " + format_bytes(m.requested_bytes - *m.device_free_bytes) + "\n");
  out(recovery_line(b));
  if (m.failed_calls_before_dump) out("  failed calls before this dump: " + std::to_string(m.failed_calls_before_dump) + "\n");
  text_context_destructions(b);
  if (m.frozen_after_failure_ms > 0)
    out("  state copied " + human_duration(m.frozen_after_failure_ms / 1e3) +
        " after the failure (earlier bundles were being written): what is live may have changed since\n");
  if (m.stack_id) {
    out("  failing call stack (" + std::to_string(m.stack_id) + "):\n");
    for (auto& l : analysis::stack_lines(b, m.stack_id, o.frames, o.verbose, o.all_frames)) out("      " + l + "\n");
  }
}

// "stack 4", or "3 call paths (stacks 4, 2, 7)" for a site reached by
// several (the first is the one shown).
std::string stacks_text(const model::LiveSite& s) {
  if (s.stack_ids.size() <= 1) return "stack " + std::to_string(s.stack_id);
  std::string ids;
  for (size_t i = 0; i < s.stack_ids.size() && i < 8; ++i) ids += (i ? ", " : "") + std::to_string(s.stack_ids[i]);
  if (s.stack_ids.size() > 8) ids += ", ...";
  return std::to_string(s.stack_ids.size()) + " call paths (stacks " + ids + "; the first shown)";
}

void text_sites(const Bundle& b, const ReportOptions& o) {
  auto sites = model::live_sites(b);
  uint64_t total = 0;
  for (auto& s : sites) total += s.bytes;
  out("\nTOP ALLOCATION SITES (live at the dump, by bytes)\n");
  if (sites.empty()) out("  no live allocations\n");
  for (size_t i = 0; i < sites.size() && i < o.top; ++i) {
    const auto& s = sites[i];
    double pct = total ? 100.0 * static_cast<double>(s.bytes) / static_cast<double>(total) : 0;
    out("  #" + std::to_string(i + 1) + "  " + format_bytes(s.bytes) + " in " + plural(s.count, "allocation") + "  (" +
        fmt_double(pct, 1) + "%)  " + stacks_text(s) + "\n");
    for (auto& l : analysis::stack_lines(b, s.stack_id, o.frames, o.verbose, o.all_frames)) out("      " + l + "\n");
  }
  if (sites.size() > o.top) out("  ... " + std::to_string(sites.size() - o.top) + " more sites (--top N)\n");
}

std::string oom_summary(const std::vector<analysis::OomMark>& ooms) {
  size_t rec = 0;
  std::string own;  // the bundle's own failure, judged by the bundle's verdict
  for (auto& x : ooms) {
    rec += x.recovered;
    if (!x.verdict.empty()) own = x.verdict;
  }
  std::string why = own.empty() ? "the thread later allocated as much"
                                : "the bundle's own failure by its verdict (" + own +
                                      "), the others when the thread later allocated as much";
  return "  OOMs in the ring: " + std::to_string(ooms.size()) + (rec ? " (" + std::to_string(rec) + " recovered: " + why + ")" : "") + "\n";
}

void text_curve(const Bundle& b, const ReportOptions& o) {
  int32_t dev = analysis::failing_device(b);
  auto curve = analysis::memory_curve(b, dev, 4096);
  out("\nMEMORY ON " + std::string(dev < 0 ? "UNKNOWN DEVICE" : "DEVICE " + std::to_string(dev)) + " LEADING TO THE DUMP\n");
  if (curve.empty()) {
    out("  no events on this device in the ring\n");
  } else {
    uint64_t mx = 0;
    std::string plot = analysis::sparkline(curve, o.width, o.ascii, &mx);
    double span = curve.back().t - curve.front().t;
    std::string top_label = format_bytes(mx);
    std::string pad(top_label.size(), ' ');
    out("  " + top_label + " |" + plot + (o.ascii ? "X" : "✖") + " OOM\n");
    out("  " + pad + " +" + std::string(o.width, '-') + "\n");
    out("  " + pad + "  " + utc_time(curve.front().t) + " ... " + utc_time(curve.back().t) + " (" + human_duration(span) + ")\n");
    out("  start " + format_bytes(curve.front().v) + ", peak " + format_bytes(mx) + ", end " + format_bytes(curve.back().v) + "\n");
  }
  if (!b.events.empty()) {
    const auto [first, last] = analysis::seq_range(b);
    out("  ring: " + std::to_string(b.events.size()) + " events (seq " + std::to_string(first) + ".." + std::to_string(last) + ")");
    if (const uint64_t lost = analysis::events_not_kept(b))
      out(", about " + std::to_string(lost) + " older events not kept");
    out("\n");
    auto ooms = analysis::oom_marks(b);
    if (!ooms.empty()) out(oom_summary(ooms));
  }
}

std::string age_of(const Metadata& m, const Allocation& a) {
  return m.timestamp > 0 && a.timestamp > 0 ? human_duration(m.timestamp - a.timestamp) : "-";
}

void text_oldest(const Bundle& b, const ReportOptions& o) {
  out("\nOLDEST LIVE ALLOCATIONS (never freed)\n");
  auto idx = analysis::oldest_live(b, o.oldest);
  if (idx.empty()) {
    out("  none\n");
    return;
  }
  Table t({"SEQ", "AGE", "SIZE", "DEVICE", "API", "ADDRESS", "SITE", "LIBRARY"}, "rrrrllll");
  for (size_t i : idx) {
    const Allocation& a = b.allocations[i];
    t.add({std::to_string(a.seq), age_of(b.metadata, a), format_bytes(a.size), std::to_string(a.device_id), a.api,
           hex(a.address), analysis::top_frame(b, a.stack_id, o.verbose), analysis::library_of(b, a.stack_id)});
  }
  out(t.render("  "));
  if (b.allocations.size() > idx.size())
    out("  ... " + std::to_string(b.allocations.size() - idx.size()) + " more live allocations (--oldest N)\n");
}

void text_apis(const Bundle& b) {
  out("\nEVENTS BY API (in the ring)\n");
  auto counts = analysis::api_counts(b);
  if (counts.empty()) {
    out("  no events\n");
    return;
  }
  Table t({"API", "ALLOC", "FREE", "OOM", "FAILED", "OTHER", "TOTAL"}, "lrrrrrr");
  for (auto& c : counts)
    t.add({c.api, std::to_string(c.alloc), std::to_string(c.free), std::to_string(c.oom), std::to_string(c.failed),
           std::to_string(c.other), std::to_string(c.total)});
  out(t.render("  "));
}

// Where each device's memory went (metadata.json device_accounting).
void text_accounting(const Bundle& b) {
  for (const DeviceAccounting& a : b.metadata.device_accounting) {
    out("\n");
    for (const std::string& l : accounting_lines(a)) out(l + "\n");
  }
}

void report_bundle(const Bundle& b, const ReportOptions& o) {
  const BundleInsight in = read_insight(b);
  text_header(b);
  text_failure(b, o);
  out(framework_view_text(in.fw, kFrameworkRows));
  text_accounting(b);
  out(roles_text(in));
  out(advice_text(in));
  out(recovered_failures_text(b, kRecoveredRows, o.verbose));
  text_sites(b, o);
  out(peak_text(b, in, o.top));
  text_curve(b, o);
  text_oldest(b, o);
  text_apis(b);
}

// ---- JSON, one function per top-level key group ----------------------------

void json_header(JsonWriter& w, const Bundle& b) {
  const Metadata& m = b.metadata;
  json_kv(w, "schema", std::string("gpumemrec.report/1"));
  json_kv(w, "bundle", b.manifest.bundle_name.empty() ? basename_of(b.path) : b.manifest.bundle_name);
  json_kv(w, "path", b.path);
  json_kv(w, "host", b.hostname());
  json_kv(w, "pid", pid_of(b));
  w.Key("rank");
  if (m.rank) w.Int64(*m.rank);
  else w.Null();
  json_kv(w, "backend", m.backend.empty() ? b.manifest.backend : m.backend);
  json_kv(w, "reason", reason_of(b));
  json_kv(w, "timestamp", m.timestamp);
  json_kv(w, "time_utc", utc_time(m.timestamp));
  w.Key("command");
  w.StartArray();
  for (auto& a : b.environment.cmdline) w.String(a.c_str());
  w.EndArray();
}

void json_failure(JsonWriter& w, const Bundle& b, const ReportOptions& o) {
  const Metadata& m = b.metadata;
  w.Key("failure");
  if (m.api.empty()) {
    w.Null();
  } else {
    w.StartObject();
    json_kv(w, "api", m.api);
    json_kv(w, "requested_bytes", m.requested_bytes);
    json_kv(w, "device", static_cast<int64_t>(m.device_id));
    json_kv(w, "error_name", m.error_name);
    json_kv(w, "error_code", m.error_code);
    json_kv(w, "stack_id", m.stack_id);
    json_stack(w, b, m.stack_id, o.frames);
    w.EndObject();
  }
  w.Key("device");
  w.StartObject();
  json_kv(w, "id", static_cast<int64_t>(m.device_id));
  json_kv(w, "free_bytes", m.device_free_bytes);
  json_kv(w, "total_bytes", m.device_total_bytes);
  std::optional<uint64_t> short_by;
  if (m.requested_bytes && m.device_free_bytes && *m.device_free_bytes < m.requested_bytes)
    short_by = m.requested_bytes - *m.device_free_bytes;
  json_kv(w, "short_by_bytes", short_by);
  w.EndObject();
  json_kv(w, "failed_calls_before_dump", m.failed_calls_before_dump);
  json_kv(w, "frozen_after_failure_ms", m.frozen_after_failure_ms);
  w.Key("signal_requests");
  if (const auto& r = m.signal_requests) {
    w.StartObject();
    json_kv(w, "signal", static_cast<int64_t>(r->signal));
    json_kv(w, "count", r->count);
    json_kv(w, "first_ns", r->first_ns);
    json_kv(w, "last_ns", r->last_ns);
    json_kv(w, "sender_pid", r->sender_pid);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("live");
  w.StartObject();
  json_kv(w, "bytes", m.live_bytes);
  json_kv(w, "allocations", m.live_allocations);
  w.Key("by_device");
  w.StartObject();
  for (auto& kv : m.live_bytes_by_device) json_kv(w, std::to_string(kv.first).c_str(), kv.second);
  w.EndObject();
  w.EndObject();
}

void json_sites(JsonWriter& w, const Bundle& b, const ReportOptions& o) {
  auto sites = model::live_sites(b);
  uint64_t total = 0;
  for (auto& s : sites) total += s.bytes;
  json_kv(w, "sites_total", static_cast<uint64_t>(sites.size()));
  w.Key("sites");
  w.StartArray();
  for (size_t i = 0; i < sites.size() && i < o.top; ++i) {
    w.StartObject();
    json_kv(w, "rank", static_cast<uint64_t>(i + 1));
    json_kv(w, "stack_id", sites[i].stack_id);
    w.Key("stack_ids");
    w.StartArray();
    for (uint64_t id : sites[i].stack_ids) w.Uint64(id);
    w.EndArray();
    json_kv(w, "bytes", sites[i].bytes);
    json_kv(w, "count", sites[i].count);
    json_kv(w, "percent", total ? 100.0 * static_cast<double>(sites[i].bytes) / static_cast<double>(total) : 0.0);
    json_stack(w, b, sites[i].stack_id, o.frames);
    w.EndObject();
  }
  w.EndArray();
}

void json_curve(JsonWriter& w, const Bundle& b) {
  int32_t dev = analysis::failing_device(b);
  auto curve = analysis::memory_curve(b, dev, 4096);
  w.Key("curve");
  if (curve.empty()) {
    w.Null();
  } else {
    uint64_t peak = 0;
    for (auto& p : curve) peak = std::max(peak, p.v);
    w.StartObject();
    json_kv(w, "device", static_cast<int64_t>(dev));
    json_kv(w, "start_bytes", curve.front().v);
    json_kv(w, "peak_bytes", peak);
    json_kv(w, "end_bytes", curve.back().v);
    json_kv(w, "t_start", curve.front().t);
    json_kv(w, "t_end", curve.back().t);
    w.EndObject();
  }
  w.Key("ring");
  w.StartObject();
  json_kv(w, "events", static_cast<uint64_t>(b.events.size()));
  json_kv(w, "first_seq", analysis::seq_range(b).first);
  json_kv(w, "last_seq", analysis::seq_range(b).second);
  json_kv(w, "overwritten", analysis::events_not_kept(b));
  w.EndObject();
  w.Key("ooms");
  w.StartArray();
  for (auto& x : analysis::oom_marks(b)) {
    w.StartObject();
    json_kv(w, "timestamp", x.t);
    json_kv(w, "device", static_cast<int64_t>(x.device));
    json_kv(w, "size", x.size);
    json_kv(w, "api", b.str(x.api));
    json_kv(w, "thread_id", static_cast<uint64_t>(x.thread));
    w.Key("recovered");
    w.Bool(x.recovered);
    json_kv_or_null(w, "verdict", x.verdict);
    w.EndObject();
  }
  w.EndArray();
}

void json_oldest(JsonWriter& w, const Bundle& b, const ReportOptions& o) {
  w.Key("oldest");
  w.StartArray();
  for (size_t i : analysis::oldest_live(b, o.oldest)) {
    const Allocation& a = b.allocations[i];
    w.StartObject();
    json_kv(w, "seq", a.seq);
    w.Key("age_s");
    if (b.metadata.timestamp > 0 && a.timestamp > 0) w.Double(b.metadata.timestamp - a.timestamp);
    else w.Null();
    json_kv(w, "size", a.size);
    json_kv(w, "device", static_cast<int64_t>(a.device_id));
    json_kv(w, "api", a.api);
    json_kv(w, "address", a.address);
    json_kv(w, "stack_id", a.stack_id);
    json_kv(w, "site", analysis::top_frame(b, a.stack_id, false));
    json_kv_or_null(w, "library", analysis::library_of(b, a.stack_id));
    w.EndObject();
  }
  w.EndArray();
}

void json_accounting(JsonWriter& w, const Bundle& b) {
  w.Key("device_accounting");
  w.StartArray();
  for (const DeviceAccounting& a : b.metadata.device_accounting) write_device_accounting_json(w, a);
  w.EndArray();
}

void json_apis(JsonWriter& w, const Bundle& b) {
  w.Key("apis");
  w.StartArray();
  for (auto& c : analysis::api_counts(b)) {
    w.StartObject();
    json_kv(w, "api", c.api);
    json_kv(w, "alloc", c.alloc);
    json_kv(w, "free", c.free);
    json_kv(w, "oom", c.oom);
    json_kv(w, "failed", c.failed);
    json_kv(w, "other", c.other);
    json_kv(w, "total", c.total);
    w.EndObject();
  }
  w.EndArray();
}

void json_context_destructions(JsonWriter& w, const Bundle& b) {
  w.Key("context_destructions");
  w.StartArray();
  for (const analysis::ContextDestruction& c : analysis::context_destructions(b)) {
    w.StartObject();
    json_kv(w, "device", int64_t(c.device));
    json_kv(w, "api", c.api);
    json_kv(w, "context", api_destroys_created_context(c.api) ? "created" : "primary");
    json_kv(w, "stack_id", c.stack_id);
    json_kv(w, "allocations", c.allocations);
    json_kv(w, "bytes", c.bytes);
    json_kv(w, "timestamp", c.timestamp);
    w.EndObject();
  }
  w.EndArray();
}

void json_bundle(JsonWriter& w, const Bundle& b, const ReportOptions& o) {
  w.StartObject();
  json_header(w, b);
  json_failure(w, b, o);
  json_accounting(w, b);
  json_verdict(w, b);
  const BundleInsight in = read_insight(b);
  json_framework_view(w, in.fw, kFrameworkRows);
  json_roles(w, in);
  json_advice(w, in);
  json_peak(w, b, in, o.top);
  json_sites(w, b, o);
  json_curve(w, b);
  json_oldest(w, b, o);
  json_apis(w, b);
  json_context_destructions(w, b);
  w.EndObject();
}

void report_one(const std::string& path, const ReportOptions& o) {
  Bundle b;
  Progress progress;
  load_bundle(path, &b, false, &progress);
  if (!o.json) {
    report_bundle(b, o);
    return;
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  json_bundle(w, b, o);
  print_json(buf);
}

// ---- a directory of bundles (ranks of one job) ------------------------------

struct Item {
  std::string path;
  Bundle b;
};

std::vector<Item> load_light(const std::vector<std::string>& paths) {
  std::vector<Item> items(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    items[i].path = paths[i];
    load_bundle(paths[i], &items[i].b, /*light=*/true);
  }
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    if (x.b.metadata.timestamp != y.b.metadata.timestamp) return x.b.metadata.timestamp < y.b.metadata.timestamp;
    return x.b.metadata.rank.value_or(0) < y.b.metadata.rank.value_or(0);
  });
  return items;
}

// Failures are dumps with a failed call (not signal/exit snapshots); a
// failure the program recovered from (GPUMEMREC_RECOVERED=keep) is passed
// over when a later one did not recover.
const Item* first_failure(const std::vector<Item>& items) {
  const Item* recovered = nullptr;
  for (auto& it : items) {
    std::string r = reason_of(it.b);
    if (r != "oom" && r != "limit" && r != "fail_after" && r != "framework_oom") continue;
    if (it.b.outcome() != "recovered") return &it;
    if (!recovered) recovered = &it;
  }
  return recovered ? recovered : &items.front();
}

std::string job_of(const Bundle& b) {
  for (auto& kv : b.metadata.custom_metadata)
    if (kv.first == "job_id") return kv.second;
  return "";
}

void text_ranks(const std::vector<Item>& items, const Item* first) {
  std::set<int32_t> devs;
  for (auto& it : items)
    for (auto& kv : it.b.metadata.live_bytes_by_device) devs.insert(kv.first);
  std::vector<std::string> headers = {"RANK", "HOST", "PID", "+TIME", "REASON", "OUTCOME", "API", "ASKED", "FREE", "LIVE"};
  std::string align = "rlrrlllrrr";
  for (int32_t d : devs) {
    headers.push_back("DEV" + std::to_string(d));
    align += 'r';
  }
  headers.push_back("");
  align += 'l';
  Table t(headers, align);
  double t0 = first->b.metadata.timestamp;
  for (auto& it : items) {
    const Metadata& m = it.b.metadata;
    std::vector<std::string> row = {m.rank ? std::to_string(*m.rank) : "-", it.b.hostname().empty() ? "-" : it.b.hostname(),
                                    std::to_string(it.b.manifest.pid),
                                    (m.timestamp >= t0 ? "+" : "") + fmt_double(m.timestamp - t0, 3) + "s", reason_of(it.b),
                                    outcome_cell(it.b), m.api.empty() ? "-" : m.api, m.requested_bytes ? format_bytes(m.requested_bytes) : "-",
                                    m.device_free_bytes ? format_bytes(*m.device_free_bytes) : "-", format_bytes(m.live_bytes)};
    for (int32_t d : devs) {
      auto f = m.live_bytes_by_device.find(d);
      row.push_back(f == m.live_bytes_by_device.end() ? "-" : format_bytes(f->second));
    }
    row.push_back(&it == first ? "<- first" : "");
    t.add(std::move(row));
  }
  out("\nRANKS (ordered by time of the dump)\n");
  out(t.render("  "));
}

void text_dir(const std::string& dir, const std::vector<Item>& items, const Item* first, const ReportOptions& o) {
  std::string job = job_of(first->b);
  out("gpumemrec report: " + std::to_string(items.size()) + " bundles in " + dir + (job.empty() ? "" : " (job " + job + ")") + "\n");
  const Metadata& fm = first->b.metadata;
  out("\nFIRST FAILURE\n");
  out("  " + std::string(fm.rank ? "rank " + std::to_string(*fm.rank) : "pid " + std::to_string(first->b.manifest.pid)) +
      (first->b.hostname().empty() ? "" : " on " + first->b.hostname()) + " at " + utc_time(fm.timestamp) + ": " +
      (fm.api.empty() ? fm.reason
                      : fm.api + "(" + format_bytes(fm.requested_bytes) + ") on " + dev_name(fm.device_id) +
                            (fm.error_name.empty() ? "" : " -> " + fm.error_name)) +
      (first->b.outcome().empty() ? "" : " (" + first->b.outcome() + ")") + "\n");
  out("  bundle: " + basename_of(first->path) + "\n");
  text_ranks(items, first);
  out("\nDETAILS OF THE FIRST FAILURE\n\n");
  report_one(first->path, o);
}

void json_ranks(JsonWriter& w, const std::vector<Item>& items, const Item* first) {
  w.Key("bundles");
  w.StartArray();
  for (auto& it : items) {
    const Metadata& m = it.b.metadata;
    w.StartObject();
    json_kv(w, "bundle", basename_of(it.path));
    json_kv(w, "path", it.path);
    w.Key("rank");
    if (m.rank) w.Int64(*m.rank);
    else w.Null();
    json_kv(w, "host", it.b.hostname());
    json_kv(w, "pid", pid_of(it.b));
    json_kv(w, "timestamp", m.timestamp);
    json_kv(w, "seconds_after_first", m.timestamp - first->b.metadata.timestamp);
    json_kv(w, "reason", reason_of(it.b));
    json_kv_or_null(w, "outcome", it.b.outcome());
    json_kv(w, "api", m.api);
    json_kv(w, "requested_bytes", m.requested_bytes);
    json_kv(w, "device_free_bytes", m.device_free_bytes);
    json_kv(w, "live_bytes", m.live_bytes);
    w.Key("live_bytes_by_device");
    w.StartObject();
    for (auto& kv : m.live_bytes_by_device) json_kv(w, std::to_string(kv.first).c_str(), kv.second);
    w.EndObject();
    w.Key("first");
    w.Bool(&it == first);
    w.EndObject();
  }
  w.EndArray();
}

void json_dir(const std::string& dir, const std::vector<Item>& items, const Item* first, const ReportOptions& o) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  json_kv(w, "schema", std::string("gpumemrec.report-dir/1"));
  json_kv(w, "dir", dir);
  json_kv(w, "job", job_of(first->b));
  json_ranks(w, items, first);
  w.Key("first_failure");
  Bundle full;
  Progress progress;
  load_bundle(first->path, &full, false, &progress);
  json_bundle(w, full, o);
  w.EndObject();
  print_json(buf);
}

void report_dir(const std::string& dir, const std::vector<std::string>& paths, const ReportOptions& o) {
  std::vector<Item> items = load_light(paths);
  const Item* first = first_failure(items);
  if (o.json) json_dir(dir, items, first, o);
  else text_dir(dir, items, first, o);
}

}  // namespace

RunFn add_report(CLI::App& root) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* app = root.add_subcommand("report", "Print what failed, top allocation sites, the memory curve and leaks");
  app->add_option("BUNDLE", o->path, "A bundle directory, or a directory of bundles (merged view of several ranks)")->required();
  app->add_option("--top", o->top, "Allocation sites to show")->capture_default_str();
  app->add_option("--frames", o->frames, "Frames shown per stack")->capture_default_str();
  app->add_option("--oldest", o->oldest, "Oldest live allocations to show")->capture_default_str();
  app->add_option("--width", o->width, "Width of the memory plot in columns")->capture_default_str()->check(CLI::Range(8, 1000));
  app->add_flag("--ascii", o->ascii, "Plain ASCII plot (no Unicode block characters)");
  app->add_flag("--json", o->json, "Print one JSON object instead of text (keys: see docs/cli.md)");
  app->add_flag("-v,--verbose", o->verbose, "Full C++ names (template and parameter lists) and file paths in stacks");
  app->add_flag("--all-frames", o->all_frames,
                "Show every frame (runtime, framework and interpreter frames are folded by default)");
  app->footer("Given a directory of bundles (several ranks or hosts of one job), prints which rank failed first,\n"
              "the live bytes of every rank side by side, then the full report of the first failure.\n"
              "C++ names are shortened (ns::f<…>(…)); --verbose prints them in full.");
  return [=]() -> int {
    if (is_bundle_dir(o->path)) {
      report_one(o->path, *o);
      return kOk;
    }
    if (is_directory(o->path)) {
      auto paths = find_bundles(o->path);
      if (paths.empty()) bad_input(o->path, "not a gpumemrec bundle: manifest.json is missing (and no bundles inside)");
      if (paths.size() == 1) report_one(paths[0], *o);
      else report_dir(o->path, paths, *o);
      return kOk;
    }
    Bundle b;
    load_bundle(o->path, &b);  // produces the right error (missing, a file, ...)
    return kBadInput;
  };
}

}  // namespace gpumemrec::cli
