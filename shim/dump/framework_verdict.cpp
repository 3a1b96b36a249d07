// The Python start-up hook's word on the verdict of a PyTorch out-of-memory
// (docs/python-hook.md, "Trainers that retry"). Exported (exports.map:
// gpumemrec_*).
//
// The hook's observer holds the open episode while it runs (its snapshot
// and roles walk may take longer than GPUMEMREC_EPISODE_MS on a loaded
// machine, and the retry rule must not decide meanwhile), then reports
// (gpumemrec_framework_oom): fatal, or, when a handler of the program that
// catches the error and retries with less is waiting for it, undecided.
// That handler's catch is gpumemrec_framework_recovered.
#include <cstddef>
#include <cstdint>

#include "shim/base/log.h"
#include "shim/dump/dumper.h"

namespace gpumemrec {
namespace {

// A handler's name goes into metadata.json, summary.txt and stderr:
// printable ASCII, 1 to 63 bytes (Recovery::kHandlerBytes).
bool handler_name_ok(const char* name) {
  if (!name || !*name) return false;
  size_t n = 0;
  for (; name[n]; ++n)
    if (n + 1 >= Recovery::kHandlerBytes || name[n] < 0x20 || name[n] > 0x7e) return false;
  return true;
}

}  // namespace
}  // namespace gpumemrec

// The episode held (its verdict waits for the hook), 0 when no episode is
// open on `device`.
extern "C" __attribute__((visibility("default"))) uint64_t gpumemrec_framework_hold(int device) {
  return gpumemrec::dumper_framework_hold(device);
}

// The hook is done with `episode` without a report: the retry window
// starts again. 0 done, -1 not the open episode.
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_unhold(uint64_t episode) {
  return gpumemrec::dumper_framework_unhold(episode) ? 0 : -1;
}

// `handler` caught the error of `episode` on this thread and retries: the
// episode is recovered. 0 closed, -1 not the open episode or a bad name
// (said on stderr).
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_recovered(uint64_t episode,
                                                                                   const char* handler) {
  using namespace gpumemrec;
  if (!handler_name_ok(handler)) {
    GM_WARN("framework recovery report: the handler's name is not 1 to {} printable characters",
            Recovery::kHandlerBytes - 1);
    return -1;
  }
  return dumper_framework_recovered(episode, handler) ? 0 : -1;
}
