// The Python start-up hook's word on the verdict of a PyTorch out-of-memory
// (docs/python-hook.md, "Trainers that retry"). Exported (exports.map:
// gpumemrec_*).
//
// The hook's observer holds the open episode while it runs
// (gpumemrec_framework_oom_begin), then reports (gpumemrec_framework_oom):
// fatal, or, when a handler of the program that catches the error and
// retries with less is waiting for it, still held. That handler's catch is
// gpumemrec_framework_recovered; without it the hold's end decides (fatal).
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

// `handler` caught the framework's out-of-memory error on `device` on this
// thread and retries with less: the open episode there, held by the
// framework's report, is recovered. 0 closed, -1 none open and held there
// (decided already) or a bad name (said on stderr).
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_recovered(int device,
                                                                                   const char* handler) {
  using namespace gpumemrec;
  if (!handler_name_ok(handler)) {
    GM_WARN("framework recovery report: the handler's name is not 1 to {} printable characters",
            Recovery::kHandlerBytes - 1);
    return -1;
  }
  return dumper_framework_recovered(device, handler) ? 0 : -1;
}
