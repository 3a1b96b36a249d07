// peak.json (docs/bundle-format.md, "peak.json"): each device's high-water
// mark of live bytes, found by replaying the recorded events (memray's
// method), with the allocation sites live at that moment. Read by the
// tools; a missing file is no peak, a bad one a `problem` and no peak.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpumemrec::model {

struct PeakSite {
  uint64_t stack_id = 0;  // resolves in stacks.json
  uint64_t bytes = 0, count = 0;
};

struct PeakDevice {
  int32_t device = -1;
  uint64_t peak_bytes = 0;
  uint64_t peak_time_ns = 0;  // CLOCK_REALTIME
  uint64_t peak_seq = 0;
  bool exact = false;
  std::string why_inexact;
  uint64_t live_now_bytes = 0;
  uint64_t events_replayed = 0;
  std::vector<PeakSite> sites;  // as listed (most bytes first)
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
