#include "shim/dump/capture/peak_anchor.h"

#include <string>
#include <unordered_map>

namespace gpumemrec {

namespace {

struct Held {
  int64_t bytes = 0, count = 0;
};

std::unordered_map<uint32_t, Held> live_by_site(const std::vector<LiveEntry>& live, int device) {
  std::unordered_map<uint32_t, Held> out;
  for (const LiveEntry& a : live) {
    if (a.device != device || MemoryType(a.memory_type) == MemoryType::kMapping) continue;
    Held& h = out[a.stack_id];
    h.bytes += int64_t(a.size);
    h.count += 1;
  }
  return out;
}

// Each site's bytes at the peak: live - change now + change at the peak.
// False (and *why) when a site would hold less than nothing at T or then.
bool sites_at_peak(const DevicePeakState* d, std::unordered_map<uint32_t, Held> held, std::vector<PeakSite>* out,
                   std::string* why) {
  if (d)
    for (const auto& [stack, s] : d->sites) {
      Held& h = held[stack];
      const SiteAtPeak p = PeakReplay::site_at_peak(*d, s);
      const Held at_t{h.bytes - s.bytes, h.count - s.count};
      h = Held{at_t.bytes + p.bytes, at_t.count + p.count};
      if (at_t.bytes < 0 || at_t.count < 0 || h.bytes < 0 || h.count < 0) {
        *why = "the replay since the gap and the live set at the cut disagree (site " + std::to_string(stack) +
               " would hold " + std::to_string(at_t.bytes < 0 ? at_t.bytes : h.bytes) + " bytes)";
        return false;
      }
    }
  for (const auto& [stack, h] : held)
    if (h.bytes > 0) out->push_back(PeakSite{stack, uint64_t(h.bytes), uint64_t(h.count)});
  sort_sites(out, kMaxSitesKept);
  return true;
}

}  // namespace

PeakAfterGapFigure anchor_after_gap(const PeakReplay& after, const PeakAfterGapFigure& info,
                                    const std::vector<LiveEntry>& live, int device, uint64_t live_now) {
  PeakAfterGapFigure a = info;
  auto it = after.devices().find(device);
  const DevicePeakState* d = it == after.devices().end() ? nullptr : &it->second;
  const int64_t start = int64_t(live_now) - (d ? d->current : 0);
  PeakFigure& f = a.figure;
  f.peak_time_ns = d ? d->peak_time_ns : after.from_ns();
  f.peak_seq = d ? d->peak_seq : 0;
  f.until_ns = d && !d->at_peak ? d->fall_time_ns : 0;
  std::string why;
  if (start < 0) why = "the replay since the gap takes more than the live set at the cut holds";
  if (why.empty() && sites_at_peak(d, live_by_site(live, device), &f.sites, &why)) {
    a.start_bytes = uint64_t(start);
    f.peak_bytes = uint64_t(start + (d ? d->peak : 0));
  }
  if (!why.empty()) {
    a.exact = false;
    a.why_inexact = a.why_inexact.empty() ? why : a.why_inexact + "; " + why;
    f.sites.clear();
    f.peak_bytes = 0;
  }
  f.stretch_known = a.exact;
  return a;
}

}  // namespace gpumemrec
