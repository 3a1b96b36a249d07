#include "tools/peak_view.h"

#include "common/format.h"
#include "common/framework_roles.h"
#include "tools/analysis.h"
#include "tools/cli.h"

namespace gpumemrec::cli {

namespace {

std::string when(uint64_t ns) { return ns ? utc_time(double(ns) / 1e9) : std::string("time unknown"); }

std::string framework_peaks_text(const FrameworkExtras& x) {
  if (!x.torch_peak_allocated && !x.torch_peak_reserved) return "";
  auto fig = [](const std::optional<uint64_t>& v) { return v ? format_bytes(*v) : std::string("?"); };
  return "  PyTorch's own peaks (its " + std::string(x.at == "exit" ? "exit " : "") + "digest): allocated " +
         fig(x.torch_peak_allocated) + ", reserved " + fig(x.torch_peak_reserved) +
         " (max_memory_allocated/reserved: since the last reset_peak_memory_stats)\n";
}

std::string sites_text(const model::Bundle& b, const model::PeakFigure& f, size_t top, const char* title) {
  if (f.sites.empty()) return "";
  Table t({"BYTES", "ALLOCS", "SITE", "LIBRARY"}, "rrll");
  for (size_t i = 0; i < f.sites.size() && i < top; ++i) {
    const model::PeakSite& s = f.sites[i];
    const std::string lib = analysis::library_of(b, s.stack_id);
    t.add({format_bytes(s.bytes), std::to_string(s.count), analysis::top_frame(b, s.stack_id, false),
           lib.empty() ? "-" : lib});
  }
  return std::string("  ") + title + ":\n" + t.render("    ");
}

std::string libraries_text(const model::PeakFigure& f) {
  if (f.by_library.empty()) return "";
  std::string out = "  By library:";
  for (size_t i = 0; i < f.by_library.size(); ++i)
    out += (i ? ", " : " ") + (f.by_library[i].library.empty() ? std::string("not known") : f.by_library[i].library) +
           " " + format_bytes(f.by_library[i].bytes);
  return out + "\n";
}

// `exact`: a figure without peak_until_ns had not fallen by the bundle.
std::string held_text(const model::PeakFigure& f, bool exact) {
  if (f.peak_until_ns) return "  held until " + when(*f.peak_until_ns) + "\n";
  return exact ? "  still held at the bundle\n" : "";
}

std::string after_gap_text(const model::Bundle& b, const model::PeakAfterGap& a, size_t top) {
  std::string out = "  Since the last gap (" + std::to_string(a.gaps) + " gap(s), " + std::to_string(a.lost_events) +
                    " events lost): replayed from " + when(a.from_time_ns) + " (" + format_bytes(a.start_bytes) +
                    " then), ";
  if (!a.exact) return out + "not exact: " + (a.why_inexact.empty() ? "no reason given" : a.why_inexact) + "\n";
  out += "peak " + format_bytes(a.peak_bytes) + " at " + when(a.peak_time_ns) + ", exact\n";
  return out + held_text(a, true) + libraries_text(a) + sites_text(b, a, top, "Sites live at the peak since the gap");
}

std::string role_name(const std::string& key) {
  for (Role r : kRoles)
    if (key == role_key(r)) return role_label(r);
  return key == "outside_framework" ? "outside the framework" : key;
}

std::string roles_text(const model::PeakRoles& r) {
  const std::string fw = r.framework == "torch" ? "PyTorch" : r.framework == "jax" ? "JAX" : r.framework;
  std::string out = "  Memory by role at the peak (" + fw + "'s walk at " + r.walk + ", " + when(r.walk_time_ns) +
                    "): ";
  if (!r.known) return out + "not known: " + r.why_not_known + "\n";
  std::string parts;
  for (const auto& [key, bytes] : r.bytes)
    if (bytes) parts += (parts.empty() ? "" : ", ") + role_name(key) + " " + format_bytes(bytes);
  return out + (r.walk_status == "complete" ? "" : "(walk " + r.walk_status + ") ") + parts + "\n";
}

std::string device_text(const model::Bundle& b, const model::PeakDevice& p, size_t top) {
  std::string out = "\nPeak on device " + std::to_string(p.device) + ": " + format_bytes(p.peak_bytes) + " live at " +
                    when(p.peak_time_ns) + " (event " + std::to_string(p.peak_seq) + "), " +
                    (p.exact ? std::string("exact")
                             : "not exact: " + (p.why_inexact.empty() ? "no reason given" : p.why_inexact)) +
                    "\n  live now " + format_bytes(p.live_now_bytes) + "; " + std::to_string(p.events_replayed) +
                    " events replayed\n";
  out += held_text(p, p.exact);
  if (p.roles) out += roles_text(*p.roles);
  out += libraries_text(p) + sites_text(b, p, top, "Sites live at the peak");
  if (p.after_gap) out += after_gap_text(b, *p.after_gap, top);
  return out;
}

void json_figure(JsonWriter& w, const model::Bundle& b, const model::PeakFigure& f, size_t top) {
  json_kv(w, "peak_bytes", f.peak_bytes);
  json_kv(w, "peak_time_ns", f.peak_time_ns);
  json_kv(w, "peak_seq", f.peak_seq);
  json_kv(w, "peak_until_ns", f.peak_until_ns);
  w.Key("sites");
  w.StartArray();
  for (size_t i = 0; i < f.sites.size() && i < top; ++i) {
    const model::PeakSite& s = f.sites[i];
    w.StartObject();
    json_kv(w, "stack_id", s.stack_id);
    json_kv(w, "bytes", s.bytes);
    json_kv(w, "count", s.count);
    json_kv(w, "site", analysis::top_frame(b, s.stack_id, false));
    json_kv_or_null(w, "library", analysis::library_of(b, s.stack_id));
    w.EndObject();
  }
  w.EndArray();
  w.Key("by_library");
  w.StartArray();
  for (const model::PeakLibrary& l : f.by_library) {
    w.StartObject();
    json_kv_or_null(w, "library", l.library);
    json_kv(w, "bytes", l.bytes);
    json_kv(w, "count", l.count);
    w.EndObject();
  }
  w.EndArray();
}

void json_after_gap(JsonWriter& w, const model::Bundle& b, const model::PeakDevice& p, size_t top) {
  w.Key("after_gap");
  if (!p.after_gap) {
    w.Null();
    return;
  }
  const model::PeakAfterGap& a = *p.after_gap;
  w.StartObject();
  json_kv(w, "gaps", a.gaps);
  json_kv(w, "lost_events", a.lost_events);
  json_kv(w, "from_seq", a.from_seq);
  json_kv(w, "from_time_ns", a.from_time_ns);
  w.Key("exact");
  w.Bool(a.exact);
  json_kv_or_null(w, "why_inexact", a.why_inexact);
  json_kv(w, "start_bytes", a.start_bytes);
  json_figure(w, b, a, top);
  w.EndObject();
}

void json_roles(JsonWriter& w, const model::PeakDevice& p) {
  w.Key("roles");
  if (!p.roles) {
    w.Null();
    return;
  }
  const model::PeakRoles& r = *p.roles;
  w.StartObject();
  w.Key("known");
  w.Bool(r.known);
  json_kv_or_null(w, "why_not_known", r.why_not_known);
  json_kv(w, "framework", r.framework);
  json_kv(w, "walk", r.walk);
  json_kv(w, "walk_status", r.walk_status);
  json_kv(w, "walk_time_ns", r.walk_time_ns);
  w.Key("bytes");
  if (r.known) {
    w.StartObject();
    for (const auto& [key, bytes] : r.bytes) json_kv(w, key.c_str(), bytes);
    w.EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

void json_peak_device(JsonWriter& w, const model::Bundle& b, const model::PeakDevice& p, size_t top) {
  w.StartObject();
  json_kv(w, "device", int64_t(p.device));
  w.Key("exact");
  w.Bool(p.exact);
  json_kv_or_null(w, "why_inexact", p.why_inexact);
  json_kv(w, "live_now_bytes", p.live_now_bytes);
  json_kv(w, "events_replayed", p.events_replayed);
  json_figure(w, b, p, top);
  json_after_gap(w, b, p, top);
  json_roles(w, p);
  w.EndObject();
}

}  // namespace

std::string peak_text(const model::Bundle& b, const BundleInsight& in, size_t top) {
  std::string out;
  if (!in.peak.problem.empty()) out += "\nPeak: " + in.peak.problem + "\n";
  for (const model::PeakDevice& p : in.peak.devices) out += device_text(b, p, top);
  const std::string fw = in.fw.present ? framework_peaks_text(in.fw.x) : std::string();
  if (!fw.empty()) out += (in.peak.devices.empty() ? "\nPeak:\n" : "") + fw;
  return out;
}

void json_peak(JsonWriter& w, const model::Bundle& b, const BundleInsight& in, size_t top) {
  w.Key("peak");
  const bool fw = in.fw.present && (in.fw.x.torch_peak_allocated || in.fw.x.torch_peak_reserved);
  if (!in.peak.present && !fw && in.peak.problem.empty()) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key("devices");
  w.StartArray();
  for (const model::PeakDevice& p : in.peak.devices) json_peak_device(w, b, p, top);
  w.EndArray();
  json_kv(w, "torch_peak_allocated", fw ? in.fw.x.torch_peak_allocated : std::nullopt);
  json_kv(w, "torch_peak_reserved", fw ? in.fw.x.torch_peak_reserved : std::nullopt);
  json_kv_or_null(w, "problem", in.peak.problem);
  w.EndObject();
}

}  // namespace gpumemrec::cli
