#include "shim/dump/verdict/verdict_text.h"

#include <string.h>

#include <cstdio>

#include "common/format.h"

namespace gpumemrec {

std::string recovery_phrase(const Recovery& r) {
  char buf[224];
  if (r.handler[0])
    std::snprintf(buf, sizeof buf, "recovered: %s caught the error and retries with less (%.1f ms later)",
                  r.handler, double(r.after_ns) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "recovered after freeing %s of cache (%.1f ms later)",
                  format_bytes(r.freed_bytes).c_str(), double(r.after_ns) / 1e6);
  return buf;
}

std::string outcome_detail(const Verdict& v, uint64_t episode_ms) {
  char buf[200];
  switch (v.outcome) {
    case Outcome::kRecovered: return recovery_phrase(v.recovery);
    case Outcome::kFatal:
      if (v.cause == FatalCause::kExit) return "not recovered: the program exited";
      if (v.cause == FatalCause::kFramework)
        return "not recovered: the framework's allocator gave up after its last retry (its out-of-memory hook ran)";
      if (v.cause == FatalCause::kSignal) {
        const char* abbrev = sigabbrev_np(v.signal);
        std::snprintf(buf, sizeof buf, "not recovered: the program ended by signal %d (SIG%s)", v.signal,
                      abbrev ? abbrev : "?");
        return buf;
      }
      std::snprintf(buf, sizeof buf, "not recovered: no retry of the request succeeded within %llu ms",
                    (unsigned long long)episode_ms);
      return buf;
    default: return "not known when this was written (the process may have ended before the verdict)";
  }
}

}  // namespace gpumemrec
