// summary.txt: the text a person reads first. The top sites come from
// common/live_sites.h, the computation `gpumemrec report` uses.
#include <cstdio>
#include <cstring>

#include "common/autograd_node.h"
#include "common/card_accounting.h"
#include "common/format.h"
#include "common/live_sites.h"
#include "common/names.h"
#include "common/site_rules.h"
#include "shim/base/hook_table.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/dump/write/summary_advice.h"
#include "shim/dump/verdict/verdict_text.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

constexpr size_t kFailingFrames = 24;
constexpr size_t kSiteFrames = 12;
constexpr size_t kTopSites = 10;
constexpr size_t kRecoveredLines = 5;  // of the recovered failures (all in metadata.json)

// Short C++ names (template and parameter lists collapsed, file:line kept),
// as `gpumemrec report` prints them (common/names.h).
std::string frame_line(const model::Frame& f) {
  return names::frame_label(f, false) + (f.kind == model::FrameKind::kPython ? " [python]" : "");
}

std::string site_line(const model::Stack& s) {
  const model::Frame* f = site::site_frame_of(s);
  std::string line = "    site: " + (f ? frame_line(*f) : std::string("(no frames)"));
  if (!s.library.empty()) line += "  library: " + s.library;
  const std::string note = autograd::site_note(s);
  if (!note.empty()) line += "  [" + note + "]";
  return line + "\n";
}

// The site frame and library, then up to `max` lines of the stack with the
// runtime, framework and interpreter frames folded (common/site_rules.h);
// "..." when there are more and `ellipsis`.
void write_frames(FdOut& o, const model::Stack* s, const site::Rules& rules, size_t max, bool ellipsis) {
  if (!s) return;
  o.write(site_line(*s).c_str());
  const std::string status = names::python_status_text(s->python);
  if (!status.empty()) {
    o.write("    (");
    o.write(status.c_str());
    o.write(")\n");
  }
  const std::vector<site::FoldedLine> lines = site::fold_frames(*s, rules);
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k >= max) {
      if (ellipsis) o.write("    ...\n");
      return;
    }
    o.write("    ");
    const site::FoldedLine& l = lines[k];
    o.write((l.count == 1 ? frame_line(s->frames[l.first]) : site::folded_text(l)).c_str());
    o.write("\n");
  }
}

// GPUMEMREC_SITE_SKIP's patterns with the built-in table.
site::Rules summary_rules(const BundleContent& c) {
  return c.in.recorder ? site::Rules(c.in.recorder->cfg.site_skip) : site::Rules();
}

void write_accounting(FdOut& o, const BundleContent& c) {
  for (const model::DeviceAccounting& a : c.model.metadata.device_accounting) {
    o.write("\n");
    for (const std::string& l : model::accounting_lines(a)) {
      o.write(l.c_str());
      o.write("\n");
    }
  }
}

void write_what_failed(FdOut& o, const BundleContent& c) {
  char line[1024];
  const FailureInfo* f = c.in.failure;
  if (f) {
    std::snprintf(line, sizeof line, "What failed:  %s(%llu bytes = %s) on device %d -> %s (%d)%s\n",
                  hook_name(f->api), (unsigned long long)f->size, format_bytes(f->size).c_str(), f->device,
                  failure_error_name(c.in), f->result,
                  c.in.reason == DumpReason::kLimit      ? " [refused by GPUMEMREC_LIMIT]"
                  : c.in.reason == DumpReason::kFailAfter ? " [injected by GPUMEMREC_FAIL_AFTER]"
                                                          : "");
  } else {
    std::snprintf(line, sizeof line, "Reason:       %s\n", dump_reason_name(c.in.reason));
  }
  o.write(line);
  if (c.in.devices.has_mem_info)
    std::snprintf(line, sizeof line, "Device:       %s free of %s total (asked of the driver at dump time)\n",
                  format_bytes(c.in.devices.free_bytes).c_str(), format_bytes(c.in.devices.total_bytes).c_str());
  else
    std::snprintf(line, sizeof line, "Device:       free/total unknown (the driver did not answer)\n");
  o.write(line);
}

