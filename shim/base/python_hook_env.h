// The Python start-up hook's injection (docs/python-hook.md): when the
// preloaded process is a CPython interpreter about to start, our own
// sitecustomize directory goes to the front of PYTHONPATH; the original value
// is kept in kSavedVar, and the hook (sitecustomize.py) puts it back in
// os.environ and in the C environment as its first act.
//
// Why the constructor may do this: CPython reads PYTHONPATH in its own
// start-up (Python/initconfig.c, config_read_env_vars via
// config_get_env_dup), called from Py_BytesMain -> pymain_init, i.e. after
// main() began; constructors of preloaded libraries run before main.
#pragma once

namespace gpumemrec {

// Kept in the environment between our constructor and the hook: "1:<old
// PYTHONPATH>" or "0:" when PYTHONPATH was unset.
constexpr const char* kSavedVar = "GPUMEMREC_PYHOOK_SAVED";

// From the constructor, before any other thread exists. First undoes an
// injection inherited from a parent whose hook never ran (kSavedVar
// present), so the environment is the user's; then injects if `enabled`
// (GPUMEMREC_PYTHON_HOOK), this process is CPython, its options let site and
// PYTHONPATH work (no -I, -E, -S) and the hook directory exists beside the
// library.
void python_hook_inject(bool enabled);

// Exposed for tests: whether the options of a python command line (argv,
// argc entries) leave the hook able to run (no -I, -E, -S before the
// script, -c or -m).
bool python_options_allow_hook(const char* const* argv, int argc);

}  // namespace gpumemrec
