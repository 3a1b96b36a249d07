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

// Seqs of [lo, hi) whose event is not complete in the ring now, appended
// to *holes; whether any was complete.
bool find_holes(const Ring& ring, uint64_t lo, uint64_t hi, std::vector<uint64_t>* holes) {
  Ring::Segment segs[Ring::kGens / 2];
  const int k = lo < hi ? ring.segments(lo, hi, segs, int(Ring::kGens / 2)) : 0;
  bool any = false;
  Event e;
  for (int i = k - 1; i >= 0; --i)  // oldest segment first: holes stay in seq order
    for (uint64_t seq = segs[i].from; seq < segs[i].to; ++seq) {
      if (ring.read_in(segs[i].buffer, seq, &e)) any = true;
      else holes->push_back(seq);
    }
  return any;
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
    // The replay's totals are signed (peak_replay.h); a negative one is 0 here.
    const uint64_t peak = d && d->peak > 0 ? uint64_t(d->peak) : 0;
    const uint64_t current = d && d->current > 0 ? uint64_t(d->current) : 0;
    f.peak = std::max(peak, f.live);
    f.peak_time_ns = d && peak >= f.live ? d->peak_time_ns : 0;
    // Exact as a bundle's peak.json: the replay is complete and ends on the
    // live bytes (peak_finish.h).
    f.exact = exact_peaks && d && current == f.live && peak >= f.live;
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

// Whether anything was recorded since the last look. A thread's new event
// fills a seq of the block it holds, below end(), so end() alone does not
// say it: the seqs that were not complete at the last look (the unused
// rest of the threads' blocks: a few per thread) are looked at again, and
// the seqs past the last look's end are new. *skip when the budget cannot
// pay for the look.
bool FigureCollector::changed(const Ring& ring, const PeakKept& kept, uint64_t end, uint64_t now_ns, bool* skip) {
  if (!have_last_) holes_.clear();  // a whole look from the cursor
  const uint64_t from = have_last_ ? std::max(kept.cursor, last_.end) : kept.cursor;
  const uint64_t slots = holes_.size() + (end > from ? end - from : 0);
  // A look at a few seqs (a quiet program's block tails) is always made: it
  // keeps figures already brought up to date exact while the budget repays.
  *skip = end - std::min(end, kept.cursor) > ring.capacity() ||
          (slots > kCheapLookSlots && !afford(double(slots) * ns_per_slot_, now_ns));
  if (*skip) {  // not looked: the next look starts again from the cursor
    have_last_ = false;
    return false;
  }
  const uint64_t t0 = thread_cpu_ns();
  const Key key{end, kept.cursor, kept.pending.size() - kept.pending_from, kept.horizon_ns};
  bool filled = false;
  std::vector<uint64_t> still;
  Event e;
  for (uint64_t seq : holes_) {
    if (seq < kept.cursor) continue;  // read by the keeper since
    if (ring.read(seq, &e)) filled = true;
    else still.push_back(seq);
  }
  filled = find_holes(ring, from, end, &still) || filled;
  holes_.swap(still);
  spent(t0, slots, &ns_per_slot_);
  const bool same = have_last_ && key == last_ && !filled;
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
  // A peek when something new was recorded and the budget can pay for it;
  // or, once the program is quiet again (a look found nothing new) after
  // peeks the budget refused, one catch-up as soon as the budget is not in
  // debt: it brings the figures up to date for as long as the quiet lasts.
  const uint64_t end = ring.end();
  bool look_skipped = false;
  const bool moved = changed(ring, kept, end, now_ns, &look_skipped);
  bool ok = last_ok_ && !moved && !look_skipped;
  if (!look_skipped && (moved || !last_ok_)) {
    const uint64_t events = (end > kept.cursor ? end - kept.cursor : 0) + kept.pending.size() - kept.pending_from;
    ok = afford(moved ? double(events) * ns_per_event_ : 0, now_ns) && peek(ring, kept, end);
  }
  if (!ok) ++skipped_;  // the keeper's own figures this time
  last_ok_ = ok;
  const bool exact = last_ok_ && kept.late == 0;
  figures_from_replay(last_ok_ ? peeked_ : kept.replay, live, exact, out);
  out->state = last_ok_ ? status::kStateExact : status::kStateSettled;
  out->note = last_ok_ ? (kept.late ? "events came later than the keeper's horizon: peaks may be off by them" : "")
                       : "busy: sites and peaks as the peak keeper replayed them, about 0.1 s behind";
}

}  // namespace gpumemrec
