#include "core/unmodeled.h"

#include <unistd.h>

#include <cstdio>

namespace sim {

int unmodeled(std::atomic<bool>* said, const char* library, const char* name, int code, const char* code_name) {
  if (!said->exchange(true, std::memory_order_relaxed)) {
    char line[320];
    const int n = snprintf(line, sizeof line,
                           "gpumemrec simulate: %s (%s) is not simulated; it returns %s (%d) and does nothing\n",
                           name, library, code_name, code);
    if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
  }
  return code;
}

}  // namespace sim
