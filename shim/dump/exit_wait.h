// Waiting for a bundle being written when the program ends: at exit(), at
// _exit() and in a fatal signal's handler (crash_wait.h). The wait follows
// progress, not a clock: a busy machine makes the writer slow, not stuck.
//
// Progress is any change of the dump path's counters (dump_progress.h: a
// buffer drained to a file, a file finished, a batch of sorting, aggregating
// or symbolizing) or CPU time used by the writer thread while it is not
// polling for the dump slot. Each of these is bounded work, milliseconds on
// an idle core, so even a writer that gets a small share of a core on a
// loaded machine shows progress many times a second. A writer that shows
// none for kStallMs (10 s) is blocked (a lock held by the thread that is
// ending the program, a hung file system), and waiting longer would not
// help. The whole wait is capped by GPUMEMREC_EXIT_WAIT_S (default 60; 0 =
// do not wait).
//
// Giving up says so on stderr in one line (the bundle lost, how many of its
// files were written) and removes this process's temporary bundle
// directories, so nothing half-written is left. Once given up, later waits
// of the same ending (exit() then its atexit handlers) return at once.
//
// Async-signal-safe: atomics, clock_gettime, nanosleep, write and the
// directory system calls; no lock, no allocation.
#pragma once

namespace gpumemrec {

constexpr unsigned kStallMs = 10000;

enum class ExitWaitEnd { kDone, kStalled, kLimit, kGaveUpBefore };

// From start-up: the cap (seconds) and the dump directory (kept: a pointer
// into the configuration, which lives as long as the process); stall_ms
// other than kStallMs for tests only.
void exit_wait_init(unsigned limit_s, const char* dir, unsigned stall_ms = kStallMs);
// Waits until done(); `when` names the occasion for the message ("at exit",
// "at a fatal signal"). kDone when done() came true. `surely_ends`: the
// process cannot go on after this (exit, _exit, a fatal signal with its
// default action). Only then does giving up shut the gate for new bundle
// directories (bundle_name.h, close_tmp_gate); a fatal signal that the
// program handles itself (a SIGTERM handler that saves a checkpoint and
// carries on) must not stop every later bundle.
ExitWaitEnd exit_wait(bool (*done)(), const char* when, bool surely_ends = true);

void exit_wait_atfork_child();

}  // namespace gpumemrec
