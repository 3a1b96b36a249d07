// Placeholder until the Python-stack work lands: no frames, status reports
// whether Python stacks are disabled or absent.
#include "shim/python_stack.h"

namespace gpumemrec {

namespace {
bool g_enabled = false;
}

void python_stack_init(bool enabled) { g_enabled = enabled; }

uint32_t capture_python_frames(uint64_t*, uint32_t) { return 0; }

const char* python_status(const uint64_t* frames, uint32_t n) {
  if (!g_enabled) return "disabled";
  for (uint32_t i = 0; i < n; ++i) {
    if (frames[i] == kPythonNoGil) return "no_gil";
    if (is_python_word(frames[i])) return "captured";
  }
  return "not_python";
}

bool describe_python_frame(uint64_t, PythonFrameInfo*) { return false; }

}  // namespace gpumemrec
