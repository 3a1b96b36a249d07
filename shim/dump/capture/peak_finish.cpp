#include "shim/dump/capture/peak_finish.h"

#include <algorithm>
#include <cstdio>

#include "shim/dump/capture/event_order.h"
#include "shim/dump/capture/history.h"
#include "shim/base/log.h"

namespace gpumemrec {

namespace {

std::string counted(const char* fmt, uint64_t n) {
  char buf[200];
  std::snprintf(buf, sizeof buf, fmt, (unsigned long long)n);
  return buf;
}

// Why the keeper's state cannot be carried to the cut (lost events), or "".
std::string why_stopped(const PeakInput& in, uint64_t window_first) {
  const PeakKept& k = in.kept;
  if (k.broken) return k.broken;
  if (k.lost) return counted("the ring reused %llu slots before the peak keeper read them", k.lost);
  if (!in.keeper && window_first > 1) return "no peak keeper ran and the ring wrapped";
  if (k.cursor < window_first) return "the ring wrapped past the peak keeper before the bundle was frozen";
  return "";
}

// The events the keeper has not replayed: its pending ones and the window's
// from its cursor on, up to the cut, in time order; `late` counts those the
// horizon had passed (replayed first, as the keeper does).
std::vector<Event> events_after_keeper(const PeakInput& in, const FrozenState& frozen, uint64_t* late) {
  const PeakKept& k = in.kept;
  std::vector<Event> late_events, tail;
  for (size_t i = k.pending_from; i < k.pending.size(); ++i)
    if (k.pending[i].time_ns <= frozen.cut_ns) tail.push_back(k.pending[i]);
  for (uint64_t i = 0; i < frozen.event_count; ++i) {
    const Event& e = frozen.events[i];
    if (e.seq < k.cursor || e.time_ns > frozen.cut_ns) continue;
    if (k.horizon_ns != 0 && e.time_ns <= k.horizon_ns) {
      if (event_memory_change(e) != 0) ++*late;
      late_events.push_back(e);
    } else {
      tail.push_back(e);
    }
  }
  tail.resize(order_events(tail.data(), tail.size(), 0, UINT64_MAX, 0));
  late_events.insert(late_events.end(), tail.begin(), tail.end());
  return late_events;
}

}  // namespace

void finish_peak(const PeakInput& in, const FrozenState& frozen, PeakReport* out) {
  const uint64_t window_first = frozen.end_seq > in.capacity + 1 ? frozen.end_seq - in.capacity : 1;
  std::string why = why_stopped(in, window_first);
  PeakReplay replay = in.kept.replay;
  if (why.empty()) {
    uint64_t late = in.kept.late;
    for (const Event& e : events_after_keeper(in, frozen, &late)) replay.apply(e);
    if (late) why = counted("%llu events reached the peak keeper after later ones were replayed", late);
  }
  if (!why.empty()) GM_DEBUG("peak.json: not exact: {} (keeper cursor {}, horizon {}, lost {}, late {})", why,
                             in.kept.cursor, in.kept.horizon_ns, in.kept.lost, in.kept.late);
  out->present = true;
  out->why = why;
  out->devices.clear();
  for (const auto& [device, d] : replay.devices()) {
    if (d.peak == 0) continue;
    PeakDevice p;
    p.device = device;
    p.peak_bytes = d.peak;
    p.peak_time_ns = d.peak_time_ns;
    p.peak_seq = d.peak_seq;
    p.exact = why.empty();
    p.why_inexact = why;
    p.live_now_bytes = d.current;  // the replay's end, until finish_peak_live
    p.events_replayed = d.events;
    p.sites = PeakReplay::sites_at_peak(d);
    out->devices.push_back(std::move(p));
  }
}

namespace {

// The live set's sites on `device`, as a replay at the cut would have them.
std::vector<PeakSite> live_sites(const std::vector<LiveEntry>& live, int device) {
  PeakReplay r;
  Event e{};
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType::kDevice);
  for (const LiveEntry& a : live) {
    if (a.device != device || MemoryType(a.memory_type) == MemoryType::kMapping) continue;
    e.address = a.key;
    e.size = a.size;
    e.stack_id = a.stack_id;
    e.device1 = uint8_t(device >= 0 && device < 255 ? device + 1 : 0);
    r.apply(e);
  }
  auto it = r.devices().find(device);
  return it == r.devices().end() ? std::vector<PeakSite>{} : PeakReplay::sites_at_peak(it->second);
}

PeakDevice& device_entry(PeakReport* out, int device) {
  for (PeakDevice& p : out->devices)
    if (p.device == device) return p;
  out->devices.push_back(PeakDevice{});
  out->devices.back().device = device;
  return out->devices.back();
}

// A figure that is not exact: the window's totals (events.json's
// memory_allocated) are moments of the run too; the largest is a lower
// bound when it is more (its sites are not known: none listed).
void window_floor(const Event* events, size_t count, const FrozenState& frozen, PeakDevice* p) {
  for (size_t i = 0; i < count; ++i) {
    const Event& e = events[i];
    if (event_device(e) != p->device || e.live_after <= p->peak_bytes) continue;
    p->peak_bytes = e.live_after;
    p->peak_time_ns = uint64_t(int64_t(e.time_ns) - frozen.wall_offset_ns);
    p->peak_seq = e.seq;
    p->sites.clear();
  }
}

}  // namespace

void finish_peak_live(const std::vector<LiveEntry>& live, const std::map<int, uint64_t>& live_by_device,
                      const Event* events, size_t count, const FrozenState& frozen, PeakReport* out) {
  for (const auto& [device, bytes] : live_by_device)
    if (bytes) device_entry(out, device);  // a device the replay never saw (no keeper, or lost)
  if (!out->why.empty())
    for (size_t i = 0; i < count; ++i)
      if (event_memory_change(events[i]) != 0) device_entry(out, event_device(events[i]));
  for (PeakDevice& p : out->devices) {
    auto it = live_by_device.find(p.device);
    const uint64_t now = it == live_by_device.end() ? 0 : it->second;
    if (p.peak_bytes == 0 && p.why_inexact.empty()) {
      p.exact = false;
      p.why_inexact = out->why.empty() ? "the replay never saw this device's allocations" : out->why;
    }
    if (p.exact && now != p.live_now_bytes)
      p.why_inexact = counted("the replay ends at %llu bytes, the live table holds ", p.live_now_bytes) +
                      std::to_string(now);
    p.exact = p.exact && now == p.live_now_bytes;
    p.live_now_bytes = now;
    if (!p.exact && now > p.peak_bytes) {  // the live set at the cut is a moment of the run, too
      p.peak_bytes = now;
      p.peak_time_ns = frozen.cut_ns;
      p.peak_seq = 0;
      p.sites = live_sites(live, p.device);
    }
    if (!p.exact) window_floor(events, count, frozen, &p);
    p.peak_time_ns = uint64_t(int64_t(p.peak_time_ns) + frozen.wall_offset_ns);
  }
  std::sort(out->devices.begin(), out->devices.end(),
            [](const PeakDevice& a, const PeakDevice& b) { return a.device < b.device; });
}

}  // namespace gpumemrec
