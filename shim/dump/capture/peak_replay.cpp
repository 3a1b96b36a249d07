#include "shim/dump/capture/peak_replay.h"

#include <algorithm>

#include "shim/dump/capture/history.h"

namespace gpumemrec {

void PeakReplay::touch(DevicePeakState& d, DevicePeakState::Site& s) {
  if (s.epoch == d.epoch) return;
  s.peak_bytes = s.bytes;  // untouched since the last falling edge: what it held at that peak
  s.peak_count = s.count;
  s.epoch = d.epoch;
}

void PeakReplay::apply(const Event& e) {
  const EventKind kind = event_kind(e);
  if (kind != EventKind::kAlloc && kind != EventKind::kFree) return;
  const int64_t change = event_memory_change(e);
  DevicePeakState& d = devices_[event_device(e)];
  if (change > 0) {
    auto& s = d.sites[e.stack_id];
    touch(d, s);
    s.bytes += uint64_t(change);
    s.count += 1;
    d.current += uint64_t(change);
    ++d.events;
    if (d.current >= d.peak) {  // a tie: the latest moment (see the header)
      d.peak = d.current;
      d.peak_time_ns = e.time_ns;
      d.peak_seq = e.seq;
      d.at_peak = true;
    }
    return;
  }
  if (kind != EventKind::kFree) return;
  const uint64_t size = uint64_t(-change);
  const uint32_t stack = uint32_t(e.freed_stack);
  auto it = size ? d.sites.find(stack) : d.sites.end();
  if (it == d.sites.end() || it->second.bytes < size || it->second.count == 0 || d.current < size) {
    ++d.unmatched_frees;  // an allocation this replay never saw (see the header)
    return;
  }
  if (d.at_peak) {  // the falling edge: the sites' values now are their values at the peak
    ++d.epoch;
    d.at_peak = false;
  }
  DevicePeakState::Site& s = it->second;
  touch(d, s);
  s.bytes -= size;
  s.count -= 1;
  d.current -= size;
  ++d.events;
  if (s.bytes == 0 && s.count == 0 && s.peak_bytes == 0) d.sites.erase(it);  // nothing to say about it any more
}

std::vector<PeakSite> PeakReplay::sites_at_peak(const DevicePeakState& d) {
  std::vector<PeakSite> out;
  for (const auto& [stack, s] : d.sites) {
    const bool now = d.at_peak || s.epoch != d.epoch;  // its value now is its value at the peak
    const uint64_t bytes = now ? s.bytes : s.peak_bytes;
    const uint64_t count = now ? s.count : s.peak_count;
    if (bytes) out.push_back(PeakSite{stack, bytes, count});
  }
  auto larger = [](const PeakSite& a, const PeakSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  };
  if (out.size() > kMaxSites) {
    std::partial_sort(out.begin(), out.begin() + kMaxSites, out.end(), larger);
    out.resize(kMaxSites);
  } else {
    std::sort(out.begin(), out.end(), larger);
  }
  return out;
}

}  // namespace gpumemrec
