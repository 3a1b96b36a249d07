// peak.json (docs/bundle-format.md, "peak.json"): each device's high-water
// mark of live bytes, found by replaying the recorded events (memray's
// method), with the allocation sites and libraries live at that moment, the
// peak since the last gap and memory by role at the peak. Read by the
// tools; a missing file is no peak, a bad one a `problem` and no peak; a bad
// `after_gap` or `roles` is a `problem` and left out (the rest is read).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumemrec::model {

struct PeakSite {
  uint64_t stack_id = 0;  // resolves in stacks.json
  uint64_t bytes = 0, count = 0;
};

struct PeakLibrary {
  std::string library;  // "" = not known (null)
  uint64_t bytes = 0, count = 0;
};

// A figure and its moment: the device's, or the one since the last gap.
struct PeakFigure {
  uint64_t peak_bytes = 0;
  uint64_t peak_time_ns = 0;  // CLOCK_REALTIME
  uint64_t peak_seq = 0;
  std::optional<uint64_t> peak_until_ns;  // null: had not fallen by the cut, or not known
  std::vector<PeakSite> sites;            // as listed (most bytes first)
  std::vector<PeakLibrary> by_library;    // as listed (most bytes first)
};

struct PeakAfterGap : PeakFigure {
  uint64_t gaps = 0, lost_events = 0;
  uint64_t from_seq = 0, from_time_ns = 0;
  bool exact = false;
  std::string why_inexact;
  uint64_t start_bytes = 0;
};

// Memory by role at the peak ("roles"); bytes in the file's order.
struct PeakRoles {
  bool known = false;
  std::string why_not_known, framework, walk, walk_status;
  uint64_t walk_time_ns = 0;
  std::vector<std::pair<std::string, uint64_t>> bytes;
};

struct PeakDevice : PeakFigure {
  int32_t device = -1;
  bool exact = false;
  std::string why_inexact;
  uint64_t live_now_bytes = 0;
  uint64_t events_replayed = 0;
  std::optional<PeakAfterGap> after_gap;
  std::optional<PeakRoles> roles;
};

struct PeakInfo {
  bool present = false;  // peak.json was there and read
  std::string problem;   // why it was not read
  std::vector<PeakDevice> devices;
};

// The peak of one bundle directory.
PeakInfo read_peak(const std::string& bundle_dir);
// From peak.json's text (for tests).
PeakInfo parse_peak(const char* json, size_t len);

}  // namespace gpumemrec::model
