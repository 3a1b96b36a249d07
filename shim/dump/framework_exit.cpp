// gpumemrec_framework_exit(): the Python start-up hook's atexit handler
// hands over the framework's digest at the interpreter's exit (its roles and
// its own peaks: docs/python-hook.md). Exported (exports.map: gpumemrec_*).
// The bytes are copied and checked (a JSON object naming its framework,
// common/framework_digest.h) before it returns; the latest digest is kept
// for the exit and signal bundles (framework_report.h).
#include <cstddef>
#include <memory>
#include <string>

#include "shim/base/log.h"
#include "shim/dump/capture/framework_report.h"

namespace gpumemrec {
namespace {

constexpr size_t kMaxExitDigestBytes = size_t(4) << 20;

}  // namespace
}  // namespace gpumemrec

// 0: kept (replacing an earlier one); -1: refused (said on stderr).
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_exit(const char* digest, size_t len) {
  using namespace gpumemrec;
  std::string why;
  std::shared_ptr<FrameworkReport> r;
  try {
    r = framework_report_from_digest(digest, len, kMaxExitDigestBytes, &why);
  } catch (...) {
    why = "out of memory copying the digest";
  }
  if (!r) {
    GM_WARN("framework exit digest refused: {}", why);
    return -1;
  }
  framework_exit_put(std::move(r));
  return 0;
}
