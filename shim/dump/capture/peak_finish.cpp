#include "shim/dump/capture/peak_finish.h"

#include <algorithm>
#include <cstdio>

#include "shim/base/log.h"
#include "shim/dump/capture/event_order.h"
#include "shim/dump/capture/history.h"
#include "shim/dump/capture/peak_anchor.h"

namespace gpumemrec {

namespace {

std::string counted(const char* fmt, uint64_t n) {
  char buf[200];
  std::snprintf(buf, sizeof buf, fmt, (unsigned long long)n);
  return buf;
}

// Why the replay from the run's start ended before the cut (a gap the
// keeper opened), or "".
std::string keeper_gap(const PeakKept& k) {
  if (k.broken) return k.broken;
  if (k.lost) return counted("the ring reused %llu slots before the peak keeper read them", k.lost);
  return "";
}

// Why the keeper's state cannot be carried to the cut (a gap at the
// bundle), or "".
std::string bundle_gap(const PeakInput& in, uint64_t window_first) {
  if (!in.keeper && window_first > 1) return "no peak keeper ran and the ring wrapped";
  if (in.kept.cursor < window_first) return "the ring wrapped past the peak keeper before the bundle was frozen";
  return "";
}

// The events the keeper has not replayed: its pending ones and the window's
// from its cursor on, up to the cut, in the order they are replayed. With
// `horizon` (the replay has events up to the keeper's horizon) those the
// horizon had passed come first, counted in *late from `from_ns` on (as the
// keeper does); the rest in time order.
std::vector<Event> events_after_keeper(const PeakInput& in, const FrozenState& frozen, uint64_t from_ns,
                                       bool horizon, uint64_t* late) {
  const PeakKept& k = in.kept;
  std::vector<Event> late_events, tail;
  for (size_t i = k.pending_from; i < k.pending.size(); ++i)
    if (k.pending[i].time_ns <= frozen.cut_ns) tail.push_back(k.pending[i]);
  for (uint64_t i = 0; i < frozen.event_count; ++i) {
    const Event& e = frozen.events[i];
    if (e.seq < k.cursor || e.time_ns > frozen.cut_ns) continue;
    if (horizon && k.horizon_ns != 0 && e.time_ns <= k.horizon_ns) {
      if (e.time_ns >= from_ns && event_memory_change(e) != 0) ++*late;
      late_events.push_back(e);
    } else {
      tail.push_back(e);
    }
  }
  tail.resize(order_events(tail.data(), tail.size(), 0, UINT64_MAX, 0));
  late_events.insert(late_events.end(), tail.begin(), tail.end());
  return late_events;
}

// The keeper's replay since its last gap, carried to the cut.
void carry_after_gap(const PeakInput& in, const FrozenState& frozen, PeakReport* out) {
  const PeakKept& k = in.kept;
  PeakAfterGapFigure& a = out->after_info;
  a.gaps = k.gaps;
  a.lost = k.lost;
  a.from_seq = k.after.from_seq;
  a.from_ns = k.after.from_ns ? k.after.from_ns : in.resume_from_ns;
  if (a.from_ns == 0 || a.from_ns > frozen.cut_ns) {
    out->after_why = "the ring's marks had not said by the cut from when the keeper read every event again";
    return;
  }
  PeakReplay r = k.after.from_ns ? k.after.replay : PeakReplay::anchored(a.from_ns);
  uint64_t late = k.after.late;
  for (const Event& e : events_after_keeper(in, frozen, a.from_ns, k.after.from_ns != 0, &late))
    if (e.time_ns >= a.from_ns) r.apply(e);
  if (late) {
    a.exact = false;
    a.why_inexact = counted("%llu events reached the peak keeper after later ones were replayed", late);
  }
  out->after = std::move(r);
}

// A gap at the bundle: the replay since the moment the window holds every
// event from (the freeze's complete_from_ns, claim_marks.h rule 2).
void window_after_gap(const PeakInput& in, const FrozenState& frozen, uint64_t window_first, PeakReport* out) {
  const PeakKept& k = in.kept;
  PeakAfterGapFigure& a = out->after_info;
  a.gaps = k.gaps + 1;
  a.lost = k.lost + (window_first > k.cursor ? window_first - k.cursor : 0);
  a.from_seq = window_first;
  a.from_ns = frozen.complete_from_ns;
  if (a.from_ns == 0 || a.from_ns > frozen.cut_ns) {
    out->after_why = "the ring's marks do not say from when the window holds every event";
    return;
  }
  std::vector<Event> tail;
  for (uint64_t i = 0; i < frozen.event_count; ++i) {
    const Event& e = frozen.events[i];
    if (e.time_ns >= a.from_ns && e.time_ns <= frozen.cut_ns) tail.push_back(e);
  }
  tail.resize(order_events(tail.data(), tail.size(), 0, UINT64_MAX, 0));
  PeakReplay r = PeakReplay::anchored(a.from_ns);
  for (const Event& e : tail) r.apply(e);
  out->after = std::move(r);
}

PeakDevice device_of(int device, const DevicePeakState& d, const std::string& why) {
  PeakDevice p;
  p.device = device;
  p.peak_bytes = uint64_t(d.peak);
  p.peak_time_ns = d.peak_time_ns;
  p.peak_seq = d.peak_seq;
  p.until_ns = d.at_peak ? 0 : d.fall_time_ns;
  p.stretch_known = why.empty() || !d.at_peak;  // it fell before the replay ended, or the replay reached the cut
  p.exact = why.empty();
  p.why_inexact = why;
  p.live_now_bytes = uint64_t(d.current);  // the replay's end, until finish_peak_live
  p.events_replayed = d.events;
  p.sites = PeakReplay::sites_at_peak(d, kMaxSitesKept);
  return p;
}

}  // namespace

void finish_peak(const PeakInput& in, const FrozenState& frozen, PeakReport* out) {
  const uint64_t window_first = frozen.end_seq > in.capacity + 1 ? frozen.end_seq - in.capacity : 1;
  std::string why = keeper_gap(in.kept);
  const std::string at_bundle = bundle_gap(in, window_first);
  PeakReplay replay = in.kept.replay;
  out->after.reset();
  out->after_info = PeakAfterGapFigure{};
  out->after_why.clear();
  if (!at_bundle.empty()) {
    why = why.empty() ? at_bundle : why + "; then " + at_bundle;
    window_after_gap(in, frozen, window_first, out);
  } else if (in.kept.gaps != 0) {
    carry_after_gap(in, frozen, out);
  } else {
    uint64_t late = in.kept.late;
    for (const Event& e : events_after_keeper(in, frozen, 0, true, &late)) replay.apply(e);
    if (late) why = counted("%llu events reached the peak keeper after later ones were replayed", late);
  }
  if (!why.empty()) GM_DEBUG("peak.json: not exact: {} (keeper cursor {}, horizon {}, lost {}, late {}, gaps {})", why,
                             in.kept.cursor, in.kept.horizon_ns, in.kept.lost, in.kept.late, in.kept.gaps);
  out->present = true;
  out->why = why;
  out->devices.clear();
  for (const auto& [device, d] : replay.devices())
    if (d.peak > 0) out->devices.push_back(device_of(device, d, why));
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
  return it == r.devices().end() ? std::vector<PeakSite>{} : PeakReplay::sites_at_peak(it->second, kMaxSitesKept);
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
    static_cast<PeakFigure&>(*p) = PeakFigure{};
    p->peak_bytes = e.live_after;
    p->peak_time_ns = uint64_t(int64_t(e.time_ns) - frozen.wall_offset_ns);
    p->peak_seq = e.seq;
  }
}

