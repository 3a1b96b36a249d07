// peak.json: each device's high-water mark of recorded bytes, the sites
// and libraries live then, the peak since the last gap and memory by role at
// the peak (shim/dump/capture/peak_finish.h, peak_roles.h;
// docs/bundle-format.md).
#include <algorithm>
#include <map>

#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

void write_time_or_null(JsonWriter& w, const char* key, uint64_t ns) {
  w.Key(key);
  ns ? w.Uint64(ns) : w.Null();
}

void write_sites(JsonWriter& w, const std::vector<PeakSite>& sites) {
  w.Key(key::kSites);
  w.StartArray();
  for (size_t i = 0; i < sites.size() && i < PeakReplay::kMaxSites; ++i) {
    const PeakSite& s = sites[i];
    w.StartObject();
    w.Key(key::kStackId); w.Uint64(s.stack_id);
    w.Key(key::kBytes); w.Uint64(s.bytes);
    w.Key(key::kCount); w.Uint64(s.count);
    w.EndObject();
  }
  w.EndArray();
}

// The figure's bytes by the library that allocated them (stacks.json
// `library`; null: not known), largest first: every site kept, and what the
// kept sites leave out of the figure as null. Empty when no site is known.
void write_by_library(JsonWriter& w, const model::Bundle& m, const PeakFigure& f) {
  w.Key(key::kByLibrary);
  w.StartArray();
  std::map<std::string, std::pair<uint64_t, uint64_t>> libs;
  uint64_t listed = 0;
  for (const PeakSite& s : f.sites) {
    const model::Stack* st = s.stack_id ? m.find_stack(s.stack_id) : nullptr;
    auto& l = libs[st ? st->library : std::string()];
    l.first += s.bytes;
    l.second += s.count;
    listed += s.bytes;
  }
  if (!f.sites.empty() && f.peak_bytes > listed) libs[std::string()].first += f.peak_bytes - listed;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> sorted(libs.begin(), libs.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  for (const auto& [lib, bc] : sorted) {
    w.StartObject();
    w.Key(key::kLibrary);
    lib.empty() ? w.Null() : w.String(lib);
    w.Key(key::kBytes); w.Uint64(bc.first);
    w.Key(key::kCount); w.Uint64(bc.second);
    w.EndObject();
  }
  w.EndArray();
}

void write_moment(JsonWriter& w, const PeakFigure& f) {
  w.Key(key::kPeakBytes); w.Uint64(f.peak_bytes);
  w.Key(key::kPeakTimeNs); w.Uint64(f.peak_time_ns);
  w.Key(key::kPeakSeq); w.Uint64(f.peak_seq);
  write_time_or_null(w, key::kPeakUntilNs, f.stretch_known ? f.until_ns : 0);
}

void write_after_gap(JsonWriter& w, const model::Bundle& m, const std::optional<PeakAfterGapFigure>& a) {
  w.Key(key::kAfterGap);
  if (!a) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key(key::kGaps); w.Uint64(a->gaps);
  w.Key(key::kLostEvents); w.Uint64(a->lost);
  w.Key(key::kFromSeq); w.Uint64(a->from_seq);
  w.Key(key::kFromTimeNs); w.Uint64(a->from_ns);
  w.Key(key::kExact); w.Bool(a->exact);
  w.Key(key::kWhyInexact);
  a->exact ? w.Null() : w.String(a->why_inexact);
  w.Key(key::kStartBytes); w.Uint64(a->start_bytes);
  write_moment(w, a->figure);
  write_sites(w, a->figure.sites);
  write_by_library(w, m, a->figure);
  w.EndObject();
}

void write_roles(JsonWriter& w, const std::optional<PeakRoles>& r) {
  w.Key(key::kRoles);
  if (!r) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key(key::kKnown); w.Bool(r->known);
  w.Key(key::kWhyNotKnown);
  r->known ? w.Null() : w.String(r->why_not_known);
  w.Key(key::kFramework); w.String(r->framework);
  w.Key(key::kWalk); w.String(r->walk);
  w.Key(key::kWalkStatus); w.String(r->walk_status);
  w.Key(key::kWalkTimeNs); w.Uint64(r->walk_time_ns);
  w.Key(key::kBytes);
  if (r->known) {
    w.StartObject();
    for (const auto& [role, bytes] : r->bytes) {
      w.Key(role.c_str());
      w.Uint64(bytes);
    }
    w.EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

void write_device(JsonWriter& w, const model::Bundle& m, const PeakDevice& d) {
  w.StartObject();
  w.Key(key::kDevice); w.Int(d.device);
  write_moment(w, d);
  w.Key(key::kExact); w.Bool(d.exact);
  w.Key(key::kWhyInexact);
  d.exact ? w.Null() : w.String(d.why_inexact);
  w.Key(key::kLiveNowBytes); w.Uint64(d.live_now_bytes);
  w.Key(key::kEventsReplayed); w.Uint64(d.events_replayed);
  write_sites(w, d.sites);
  write_by_library(w, m, d);
  write_after_gap(w, m, d.after_gap);
  write_roles(w, d.roles);
  w.EndObject();
}

}  // namespace

bool write_peak_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  if (!c.peak || !c.peak->present) return true;
  OutFile file(files, file::kPeak);
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartObject();
    w.Key(key::kSchema); w.Int(1);
    w.Key(key::kDevices);
    w.StartArray();
    for (const PeakDevice& d : c.peak->devices) write_device(w, c.model, d);
    w.EndArray();
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
