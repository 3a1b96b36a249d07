#include "shim/dump/capture/peak_replay.h"

#include <algorithm>

#include "shim/dump/capture/history.h"

namespace gpumemrec {

PeakReplay PeakReplay::anchored(uint64_t from_ns) {
  PeakReplay r;
  r.anchored_ = true;
  r.from_ns_ = from_ns;
  return r;
}

void PeakReplay::touch(DevicePeakState& d, DevicePeakState::Site& s) {
  if (s.epoch == d.epoch) return;
  s.peak_bytes = s.bytes;  // untouched since the last falling edge: what it held at that peak
  s.peak_count = s.count;
  s.epoch = d.epoch;
}

DevicePeakState& PeakReplay::device(int device) {
  auto [it, made] = devices_.try_emplace(device);
  if (made && anchored_) {  // the start is the first peak: a change of 0
    it->second.at_peak = true;
    it->second.peak_time_ns = from_ns_;
  }
  return it->second;
}

// A replay from the run's start takes a free only from a site that holds it
// (see the header); an anchored one takes every free of a known size.
bool PeakReplay::matched_free(const DevicePeakState& d,
                              std::unordered_map<uint32_t, DevicePeakState::Site>::iterator it, uint64_t size) const {
  if (anchored_) return true;
  const DevicePeakState::Site& s = it->second;
  return s.bytes >= int64_t(size) && s.count > 0 && d.current >= int64_t(size);
}

void PeakReplay::apply(const Event& e) {
  const EventKind kind = event_kind(e);
  if (kind != EventKind::kAlloc && kind != EventKind::kFree) return;
  const int64_t change = event_memory_change(e);
  DevicePeakState& d = device(event_device(e));
  if (change > 0) {
    auto& s = d.sites[e.stack_id];
    touch(d, s);
    s.bytes += change;
    s.count += 1;
    d.current += change;
    ++d.events;
    if (d.current >= d.peak) {  // a tie: the latest moment (see the header)
      d.peak = d.current;
      d.peak_time_ns = e.time_ns;
      d.peak_seq = e.seq;
      d.at_peak = true;
      d.fall_time_ns = 0;
    }
    return;
  }
  if (kind != EventKind::kFree) return;
  const uint64_t size = uint64_t(-change);
  const uint32_t stack = uint32_t(e.freed_stack);
  auto it = size ? (anchored_ ? d.sites.try_emplace(stack).first : d.sites.find(stack)) : d.sites.end();
  if (it == d.sites.end() || !matched_free(d, it, size)) {
    ++d.unmatched_frees;  // an allocation this replay never saw (see the header)
    return;
  }
  if (d.at_peak) {  // the falling edge: the sites' values now are their values at the peak
    ++d.epoch;
    d.at_peak = false;
    d.fall_time_ns = e.time_ns;
  }
  DevicePeakState::Site& s = it->second;
  touch(d, s);
  s.bytes -= int64_t(size);
  s.count -= 1;
  d.current -= int64_t(size);
  ++d.events;
  if (s.bytes == 0 && s.count == 0 && s.peak_bytes == 0 && s.peak_count == 0)
    d.sites.erase(it);  // nothing to say about it any more
}

SiteAtPeak PeakReplay::site_at_peak(const DevicePeakState& d, const DevicePeakState::Site& s) {
  const bool now = d.at_peak || s.epoch != d.epoch;  // its value now is its value at the peak
  return now ? SiteAtPeak{s.bytes, s.count} : SiteAtPeak{s.peak_bytes, s.peak_count};
}

void sort_sites(std::vector<PeakSite>* out, size_t limit) {
  auto larger = [](const PeakSite& a, const PeakSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  };
  if (out->size() > limit) {
    std::partial_sort(out->begin(), out->begin() + ptrdiff_t(limit), out->end(), larger);
    out->resize(limit);
  } else {
    std::sort(out->begin(), out->end(), larger);
  }
}

std::vector<PeakSite> PeakReplay::sites_at_peak(const DevicePeakState& d, size_t limit) {
  std::vector<PeakSite> out;
  for (const auto& [stack, s] : d.sites) {
    const SiteAtPeak v = site_at_peak(d, s);
    if (v.bytes > 0) out.push_back(PeakSite{stack, uint64_t(v.bytes), uint64_t(v.count > 0 ? v.count : 0)});
  }
  sort_sites(&out, limit);
  return out;
}

}  // namespace gpumemrec
