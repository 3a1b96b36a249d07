// gpumemrec report BUNDLE|DIR: the terminal answer to "why did it OOM?".
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/analysis.h"
#include "tools/cli.h"
#include "tools/commands.h"

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
};

void out(const std::string& s) { fputs(s.c_str(), stdout); }

std::string dev_name(int32_t d) { return d < 0 ? "unknown device" : "device " + std::to_string(d); }

std::string top_frame(const Bundle& b, uint64_t stack_id) {
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  if (!s || s->frames.empty()) return stack_id ? "stack " + std::to_string(stack_id) : "(no stack)";
  return format_frame(s->frames.front());
}

void report_bundle(const Bundle& b, const ReportOptions& o) {
  const Metadata& m = b.metadata;
  std::string host = b.hostname();
  out("gpumemrec report: " + b.path + "\n");
  std::string line = "  ";
  if (!host.empty()) line += "host " + host + "  ";
  line += "pid " + std::to_string(b.manifest.pid ? b.manifest.pid : b.environment.pid) + "  ";
  if (m.rank) line += "rank " + std::to_string(*m.rank) + "  ";
  line += "backend " + (m.backend.empty() ? b.manifest.backend : m.backend) + "  ";
  line += "reason " + (m.reason.empty() ? b.manifest.reason : m.reason) + "  " + utc_time(m.timestamp);
  out(line + "\n");
  if (!b.environment.cmdline.empty()) {
    std::string c;
    for (auto& a : b.environment.cmdline) c += (c.empty() ? "" : " ") + a;
    if (c.size() > 120) c = c.substr(0, 117) + "...";
    out("  command: " + c + "\n");
  }

  // What failed.
  out("\nWHAT FAILED\n");
  if (!m.api.empty()) {
    std::string l = "  " + m.api + "(" + human_bytes(m.requested_bytes) + ") on " + dev_name(m.device_id);
    if (!m.error_name.empty() || m.error_code) l += " -> " + (m.error_name.empty() ? std::string("error") : m.error_name) + " (" + std::to_string(m.error_code) + ")";
    out(l + "\n");
  } else {
    out("  no failed call (" + (m.reason.empty() ? b.manifest.reason : m.reason) + " dump)\n");
  }
  if (m.device_free_bytes || m.device_total_bytes) {
    out("  " + dev_name(m.device_id) + ": " + (m.device_free_bytes ? human_bytes(*m.device_free_bytes) : "?") +
        " free of " + (m.device_total_bytes ? human_bytes(*m.device_total_bytes) : "?") + " total\n");
  } else {
    out("  device free/total: not reported by the driver\n");
  }
  std::string live = "  live: " + human_bytes(m.live_bytes) + " in " + std::to_string(m.live_allocations) + " allocation" + (m.live_allocations == 1 ? "" : "s");
  if (!m.live_bytes_by_device.empty()) {
    live += " (";
    bool first = true;
    for (auto& kv : m.live_bytes_by_device) {
      live += (first ? "" : ", ") + dev_name(kv.first) + ": " + human_bytes(kv.second);
      first = false;
    }
    live += ")";
  }
  out(live + "\n");
  if (m.requested_bytes && m.device_free_bytes && *m.device_free_bytes < m.requested_bytes)
    out("  short by " + human_bytes(m.requested_bytes - *m.device_free_bytes) + "\n");
  if (m.failed_calls_before_dump) out("  failed calls before this dump: " + std::to_string(m.failed_calls_before_dump) + "\n");
  if (m.stack_id) {
    out("  failing call stack (" + std::to_string(m.stack_id) + "):\n");
    for (auto& l : analysis::stack_lines(b, m.stack_id, o.frames)) out("      " + l + "\n");
  }

  // Top sites.
  auto sites = analysis::live_sites(b);
  uint64_t total = 0;
  for (auto& s : sites) total += s.bytes;
  out("\nTOP ALLOCATION SITES (live at the dump, by bytes)\n");
  if (sites.empty()) out("  no live allocations\n");
  for (size_t i = 0; i < sites.size() && i < o.top; ++i) {
    const auto& s = sites[i];
    double pct = total ? 100.0 * static_cast<double>(s.bytes) / static_cast<double>(total) : 0;
    out("  #" + std::to_string(i + 1) + "  " + human_bytes(s.bytes) + " in " + std::to_string(s.count) + " allocation" +
        (s.count == 1 ? "" : "s") + "  (" + fmt_double(pct, 1) + "%)  stack " + std::to_string(s.stack_id) + "\n");
    for (auto& l : analysis::stack_lines(b, s.stack_id, o.frames)) out("      " + l + "\n");
  }
  if (sites.size() > o.top) out("  ... " + std::to_string(sites.size() - o.top) + " more sites (--top N)\n");

  // Memory curve.
  int32_t dev = analysis::failing_device(b);
  auto curve = analysis::memory_curve(b, dev, 4096);
  out("\nMEMORY ON " + std::string(dev < 0 ? "UNKNOWN DEVICE" : "DEVICE " + std::to_string(dev)) + " LEADING TO THE DUMP\n");
  if (curve.empty()) {
    out("  no events on this device in the ring\n");
  } else {
    uint64_t mx = 0;
    std::string plot = analysis::sparkline(curve, o.width, o.ascii, &mx);
    double span = curve.back().t - curve.front().t;
    std::string top_label = human_bytes(mx);
    std::string pad(top_label.size(), ' ');
    out("  " + top_label + " |" + plot + (o.ascii ? "X" : "✖") + " OOM\n");
    out("  " + pad + " +" + std::string(o.width, '-') + "\n");
    out("  " + pad + "  " + utc_time(curve.front().t) + " ... " + utc_time(curve.back().t) + " (" + fmt_double(span, 3) +
        " s)\n");
    out("  start " + human_bytes(curve.front().v) + ", peak " + human_bytes(mx) + ", end " + human_bytes(curve.back().v) + "\n");
  }
  if (!b.events.empty()) {
    uint64_t first = b.events.front().seq, last = b.events.back().seq;
    out("  ring: " + std::to_string(b.events.size()) + " events (seq " + std::to_string(first) + ".." + std::to_string(last) + ")");
    if (m.total_event_count > b.events.size())
      out(", " + std::to_string(m.total_event_count - b.events.size()) + " older events overwritten");
    out("\n");
  }

  // Never freed.
  out("\nOLDEST LIVE ALLOCATIONS (never freed)\n");
  auto idx = analysis::oldest_live(b, o.oldest);
  if (idx.empty()) {
    out("  none\n");
  } else {
    Table t({"SEQ", "AGE", "SIZE", "DEVICE", "API", "ADDRESS", "SITE"}, "rrrrlll");
    for (size_t i : idx) {
      const Allocation& a = b.allocations[i];
      std::string age = m.timestamp > 0 && a.timestamp > 0 ? fmt_double(m.timestamp - a.timestamp, 3) + " s" : "-";
      t.add({std::to_string(a.seq), age, human_bytes(a.size), std::to_string(a.device_id), a.api, hex(a.address),
             top_frame(b, a.stack_id)});
    }
    out(t.render("  "));
    if (b.allocations.size() > idx.size())
      out("  ... " + std::to_string(b.allocations.size() - idx.size()) + " more live allocations (--oldest N)\n");
  }

  // Events by API.
  out("\nEVENTS BY API (in the ring)\n");
  auto counts = analysis::api_counts(b);
  if (counts.empty()) {
    out("  no events\n");
  } else {
    Table t({"API", "ALLOC", "FREE", "OOM", "FAILED", "OTHER", "TOTAL"}, "lrrrrrr");
    for (auto& c : counts)
      t.add({c.api, std::to_string(c.alloc), std::to_string(c.free), std::to_string(c.oom), std::to_string(c.failed),
             std::to_string(c.other), std::to_string(c.total)});
    out(t.render("  "));
  }
}

