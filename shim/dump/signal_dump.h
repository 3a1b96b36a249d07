// GPUMEMREC_DUMP_SIGNAL: a bundle with reason "signal" when the signal comes.
//
// The handler does nothing but count the signal and sem_post() a semaphore
// in the shim's own memory (both async-signal-safe: sem_post is on the list
// in signal-safety(7)), then chains to the handler that was installed before
// ours, if any. It touches no file descriptor, so a program that closes and
// reuses descriptors can neither receive a stray byte nor silence signal
// dumps. A thread started by signal_dump_start() (all signals blocked in it)
// waits on the semaphore and writes the bundle: requests that arrive before
// it starts one are coalesced into it, a request that finds another dump in
// progress waits for it (never dropped), so each burst of signals gives at
// least one bundle. After fork the child gets a fresh semaphore and thread
// (the parent's thread does not exist in the child). If the program later
// installs its own handler for the signal, the program's handler wins and no
// signal dumps are written (documented in docs/reliability.md).
#pragma once

namespace gpumemrec {

struct Recorder;

void signal_dump_start(Recorder* r);  // from dumper_start (the constructor)
void signal_dump_atfork_child();
// Test hook: how many signals the handler has seen.
unsigned long signal_dump_count();

}  // namespace gpumemrec
