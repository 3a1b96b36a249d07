// The run's high-water mark per device, by replaying the recorded events in
// time order (the order of a bundle's events, event_order.h): each device's
// running total of recorded bytes, as events.json's memory_allocated counts
// it (history.h, event_memory_change), and each allocation site's share of
// it (the stack id of the allocating call).
//
// Replay rules:
//  - an allocation adds its size to its device and to its site (its own
//    stack id); a free takes its size from its device and from the site of
//    the allocation it frees (Event::freed_stack, written by the recorder
//    from the live-table entry it removed); failures and mappings change
//    nothing;
//  - a free this replay cannot match (its size is 0: the recorder did not
//    know the address; or its site holds less than that: the allocation was
//    made before the replay began) changes nothing and is counted
//    (unmatched_frees): the replay counts only what it saw allocated;
//  - the peak is the largest total; a tie goes to the latest moment that
//    reaches it (as memray's HighWatermarkFinder, which keeps the record
//    index whenever current >= peak: bloomberg/memray
//    src/memray/_memray/snapshot.cpp @ 268473b1);
//  - the sites at the peak are known on its falling edge, the first
//    decrease after a new maximum (between the maximum and that decrease no
//    event changed any total). As memray's HighWaterMarkAggregator does in
//    the same file, nothing is copied there: the edge bumps the device's
//    peak epoch, and a site touched later first keeps its value as its
//    value at the peak (its epoch is older). So each event costs O(1) and a
//    report walks the sites once. The edge's time is kept (fall_time_ns):
//    the peak held from peak_time_ns until then.
//
// Anchored replays (after a gap: peak_keeper.h). A replay that starts at a
// moment `from_ns` of a run under way does not know the totals then; it
// keeps each device's and each site's change since `from_ns` (signed: a
// free of an allocation made before it takes from a site the replay never
// saw), with the start itself as its first peak (a change of 0, peak_seq
// 0). The bundle anchors it on the live set at the cut (peak_finish.h):
// the total at a moment is the live set minus the changes after it.
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "common/event.h"

namespace gpumemrec {

struct PeakSite {
  uint32_t stack_id = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

struct DevicePeakState {
  // Anchored replays: every figure is the change since the replay's start.
  struct Site {
    int64_t bytes = 0, count = 0;            // live now
    int64_t peak_bytes = 0, peak_count = 0;  // at the peak of epoch `epoch`
    uint64_t epoch = 0;
  };
  int64_t current = 0;
  int64_t peak = 0;
  uint64_t peak_time_ns = 0;  // the replayed events' clock
  uint64_t peak_seq = 0;      // 0 (anchored): the replay's start
  uint64_t fall_time_ns = 0;  // the falling edge after the peak; 0 while at_peak
  uint64_t epoch = 0;       // falling edges seen
  bool at_peak = false;     // a new maximum whose falling edge has not come yet
  uint64_t events = 0;      // events replayed that changed this device's total
  uint64_t unmatched_frees = 0;
  std::unordered_map<uint32_t, Site> sites;
};

// A site's bytes and count at the device's peak (anchored: their change).
struct SiteAtPeak {
  int64_t bytes = 0, count = 0;
};

class PeakReplay {
 public:
  static constexpr size_t kMaxSites = 50;  // listed in peak.json

  PeakReplay() = default;  // from the run's start
  static PeakReplay anchored(uint64_t from_ns);  // from a moment of the run (see the header)
  bool is_anchored() const { return anchored_; }
  uint64_t from_ns() const { return from_ns_; }

  // One event, in time order.
  void apply(const Event& e);
  const std::map<int, DevicePeakState>& devices() const { return devices_; }
  static SiteAtPeak site_at_peak(const DevicePeakState& d, const DevicePeakState::Site& s);
  // The sites holding bytes at the device's peak, largest first (then by
  // stack id), at most `limit` (a replay from the run's start).
  static std::vector<PeakSite> sites_at_peak(const DevicePeakState& d, size_t limit = kMaxSites);

 private:
  static void touch(DevicePeakState& d, DevicePeakState::Site& s);
  DevicePeakState& device(int device);
  bool matched_free(const DevicePeakState& d, std::unordered_map<uint32_t, DevicePeakState::Site>::iterator it,
                    uint64_t size) const;
  std::map<int, DevicePeakState> devices_;
  bool anchored_ = false;
  uint64_t from_ns_ = 0;
};

// Largest first, then by stack id; at most `limit`.
void sort_sites(std::vector<PeakSite>* sites, size_t limit);

}  // namespace gpumemrec
