// Aggregations over a loaded bundle shared by report, html and ls.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/bundle_model.h"
#include "common/live_sites.h"

namespace gpumemrec::analysis {

// Live allocations grouped by call site, largest first: the one computation
// summary.txt also uses (common/live_sites.h, model::live_sites).
using Site = model::LiveSite;

struct CurvePoint {
  double t;
  uint64_t v;
};
// memory_allocated over time on one device, downsampled to at most
// max_points points (min and max of each time bucket are kept, so spikes
// survive). max_points >= 4.
std::vector<CurvePoint> memory_curve(const model::Bundle& b, int32_t device, size_t max_points);

// Devices that appear in events, allocations or metadata (>= 0), sorted.
std::vector<int32_t> devices(const model::Bundle& b);
// The device of the failure: metadata.device_id, else the last OOM's, else
// the first device seen, else 0.
int32_t failing_device(const model::Bundle& b);

struct ApiCount {
  std::string api;
  uint64_t alloc = 0, free = 0, oom = 0, failed = 0, other = 0, total = 0;
};
std::vector<ApiCount> api_counts(const model::Bundle& b);  // largest total first

// A primary context destroyed in the bundle's window (a device reset, the
// last primary-context release): what its frees released, per device, api
// and stack, first in time order.
struct ContextDestruction {
  int32_t device = -1;
  std::string api;
  uint64_t stack_id = 0;
  uint64_t allocations = 0;  // deallocation events (mappings not counted)
  uint64_t bytes = 0;
  double timestamp = 0;      // the first of its frees
};
std::vector<ContextDestruction> context_destructions(const model::Bundle& b);

// Indices into b.allocations, oldest (lowest seq, then timestamp) first.
// The lowest and highest seq of the bundle's events ({0, 0} when none):
// events are in time order, and seq is not time order across threads.
std::pair<uint64_t, uint64_t> seq_range(const model::Bundle& b);
// About how many events older than the bundle's were not kept (overwritten
// in the ring, or before the moment its window is complete from): 0 when
// the bundle starts at seq 1 (every event since the start is in it);
// otherwise the seqs handed out minus the events kept, which counts the
// unused seqs of the threads' blocks too (docs/bundle-format.md).
uint64_t events_not_kept(const model::Bundle& b);
std::vector<size_t> oldest_live(const model::Bundle& b, size_t n);

// A stack as text lines: "site: f (file:line)  library: libx.so" (the site
// frame and owning library, common/site_rules.h), then its frames ("py  f
// (file:line)" / "    f (file:line)") with runs of runtime, framework and
// interpreter frames folded ("    [14 frames in libtorch_cuda.so, ...]")
// unless all_frames; at most max_frames lines. Short C++ names unless
// verbose (common/names.h); last, a line saying why Python frames are
// missing when the stack's `python` field says so.
std::vector<std::string> stack_lines(const model::Bundle& b, uint64_t stack_id, size_t max_frames, bool verbose = false,
                                     bool all_frames = false);
// "site: f (file:line)  library: libx.so"
std::string site_line(const model::Stack& s, bool verbose);

// The site frame of a stack as one label ("(no stack)" / "stack N").
std::string top_frame(const model::Bundle& b, uint64_t stack_id, bool verbose = false);
// The stack's owning library ("" when unknown or no stack).
std::string library_of(const model::Bundle& b, uint64_t stack_id);

// OOM events of the ring. recovered: the same thread later allocated at
// least as many bytes successfully before its next OOM (the program freed
// memory or shrank its batch and carried on). The bundle's own failure (the
// last OOM of the ring on the thread, device and size of metadata.json)
// takes the bundle's verdict instead when it has one (outcome(): recovered
// or not; verdict holds it), since the ring is cut at the failure and the
// retry is never in it.
struct OomMark {
  double t = 0;
  int32_t device = -1;
  uint64_t size = 0;
  uint32_t thread = 0;
  uint16_t api = 0;
  bool recovered = false;
  std::string verdict;  // "" = inferred from the events; else the bundle's outcome
};
std::vector<OomMark> oom_marks(const model::Bundle& b);
// Index into b.events of the bundle's own failing OOM event, or -1.
int64_t failing_oom_event(const model::Bundle& b);

// A one-line plot of `curve` scaled to [0, max]: `width` columns, each the
// highest value in its time slice. Unicode blocks unless ascii.
std::string sparkline(const std::vector<CurvePoint>& curve, size_t width, bool ascii, uint64_t* max_out);

}  // namespace gpumemrec::analysis
