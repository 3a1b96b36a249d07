#include "shim/dump/status/status_figures.h"

#include <algorithm>
#include <unordered_map>

#include "shim/base/thread_clock.h"
#include "shim/dump/capture/event_order.h"
#include "shim/dump/capture/freeze.h"
#include "shim/record/live_bytes.h"

namespace gpumemrec {

namespace {

bool larger(const StackFigure& a, const StackFigure& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
}

// Device -1 (unknown) is LiveBytes' last slot.
int slot_device(int slot) { return slot == kMaxDevices ? -1 : slot; }

void add_stacks(const PeakReplay& replay, StatusFigures* out) {
  std::unordered_map<uint32_t, StackFigure> by_stack;
  for (const auto& [device, d] : replay.devices())
    for (const auto& [stack, s] : d.sites) {
      if (s.bytes == 0) continue;
      StackFigure& f = by_stack[stack];
      f.stack_id = stack;
      f.bytes += s.bytes;
      f.count += s.count;
    }
  out->stacks_total = by_stack.size();
  out->stacks.clear();
  out->stacks.reserve(by_stack.size());
  for (const auto& kv : by_stack) out->stacks.push_back(kv.second);
  const size_t keep = std::min(out->stacks.size(), kTopStacks);
  std::partial_sort(out->stacks.begin(), out->stacks.begin() + ptrdiff_t(keep), out->stacks.end(), larger);
  out->stacks.resize(keep);
}

// How many events of [lo, hi) are complete in the ring now: a thread's new
// event fills a seq of the block it holds, below end(), so end() alone does
// not say that something new was recorded; this count does (one cache line
// per seq, the one a copy would read).
uint64_t complete_events(const Ring& ring, uint64_t lo, uint64_t hi) {
  Ring::Segment segs[Ring::kGens / 2];
  const int k = ring.segments(lo, hi, segs, int(Ring::kGens / 2));
  uint64_t n = 0;
  Event e;
  for (int i = 0; i < k; ++i)
    for (uint64_t seq = segs[i].from; seq < segs[i].to; ++seq) n += ring.read_in(segs[i].buffer, seq, &e) ? 1 : 0;
  return n;
}

}  // namespace

void figures_from_replay(const PeakReplay& replay, const uint64_t (&live)[kMaxDevices + 1], bool exact_peaks,
                         StatusFigures* out) {
  out->devices.clear();
  for (int slot = 0; slot <= kMaxDevices; ++slot) {
    const int device = slot_device(slot);
    auto it = replay.devices().find(device);
    const DevicePeakState* d = it == replay.devices().end() ? nullptr : &it->second;
    if (live[slot] == 0 && (!d || d->peak == 0)) continue;
    DeviceFigure f;
    f.device = device;
    f.live = live[slot];
    // The replay's peak, or what is live now when that is more (a replay
    // behind: a lower bound either way).
    f.peak = d ? std::max(d->peak, f.live) : f.live;
    f.peak_time_ns = d && d->peak >= f.live ? d->peak_time_ns : 0;
    // Exact as a bundle's peak.json: the replay is complete and ends on the
    // live bytes (peak_finish.h).
    f.exact = exact_peaks && d && d->current == f.live && d->peak >= f.live;
    out->devices.push_back(f);
  }
  std::sort(out->devices.begin(), out->devices.end(),
            [](const DeviceFigure& a, const DeviceFigure& b) { return a.device < b.device; });
  add_stacks(replay, out);
}

bool FigureCollector::afford(double cost_ns, uint64_t now_ns) {
  if (tokens_at_ns_ != 0 && now_ns > tokens_at_ns_)
    tokens_ns_ = std::min(burst_ns_, tokens_ns_ + double(now_ns - tokens_at_ns_) * share_);
  tokens_at_ns_ = now_ns;
  return tokens_ns_ >= cost_ns;
}

// A cost measured over `n` items into its running estimate per item.
void FigureCollector::spent(uint64_t t0, uint64_t n, double* per_item) {
  const uint64_t ns = thread_cpu_ns() - t0;
  tokens_ns_ -= double(ns);
  if (n > 256) *per_item = 0.8 * *per_item + 0.2 * double(ns) / double(n);
}

// The keeper's replay brought up to the ring's end on a copy: its pending
// events and the unread seqs, in time order (event_order.h).
bool FigureCollector::peek(const Ring& ring, const PeakKept& kept, uint64_t end) {
  const uint64_t unread = end > kept.cursor ? end - kept.cursor : 0;
  const uint64_t pending = kept.pending.size() - kept.pending_from;
  const uint64_t t0 = thread_cpu_ns();
  scratch_.resize(size_t(unread + pending));
  uint64_t lost = 0;
  const uint64_t n = unread ? copy_ring_events(ring, kept.cursor, end, scratch_.data(), &lost) : 0;
  std::copy(kept.pending.begin() + ptrdiff_t(kept.pending_from), kept.pending.end(), scratch_.begin() + ptrdiff_t(n));
  const size_t all = size_t(n + pending);
  order_events(scratch_.data(), all, 0, UINT64_MAX, 0);
  peeked_ = kept.replay;
  for (size_t i = 0; i < all; ++i) peeked_.apply(scratch_[i]);
  spent(t0, unread + pending, &ns_per_event_);
  ++peeks_;
  return lost == 0;
}

// Whether anything was recorded since the last peek: the keeper's state and
// the events complete between its cursor and the end. *skip when the budget
// cannot pay for the look.
bool FigureCollector::changed(const Ring& ring, const PeakKept& kept, uint64_t end, uint64_t now_ns, bool* skip) {
  const uint64_t unread = end > kept.cursor ? end - kept.cursor : 0;
  *skip = unread > ring.capacity() || !afford(double(unread) * ns_per_slot_, now_ns);
  if (*skip) return false;
  const uint64_t t0 = thread_cpu_ns();
  const Key key{end, kept.cursor, kept.pending.size() - kept.pending_from, kept.horizon_ns,
                complete_events(ring, kept.cursor, end)};
  spent(t0, unread, &ns_per_slot_);
  const bool same = have_last_ && key == last_;
  last_ = key;
  have_last_ = true;
  return !same;
}

void FigureCollector::collect(const Ring& ring, const LiveBytes& live_bytes, const PeakKept& kept, uint64_t now_ns,
                              StatusFigures* out) {
  uint64_t live[kMaxDevices + 1];
  for (int slot = 0; slot <= kMaxDevices; ++slot) live[slot] = live_bytes.read(slot_device(slot));
  out->events = ring.end() > 0 ? ring.end() - 1 : 0;
  if (kept.stopped()) {
    figures_from_replay(kept.replay, live, false, out);
    out->stacks.clear();
    out->stacks_total = 0;
    out->state = status::kStateNoSites;
    out->note = kept.broken ? kept.broken : "the peak keeper lost events (the ring wrapped between its passes): peaks are lower bounds, sites unknown";
    return;
  }
  const uint64_t end = ring.end();
  bool skip = false;
  if (changed(ring, kept, end, now_ns, &skip) || (!last_ok_ && !skip)) {
    const uint64_t events = (end > kept.cursor ? end - kept.cursor : 0) + kept.pending.size() - kept.pending_from;
    skip = !afford(double(events) * ns_per_event_, now_ns);
    if (!skip) last_ok_ = peek(ring, kept, end);
  }
  if (skip) {  // past the budget: the keeper's own figures, and a fresh look next time
    ++skipped_;
    last_ok_ = false;
    have_last_ = false;
  }
  const bool exact = last_ok_ && kept.late == 0;
  figures_from_replay(last_ok_ ? peeked_ : kept.replay, live, exact, out);
  out->state = last_ok_ ? status::kStateExact : status::kStateSettled;
  out->note = last_ok_ ? (kept.late ? "events came later than the keeper's horizon: peaks may be off by them" : "")
                       : "busy: sites and peaks as the peak keeper replayed them, about 0.1 s behind";
}

}  // namespace gpumemrec
