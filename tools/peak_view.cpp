#include "tools/peak_view.h"

#include "common/format.h"
#include "tools/analysis.h"
#include "tools/cli.h"

namespace gpumemrec::cli {

namespace {

std::string when(const model::PeakDevice& p) {
  return p.peak_time_ns ? utc_time(double(p.peak_time_ns) / 1e9) : std::string("time unknown");
}

std::string framework_peaks_text(const FrameworkExtras& x) {
  if (!x.torch_peak_allocated && !x.torch_peak_reserved) return "";
  auto fig = [](const std::optional<uint64_t>& v) { return v ? format_bytes(*v) : std::string("?"); };
  return "  PyTorch's own peaks (its " + std::string(x.at == "exit" ? "exit " : "") + "digest): allocated " +
         fig(x.torch_peak_allocated) + ", reserved " + fig(x.torch_peak_reserved) +
         " (max_memory_allocated/reserved: since the last reset_peak_memory_stats)\n";
}

std::string device_text(const model::Bundle& b, const model::PeakDevice& p, size_t top) {
  std::string out = "\nPeak on device " + std::to_string(p.device) + ": " + format_bytes(p.peak_bytes) + " live at " +
                    when(p) + " (event " + std::to_string(p.peak_seq) + "), " +
                    (p.exact ? std::string("exact")
                             : "not exact: " + (p.why_inexact.empty() ? "no reason given" : p.why_inexact)) +
                    "\n  live now " + format_bytes(p.live_now_bytes) + "; " + std::to_string(p.events_replayed) +
                    " events replayed\n";
  if (p.sites.empty()) return out;
  Table t({"BYTES", "ALLOCS", "SITE", "LIBRARY"}, "rrll");
  for (size_t i = 0; i < p.sites.size() && i < top; ++i) {
    const model::PeakSite& s = p.sites[i];
    const std::string lib = analysis::library_of(b, s.stack_id);
    t.add({format_bytes(s.bytes), std::to_string(s.count), analysis::top_frame(b, s.stack_id, false),
           lib.empty() ? "-" : lib});
  }
  return out + "  Sites live at the peak:\n" + t.render("    ");
}

void json_peak_device(JsonWriter& w, const model::Bundle& b, const model::PeakDevice& p, size_t top) {
  w.StartObject();
  json_kv(w, "device", int64_t(p.device));
  json_kv(w, "peak_bytes", p.peak_bytes);
  json_kv(w, "peak_time_ns", p.peak_time_ns);
  json_kv(w, "peak_seq", p.peak_seq);
  w.Key("exact");
  w.Bool(p.exact);
  json_kv_or_null(w, "why_inexact", p.why_inexact);
  json_kv(w, "live_now_bytes", p.live_now_bytes);
  json_kv(w, "events_replayed", p.events_replayed);
  w.Key("sites");
  w.StartArray();
  for (size_t i = 0; i < p.sites.size() && i < top; ++i) {
    const model::PeakSite& s = p.sites[i];
    w.StartObject();
    json_kv(w, "stack_id", s.stack_id);
    json_kv(w, "bytes", s.bytes);
    json_kv(w, "count", s.count);
    json_kv(w, "site", analysis::top_frame(b, s.stack_id, false));
    json_kv_or_null(w, "library", analysis::library_of(b, s.stack_id));
    w.EndObject();
  }
  w.EndArray();
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
