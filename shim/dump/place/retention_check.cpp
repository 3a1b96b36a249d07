#include "shim/dump/place/retention_check.h"

#include <atomic>
#include <cstdio>

#include "shim/base/log.h"
#include "shim/base/signal_guard.h"

namespace gpumemrec {

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

uint64_t mib_up(uint64_t bytes) { return (bytes + kMiB - 1) / kMiB; }

// The largest power of two <= n (ring sizes are usually written as one);
// n itself when below 16, the smallest ring accepted.
uint64_t pow2_floor(uint64_t n) {
  if (n < 16) return n;
  uint64_t p = 16;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace

uint64_t largest_fitting_ring(uint64_t max_total_mb) {
  if (max_total_mb == 0 || max_total_mb > (UINT64_MAX >> 21)) return UINT64_MAX;
  const uint64_t cap = max_total_mb * kMiB;
  if (cap < kOtherFilesBytes) return 0;
  const uint64_t room = cap - kOtherFilesBytes;
  // Above kSnapshotMaxEvents no pickle is written: a ring just past it can
  // fit where one just below it does not.
  const uint64_t without_pickle = room / kEventJsonBytesPerEvent;
  if (without_pickle > kSnapshotMaxEvents) return without_pickle;
  if (room < kPickleFixedBytes) return 0;
  const uint64_t with_pickle = (room - kPickleFixedBytes) / (kEventJsonBytesPerEvent + kPickleBytesPerEvent);
  return with_pickle < kSnapshotMaxEvents ? with_pickle : kSnapshotMaxEvents;
}

std::string retention_warning(const Config& cfg) {
  if (cfg.max_total_mb == 0) return "";
  const BundleEstimate e = estimate_bundle(cfg.ring_events);
  const uint64_t cap = cfg.max_total_mb > (UINT64_MAX >> 21) ? UINT64_MAX : cfg.max_total_mb * kMiB;
  if (e.total() <= cap) return "";
  // GPUMEMREC_COMPRESS=zstd: the large files are 15-30x smaller in the
  // measured cases (docs/performance.md, "Compressed bundles"); 8x is
  // assumed, to warn only where even that does not fit.
  if (cfg.compress_zstd && e.total() / kZstdAssumedRatio <= cap) return "";
  char pickle[64] = "";
  if (e.pickle)
    std::snprintf(pickle, sizeof pickle, ", snapshot.pickle ~%llu MiB", (unsigned long long)mib_up(e.pickle));
  const uint64_t fit = largest_fitting_ring(cfg.max_total_mb);
  char lower[80] = "";
  if (fit >= 16)
    std::snprintf(lower, sizeof lower, ", or GPUMEMREC_RING_EVENTS=%llu or less", (unsigned long long)pow2_floor(fit));
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "GPUMEMREC_RING_EVENTS=%llu makes bundles of about %llu MiB (events.json ~%llu MiB%s, the other "
                "files ~%llu MiB at 100,000 live allocations from 10,000 call sites), over "
                "GPUMEMREC_MAX_TOTAL_MB=%llu: such a bundle is kept, without the older ones, until the next dump "
                "removes it; set GPUMEMREC_MAX_TOTAL_MB=%llu or more%s%s",
                (unsigned long long)cfg.ring_events, (unsigned long long)mib_up(e.total()),
                (unsigned long long)mib_up(e.events_json), pickle, (unsigned long long)mib_up(e.other),
                (unsigned long long)cfg.max_total_mb, (unsigned long long)mib_up(e.total()), lower,
                cfg.compress_zstd ? "" : ", or GPUMEMREC_COMPRESS=zstd (the large files compressed)");
  return buf;
}

void warn_if_bundle_exceeds_retention(const Config& cfg) {
  static std::atomic<bool> said{false};
  const std::string w = retention_warning(cfg);
  if (w.empty() || said.exchange(true)) return;
  DumpSignalGuard signal_guard;  // stderr may be a closed pipe: no SIGPIPE of ours
  GM_WARN("{}", w);
}

}  // namespace gpumemrec