void write_outcome(FdOut& o, const BundleContent& c) {
  const model::Metadata& m = c.model.metadata;
  if (has_verdict(c.in)) {
    o.write("Outcome:      ");
    o.write(m.outcome.c_str());
    o.write(" - ");
    o.write(m.outcome_detail.c_str());
    o.write("\n");
  }
  if (c.in.frozen_after_failure_ns) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "State:        copied %.1f ms after the failure (earlier bundles were being written): what is "
                  "live may have changed since\n", double(c.in.frozen_after_failure_ns) / 1e6);
    o.write(line);
  }
  write_framework_summary(o, c.in);
  if (m.recovered_count == 0) return;
  char line[512];
  std::snprintf(line, sizeof line, "Recovered out-of-memory failures since the previous bundle: %llu\n",
                (unsigned long long)m.recovered_count);
  o.write(line);
  const size_t n = m.recovered_listed.size(), from = n > kRecoveredLines ? n - kRecoveredLines : 0;
  for (size_t i = from; i < n; ++i) {
    const model::RecoveredFailure& r = m.recovered_listed[i];
    std::snprintf(line, sizeof line, "    %s(%s) on device %d, thread %u: recovered after freeing %s (%.1f ms)\n",
                  r.api.c_str(), format_bytes(r.size).c_str(), r.device_id, r.thread_id,
                  format_bytes(r.freed_bytes).c_str(), r.after_ms);
    o.write(line);
  }
}

void write_totals(FdOut& o, const BundleContent& c) {
  char line[1024];
  const model::Metadata& m = c.model.metadata;
  std::snprintf(line, sizeof line, "This process: %s live in %llu allocations", format_bytes(m.live_bytes).c_str(),
                (unsigned long long)m.live_allocations);
  o.write(line);
  if (m.live_bytes_by_device.size() > 1) {
    o.write(" (");
    bool first = true;
    for (auto& kv : m.live_bytes_by_device) {
      std::snprintf(line, sizeof line, "%sdevice %d: %s", first ? "" : ", ", kv.first, format_bytes(kv.second).c_str());
      o.write(line);
      first = false;
    }
    o.write(")");
  }
  o.write("\n");
  if (m.events_since_start)
    std::snprintf(line, sizeof line, "Events:       %llu in this bundle: every event since the start\n",
                  (unsigned long long)m.captured_event_count);
  else
    std::snprintf(line, sizeof line, "Events:       %llu in this bundle, about %llu recorded since start\n",
                  (unsigned long long)m.captured_event_count, (unsigned long long)m.total_event_count);
  o.write(line);
  if (c.in.gpu_processes.available) {
    o.write("On the GPU:   ");
    o.write(describe_gpu_processes(c.in.gpu_processes).c_str());
    o.write("\n");
  }
}

void write_top_sites(FdOut& o, const BundleContent& c, const site::Rules& rules) {
  const std::vector<model::LiveSite> top = model::live_sites(c.model);
  const uint64_t live = c.model.metadata.live_bytes;
  o.write("\nTop allocation sites by live bytes:\n");
  if (top.empty()) o.write("    (nothing live)\n");
  char line[256];
  for (size_t i = 0; i < top.size() && i < kTopSites; ++i) {
    std::snprintf(line, sizeof line, "\n#%zu  %s in %llu allocation%s (%.1f%% of live)%s\n", i + 1,
                  format_bytes(top[i].bytes).c_str(), (unsigned long long)top[i].count, top[i].count == 1 ? "" : "s",
                  live ? 100.0 * double(top[i].bytes) / double(live) : 0,
                  top[i].stack_ids.size() > 1 ? (", " + std::to_string(top[i].stack_ids.size()) +
                                                 " call paths below this line, the largest shown").c_str()
                                              : "");
    o.write(line);
    const model::Stack* s = c.model.find_stack(top[i].stack_id);
    if (!s || s->frames.empty()) o.write("    (no stack recorded)\n");
    else write_frames(o, s, rules, kSiteFrames, true);
  }
}

// The first line of a bundle made on the simulated card says so.
void write_simulated_line(FdOut& o, const BundleContent& c) {
  const auto& s = c.model.metadata.simulated;
  if (!s) return;
  o.write("SIMULATED: ");
  o.write(s->name.c_str());
  o.write(" x");
  o.write(std::to_string(s->devices).c_str());
  o.write(" (gpumemrec's simulated card ");
  o.write(s->profile.c_str());
  o.write("): no GPU ran this program; memory is as the driver would give it, kernels did not run\n");
}

}  // namespace

bool write_summary_txt(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kSummary);
  if (file.ok()) {
    FdOut& o = file.out();
    write_simulated_line(o, c);
    o.write("gpumemrec dump ");
    o.write(c.in.bundle_name.c_str());
    o.write("\n\n");
    const site::Rules rules = summary_rules(c);
    write_what_failed(o, c);
    write_outcome(o, c);
    write_totals(o, c);
    if (c.in.failure && c.in.failure->stack_id) {
      o.write("\nFailing call stack:\n");
      write_frames(o, c.model.find_stack(c.in.failure->stack_id), rules, kFailingFrames, false);
    }
    write_accounting(o, c);
    write_summary_advice(o, c);
    write_top_sites(o, c, rules);
    o.write("\nFiles: events.json (recent events), allocations.json (live), stacks.json, metadata.json,\n"
            "environment.json. `gpumemrec report <bundle>` gives the full view.\n");
  }
  return file.finish(error);
}

}  // namespace gpumemrec
