// Whether a process that wrote itself into a shared table is still the same
// running process: its pid exists and has the start time recorded with it
// (a pid the kernel gave to another process since does not pass).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace sim {

// The process's start time in clock ticks since boot (/proc/<pid>/stat,
// field 22), or 0 when there is no such process.
uint64_t process_start_time(pid_t pid);

// True when `pid` runs and started at `start_time` (0 matches any start).
bool process_alive(pid_t pid, uint64_t start_time);

}  // namespace sim
