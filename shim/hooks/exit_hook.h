// _exit / _Exit interposed (exit_hook.cpp).
#pragma once

namespace gpumemrec {

// From start-up: finds glibc's _exit and _Exit.
void exit_hook_init();

}  // namespace gpumemrec
