// GPUMEMREC_DUMP_SIGNAL: a bundle with reason "signal" when the signal comes.
//
// The handler does nothing but note the request (its CLOCK_REALTIME time
// and sender pid, lock-free atomics), count it and sem_post() a semaphore in
// the shim's own memory (clock_gettime and sem_post are on the list in
// signal-safety(7)), then chains to the handler that was installed before
// ours, if any. It touches no file descriptor, so a program that closes and
// reuses descriptors can neither receive a stray byte nor silence signal
// dumps. A thread started by signal_dump_start() (all signals blocked in it)
// waits on the semaphore and writes the bundle: requests that arrive before
// it starts one are coalesced into it, a request that finds another dump in
// progress waits for it (never dropped), so each burst of signals gives at
// least one bundle. Each bundle says which requests it serves (metadata
// signal_requests: every handler run counted before its freeze and not by
// an earlier bundle), so that no request goes unaccounted; a request after
// the freeze gets the next bundle. The kernel itself merges a standard
// signal sent while one is pending (docs/reliability.md). After fork the child gets a fresh semaphore and thread
// (the parent's thread does not exist in the child). If the program later
// installs its own handler for the signal, the program's handler wins and no
// signal dumps are written (documented in docs/reliability.md).
#pragma once

#include "common/bundle_model.h"

namespace gpumemrec {

struct Recorder;

void signal_dump_start(Recorder* r);  // from dumper_start (the constructor)
void signal_dump_atfork_child();
// The requests not served yet, taken by the bundle about to be frozen (the
// signal dump thread, dumper.cpp's prepare_job): they are its own.
model::SignalRequests signal_requests_take();
// How many signals the handler has seen (tests; the exit line of
// GPUMEMREC_DUMP_SIGNAL programs).
unsigned long signal_dump_count();

}  // namespace gpumemrec