// A figure that is not exact: the largest of the replay's, the peak since
// the last gap, the live set at the cut and the window's totals.
void lower_bound(const std::vector<LiveEntry>& live, const Event* events, size_t count, const FrozenState& frozen,
                 uint64_t now, PeakDevice* p) {
  if (p->after_gap && p->after_gap->figure.peak_bytes >= p->peak_bytes)  // a tie: the later moment
    static_cast<PeakFigure&>(*p) = p->after_gap->figure;
  if (now > p->peak_bytes) {  // the live set at the cut is a moment of the run, too
    static_cast<PeakFigure&>(*p) = PeakFigure{};
    p->peak_bytes = now;
    p->peak_time_ns = frozen.cut_ns;
    p->sites = live_sites(live, p->device);
  }
  window_floor(events, count, frozen, p);
}

uint64_t to_wall(uint64_t mono_ns, const FrozenState& frozen) {
  return mono_ns ? uint64_t(int64_t(mono_ns) + frozen.wall_offset_ns) : 0;
}

void figure_to_wall(PeakFigure* f, const FrozenState& frozen) {
  f->peak_time_ns = to_wall(f->peak_time_ns, frozen);
  f->until_ns = to_wall(f->until_ns, frozen);
}

}  // namespace

void finish_peak_live(const std::vector<LiveEntry>& live, const std::map<int, uint64_t>& live_by_device,
                      const Event* events, size_t count, const FrozenState& frozen, PeakReport* out) {
  for (const auto& [device, bytes] : live_by_device)
    if (bytes) device_entry(out, device);  // a device the replay never saw (no keeper, or lost)
  if (!out->why.empty())
    for (size_t i = 0; i < count; ++i)
      if (event_memory_change(events[i]) != 0) device_entry(out, event_device(events[i]));
  if (out->after)
    for (const auto& [device, d] : out->after->devices()) device_entry(out, device);
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
    if (out->after) {
      p.after_gap = anchor_after_gap(*out->after, out->after_info, live, p.device, now);
      auto d = out->after->devices().find(p.device);
      if (d != out->after->devices().end()) p.events_replayed += d->second.events;
    }
    if (!p.exact) lower_bound(live, events, count, frozen, now, &p);
    figure_to_wall(&p, frozen);
    if (p.after_gap) {
      figure_to_wall(&p.after_gap->figure, frozen);
      p.after_gap->from_ns = to_wall(p.after_gap->from_ns, frozen);
    }
  }
  std::sort(out->devices.begin(), out->devices.end(),
            [](const PeakDevice& a, const PeakDevice& b) { return a.device < b.device; });
}

}  // namespace gpumemrec
