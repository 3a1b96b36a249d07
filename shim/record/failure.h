// The failure record: what an out-of-memory call asked for and when. The
// recorder fills it when it records the failure and hands it back to the
// wrapper, which gives it to the dumper (the recorder never calls up).
#pragma once
#include <cstdint>

#include "shim/base/hook_table.h"

namespace gpumemrec {

// kFrameworkOom: a framework's own allocator gave up without a driver-level
// failure (the Python start-up hook: docs/python-hook.md).
enum class DumpReason : uint8_t { kNone = 0, kOom, kLimit, kFailAfter, kSignal, kExit, kFrameworkOom };
const char* dump_reason_name(DumpReason r);

struct FailureInfo {
  HookId api = HookId::kCount;
  int device = -1;
  uint64_t size = 0;
  int result = 0;
  uint64_t seq = 0;
  uint32_t stack_id = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  DumpReason reason = DumpReason::kNone;
};

}  // namespace gpumemrec
