// gpumemrec_framework_oom(): the one C entry point of the Python start-up
// hook (docs/python-hook.md), exported (exports.map: gpumemrec_*). Called by
// PyTorch's out-of-memory observer after its allocator's last retry failed,
// with the allocator lock released (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator::malloc), or by the hook's excepthook on JAX's
// RESOURCE_EXHAUSTED. The caller's bytes are copied before it returns.
#include <cstddef>
#include <memory>
#include <new>
#include <string>

#include "shim/base/log.h"
#include "shim/dump/capture/framework_report.h"
#include "shim/dump/dumper.h"

namespace gpumemrec {
namespace {

constexpr size_t kMaxDigestBytes = 1u << 20;
constexpr size_t kMaxStateBytes = size_t(1) << 30;  // memory_viz fails past about 1 GB anyway

std::shared_ptr<FrameworkReport> make_report(const char* digest, size_t digest_len, const char* state_name,
                                             const void* state, size_t state_len, std::string* why) {
  auto r = framework_report_from_digest(digest, digest_len, kMaxDigestBytes, why);
  if (!r) return nullptr;
  if (state && state_len > 0) {
    if (!state_name || !framework_state_name_ok(state_name)) {
      *why = "an unknown state file name";
      return nullptr;
    }
    if (state_len > kMaxStateBytes) {
      *why = "a state over 1 GiB (left out)";
    } else {
      r->state_name = state_name;
      r->state.assign(static_cast<const char*>(state), state_len);
    }
  }
  return r;
}

}  // namespace
}  // namespace gpumemrec

// PyTorch's observer begins its report: the open episode on `device` waits
// for it instead of closing on its window while the hook walks the program's
// objects (dumper.h). 0: an episode waits; 1: none is open.
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_oom_begin(int device) {
  return gpumemrec::dumper_on_framework_begin(device);
}

// 0: attached to the open episode's bundle (verdict fatal now); 1: a
// framework_oom bundle is on its way (frozen now, written by the writer
// thread; written here only when no writer can take it); -1: nothing
// written (a bad report is said on stderr).
extern "C" __attribute__((visibility("default"))) int gpumemrec_framework_oom(const char* digest, size_t digest_len,
                                                                              const char* state_name,
                                                                              const void* state, size_t state_len) {
  using namespace gpumemrec;
  std::string why;
  std::shared_ptr<FrameworkReport> r;
  try {
    r = make_report(digest, digest_len, state_name, state, state_len, &why);
  } catch (...) {
    why = "out of memory copying the framework's state";
  }
  if (!why.empty()) GM_WARN("framework out-of-memory report: {}", why);
  if (!r) return -1;
  return dumper_on_framework_oom(std::move(r));
}
