// The writer thread: writes out-of-memory bundles off the failing thread.
//
// Started lazily by the first failure that needs it (pthread_create, all
// signals blocked in it so the program's signals always go to its own
// threads), detached, named "gpumemrec-write". It runs one job at a time,
// in order; a job may wait for wake-ups (a
// verdict, the program's end) with writer_wait(). Wake-ups go through a
// semaphore: writer_wake() is async-signal-safe (sem_post), so the exit path
// and the fatal-signal path (crash_wait.h) can hurry the writer.
//
// fork: the thread does not exist in a child; writer_atfork_child() forgets
// it (and its job) and the child starts its own at its first failure.
// exec: the thread and its job are gone with the process image; a bundle
// being written is left as a `.tmp-` directory, removed as stale by a later
// prune (bundle_dir.h).
#pragma once
#include <cstdint>

namespace gpumemrec {

using WriterJob = void (*)(int);

// Starts the thread if needed; false when it cannot be started (the caller
// then runs the job itself).
bool writer_start();
// Runs job(arg) on the writer thread (started), after the jobs posted
// before it (first in, first out; at most kWriterQueue waiting, which the
// callers' own limits never reach: one job per frozen set, freeze.h, and one
// per deferred failure, deferred.h).
constexpr int kWriterQueue = 8;
void writer_post(WriterJob job, int arg);
// Jobs posted and not yet returned (the running one included).
int writer_jobs();
// The thread id of the writer (0 before it started).
long writer_tid();
bool writer_is_this_thread();
// True from writer_post until the job returned.
bool writer_busy();
// Waits until the writer is idle, at most max_ms; true when idle.
bool writer_wait_idle(unsigned max_ms);

// The writer thread's CPU time so far, in ns (its CPU-time clock, looked up
// by the thread itself; async-signal-safe); false before it started.
bool writer_cpu_ns(uint64_t* out);
// The writer polls for the dump slot: its CPU time then is not progress
// (exit_wait.h). Set and cleared by the writer around that wait.
void writer_set_parked(bool parked);
bool writer_parked();

// Async-signal-safe: wakes a job waiting in writer_wait.
void writer_wake();
// For the job: sleeps until woken or until `deadline_ns` (monotonic; 0 =
// no deadline). True when woken.
bool writer_wait(uint64_t deadline_ns);

// Called on the writer thread after `idle_ms` without a job (once per quiet
// spell): gives back memory kept for the next job.
void writer_set_idle_hook(void (*hook)(), unsigned idle_ms);

void writer_atfork_child();

}  // namespace gpumemrec
