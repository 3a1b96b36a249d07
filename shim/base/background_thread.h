// The shim's own threads (the signal dump thread, the bundle writer):
// detached, named, and with every signal blocked, so that the program's
// signals are always delivered to one of its own threads.
#pragma once

namespace gpumemrec {

// False when the thread cannot be created (RLIMIT_NPROC, memory).
bool start_background_thread(void* (*main)(void*), const char* name);
// The same, `arg` passed to `main`.
bool start_background_thread(void* (*main)(void*), void* arg, const char* name);

}  // namespace gpumemrec