void report_dir(const std::string& dir, const std::vector<std::string>& paths, const ReportOptions& o) {
  struct Item {
    std::string path;
    Bundle b;
  };
  std::vector<Item> items(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    items[i].path = paths[i];
    load_bundle(paths[i], &items[i].b, /*light=*/true);
  }
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    if (x.b.metadata.timestamp != y.b.metadata.timestamp) return x.b.metadata.timestamp < y.b.metadata.timestamp;
    return x.b.metadata.rank.value_or(0) < y.b.metadata.rank.value_or(0);
  });
  // Failures are dumps with a failed call (not signal/exit snapshots).
  const Item* first = nullptr;
  for (auto& it : items) {
    const std::string& r = it.b.metadata.reason.empty() ? it.b.manifest.reason : it.b.metadata.reason;
    if (r == "oom" || r == "limit" || r == "fail_after") {
      first = &it;
      break;
    }
  }
  if (!first) first = &items.front();
  std::string job;
  for (auto& kv : first->b.metadata.custom_metadata)
    if (kv.first == "job_id") job = kv.second;
  out("gpumemrec report: " + std::to_string(items.size()) + " bundles in " + dir + (job.empty() ? "" : " (job " + job + ")") + "\n");
  const Metadata& fm = first->b.metadata;
  out("\nFIRST FAILURE\n");
  out("  " + std::string(fm.rank ? "rank " + std::to_string(*fm.rank) : "pid " + std::to_string(first->b.manifest.pid)) +
      (first->b.hostname().empty() ? "" : " on " + first->b.hostname()) + " at " + utc_time(fm.timestamp) + ": " +
      (fm.api.empty() ? fm.reason : fm.api + "(" + human_bytes(fm.requested_bytes) + ") on " + dev_name(fm.device_id) +
                                        (fm.error_name.empty() ? "" : " -> " + fm.error_name)) +
      "\n");
  out("  bundle: " + basename_of(first->path) + "\n");

  std::set<int32_t> devs;
  for (auto& it : items)
    for (auto& kv : it.b.metadata.live_bytes_by_device) devs.insert(kv.first);
  std::vector<std::string> headers = {"RANK", "HOST", "PID", "+TIME", "REASON", "API", "ASKED", "FREE", "LIVE"};
  std::string align = "rlrrllrrr";
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
    std::vector<std::string> row = {m.rank ? std::to_string(*m.rank) : "-",
                                    it.b.hostname().empty() ? "-" : it.b.hostname(),
                                    std::to_string(it.b.manifest.pid),
                                    (m.timestamp >= t0 ? "+" : "") + fmt_double(m.timestamp - t0, 3) + "s",
                                    m.reason.empty() ? it.b.manifest.reason : m.reason,
                                    m.api.empty() ? "-" : m.api,
                                    m.requested_bytes ? human_bytes(m.requested_bytes) : "-",
                                    m.device_free_bytes ? human_bytes(*m.device_free_bytes) : "-",
                                    human_bytes(m.live_bytes)};
    for (int32_t d : devs) {
      auto f = m.live_bytes_by_device.find(d);
      row.push_back(f == m.live_bytes_by_device.end() ? "-" : human_bytes(f->second));
    }
    row.push_back(&it == first ? "<- first" : "");
    t.add(std::move(row));
  }
  out("\nRANKS (ordered by time of the dump)\n");
  out(t.render("  "));

  out("\nDETAILS OF THE FIRST FAILURE\n\n");
  Bundle full;
  Progress progress;
  load_bundle(first->path, &full, false, &progress);
  report_bundle(full, o);
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
  app->footer("Given a directory of bundles (several ranks or hosts of one job), prints which rank failed first,\n"
              "the live bytes of every rank side by side, then the full report of the first failure.");
  return [=]() -> int {
    if (is_bundle_dir(o->path)) {
      Bundle b;
      Progress progress;
      load_bundle(o->path, &b, false, &progress);
      report_bundle(b, *o);
      return kOk;
    }
    if (is_directory(o->path)) {
      auto paths = find_bundles(o->path);
      if (paths.empty()) bad_input(o->path, "not a gpumemrec bundle: manifest.json is missing (and no bundles inside)");
      if (paths.size() == 1) {
        Bundle b;
        Progress progress;
        load_bundle(paths[0], &b, false, &progress);
        report_bundle(b, *o);
        return kOk;
      }
      report_dir(o->path, paths, *o);
      return kOk;
    }
    Bundle b;
    load_bundle(o->path, &b);  // produces the right error (missing, a file, ...)
    return kBadInput;
  };
}

}  // namespace gpumemrec::cli
