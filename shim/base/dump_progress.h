// How far the bundle being written has come: the writer's heartbeat, read by
// the exit wait (shim/dump/exit_wait.h) to tell a slow writer (wait on) from
// a stuck one (give up).
//
// Whoever writes a bundle (the writer thread, or a thread writing a signal or
// exit dump) counts: every buffer drained to a file (at most 224 KiB apart),
// every file finished, and every batch of work in the long stages that write
// nothing for a while (sorting, aggregating, symbolizing). Only the dump path
// writes these counters (one bundle at a time: the dump slot), never the
// program's calls; readers are a waiting thread or a signal handler
// (lock-free atomics: async-signal-safe).
#pragma once
#include <atomic>
#include <cstdint>

namespace gpumemrec {

struct DumpProgress {
  std::atomic<uint64_t> steps{0};  // anything done: only its change matters
  std::atomic<uint32_t> files{0};  // files finished in the bundle being written
};
inline DumpProgress g_dump_progress;

inline void dump_progress_step() { g_dump_progress.steps.fetch_add(1, std::memory_order_relaxed); }
inline void dump_progress_new_bundle() {
  g_dump_progress.files.store(0, std::memory_order_relaxed);
  dump_progress_step();
}
inline void dump_progress_file_done() {
  g_dump_progress.files.fetch_add(1, std::memory_order_relaxed);
  dump_progress_step();
}
inline uint64_t dump_progress_steps() { return g_dump_progress.steps.load(std::memory_order_relaxed); }
inline uint32_t dump_progress_files() { return g_dump_progress.files.load(std::memory_order_relaxed); }

}  // namespace gpumemrec
