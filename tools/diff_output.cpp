#include "tools/diff_output.h"

#include <map>

#include "tools/cli.h"
#include "common/names.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

// " (fatal)" for one bundle, " (2 fatal, 1 recovered)" for several; "" when
// no bundle has a verdict.
std::string outcomes_note(const diff::SiteTotals& s) {
  std::map<std::string, size_t> n;
  for (const auto& o : s.outcomes)
    if (!o.empty()) ++n[o];
  if (n.empty()) return "";
  if (s.outcomes.size() == 1) return " (" + s.outcomes[0] + ")";
  std::string t;
  for (const auto& kv : n) t += (t.empty() ? "" : ", ") + std::to_string(kv.second) + " " + kv.first;
  return " (" + t + ")";
}

std::string sides_line(const char* label, const diff::SiteTotals& s) {
  std::string l = std::string(label) + format_bytes(s.bytes) + " live in " + std::to_string(s.count) + " allocations, ";
  if (s.bundles.size() == 1) return l + basename_of(s.bundles[0]) + outcomes_note(s) + "\n";
  return l + std::to_string(s.bundles.size()) + " bundles" + outcomes_note(s) + "\n";
}

bool shown(const diff::SiteDelta& x, const DiffPrintOptions& p) { return p.include_same || x.status != diff::Status::kSame; }

}  // namespace

void load_side(const std::string& path, diff::SiteTotals* side, RoleTotals* roles) {
  std::vector<std::string> paths;
  if (is_bundle_dir(path)) paths.push_back(path);
  else if (is_directory(path)) paths = find_bundles(path);
  if (paths.empty()) {
    if (is_directory(path)) bad_input(path, "not a gpumemrec bundle: manifest.json is missing (and no bundles inside)");
    Bundle b;
    load_bundle(path, &b, true);  // the reader's error for a missing path or a file
  }
  for (const auto& p : paths) {
    Bundle b;
    load_bundle_without_events(p, &b);
    side->add(b);
    if (roles) add_role_totals(b, roles);
  }
}

std::string diff_text(const diff::SiteTotals& o, const diff::SiteTotals& n, const std::vector<diff::SiteDelta>& d,
                      const DiffPrintOptions& p) {
  std::string out = "gpumemrec diff\n";
  out += sides_line("  old: ", o);
  out += sides_line("  new: ", n);
  int64_t total = static_cast<int64_t>(n.bytes) - static_cast<int64_t>(o.bytes);
  size_t counts[5] = {0, 0, 0, 0, 0};
  for (auto& x : d) ++counts[static_cast<int>(x.status)];
  out += "  change: " + format_bytes_signed(total) + "; sites: " + std::to_string(counts[0]) + " grew, " +
         std::to_string(counts[1]) + " new, " + std::to_string(counts[2]) + " shrank, " + std::to_string(counts[3]) +
         " gone, " + std::to_string(counts[4]) + " unchanged\n\n";
  Table t({"#", "CHANGE", "OLD", "NEW", "ALLOCS", "STATUS", "SITE", "LIBRARY"}, "rrrrrlll");
  std::string stacks;
  size_t k = 0;
  for (const auto& x : d) {
    if (!shown(x, p) || k >= p.top) continue;
    ++k;
    const auto& fr = x.site->frames;
    const model::Frame* site = diff::site_of(*x.site);
    std::string top = site ? names::frame_label(*site, p.verbose) : "(no frames)";
    t.add({std::to_string(k), format_bytes_signed(x.delta()), format_bytes(x.old_bytes), format_bytes(x.new_bytes),
           std::to_string(x.old_count) + "->" + std::to_string(x.new_count), diff::status_name(x.status), top,
           x.site->library.empty() ? "-" : x.site->library});
    stacks += "  #" + std::to_string(k) + " " + diff::status_name(x.status) + " " + format_bytes_signed(x.delta()) + "\n";
    for (size_t i = 0; i < fr.size() && i < p.frames; ++i)
      stacks += std::string(fr[i].kind == FrameKind::kPython ? "      py  " : "          ") + names::frame_label(fr[i], p.verbose) + "\n";
    if (fr.size() > p.frames) stacks += "          ... " + std::to_string(fr.size() - p.frames) + " more frames\n";
  }
  if (k == 0) return out + "  no site changed\n";
  out += t.render("  ");
  size_t more = 0;
  for (auto& x : d) more += shown(x, p);
  if (more > k) out += "  ... " + std::to_string(more - k) + " more sites (--top N)\n";
  return out + "\nSTACKS\n" + stacks;
}

void write_diff_json(JsonWriter& w, const diff::SiteTotals& o, const diff::SiteTotals& n,
                     const std::vector<diff::SiteDelta>& d, const DiffPrintOptions& p, const RoleTotals* old_roles,
                     const RoleTotals* new_roles) {
  w.StartObject();
  json_kv(w, "schema", std::string("gpumemrec.diff/1"));
  for (const auto* side : {&o, &n}) {
    w.Key(side == &o ? "old" : "new");
    w.StartObject();
    w.Key("bundles");
    w.StartArray();
    for (auto& b : side->bundles) w.String(b.c_str());
    w.EndArray();
    w.Key("outcomes");
    w.StartArray();
    for (auto& x : side->outcomes) {
      if (x.empty()) w.Null();
      else w.String(x.c_str());
    }
    w.EndArray();
    json_kv(w, "live_bytes", side->bytes);
    json_kv(w, "live_allocations", side->count);
    w.EndObject();
  }
  json_kv(w, "delta_bytes", static_cast<int64_t>(n.bytes) - static_cast<int64_t>(o.bytes));
  w.Key("sites");
  w.StartArray();
  size_t k = 0;
  for (const auto& x : d) {
    if (!shown(x, p) || k++ >= p.top) continue;
    w.StartObject();
    json_kv(w, "status", std::string(diff::status_name(x.status)));
    json_kv(w, "delta_bytes", x.delta());
    json_kv(w, "old_bytes", x.old_bytes);
    json_kv(w, "new_bytes", x.new_bytes);
    json_kv(w, "old_count", x.old_count);
    json_kv(w, "new_count", x.new_count);
    json_kv(w, "python", x.site->python);
    w.Key("site");
    if (const model::Frame* site = diff::site_of(*x.site)) {
      w.StartObject();
      w.Key("frame");
      json_frame(w, *site);
      json_kv_or_null(w, "library", x.site->library);
      w.EndObject();
    } else {
      w.Null();
    }
    json_frames(w, x.site->frames, p.frames);
    w.EndObject();
  }
  w.EndArray();
  if (old_roles && new_roles) json_role_diff(w, *old_roles, *new_roles);
  w.EndObject();
}

}  // namespace gpumemrec::cli
