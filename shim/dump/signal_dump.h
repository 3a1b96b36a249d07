// GPUMEMREC_DUMP_SIGNAL: a bundle with reason "signal" when the signal comes.
//
// The handler does nothing but write one byte to a pipe (async-signal-safe)
// and chain to the handler that was installed before ours, if any. A thread
// started by signal_dump_start() (all signals blocked in it) reads the pipe
// and writes the bundle. After fork the child gets a new pipe and a new
// thread (the parent's thread does not exist in the child). If the program
// later installs its own handler for the signal, the program's handler wins
// and no signal dumps are written (documented in docs/reliability.md).
#pragma once

namespace gpumemrec {

struct Recorder;

void signal_dump_start(Recorder* r);  // from dumper_start (the constructor)
void signal_dump_atfork_child();
// Test hook: how many signals the handler has seen.
unsigned long signal_dump_count();

}  // namespace gpumemrec
