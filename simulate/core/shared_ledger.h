// Simulated devices shared by the processes of one run.
//
// A real GPU is one card for every process on the machine: torchrun's ranks
// on one device share its memory, and NVML lists each of them. The processes
// of one simulation run do the same through a table in shared memory,
// /dev/shm/gpumemrec-sim-<uid>-<run>, with one slot per process: its pid, its
// start time and what it holds on each device (its allocations, its pool's
// kept bytes, its CUDA context on a device it made current). The driver's
// capacity check (core/ledger.cpp) counts the other processes' bytes under a
// per-device lock (a robust process-shared mutex: a process killed while
// holding it leaves it usable), cuMemGetInfo reports them as used, NVML lists
// them.
//
// The run: GPUMEMREC_SIM_RUN, which the first process of a run that loads the
// simulated driver (the launcher: torchrun, or the program) makes (random)
// and exports, so that the processes it starts inherit it. A table is
// therefore never one of an earlier run; within a run, a slot counts only
// while its pid runs with the start time it recorded: a crashed process's
// share is freed at the next check that needs the room (or the next listing),
// a reused pid does not pass. The process that made the run, or the last one
// out, removes the table at its exit; a table whose processes all died is
// removed by the next run that starts.
//
// Only a run with a card (GPUMEMREC_SIMULATE) shares; the test suite's plain
// Fake GPU stays private to each process. A process whose card differs from
// the one the run's table was made for (another profile, count or capacity)
// says so in one line and keeps its devices to itself.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace sim::shared {

// From the driver's constructor and destructor.
void at_load();
void at_exit();

// True when this process shares its devices with the run.
bool active();

// Holds device `device`'s cross-process lock for a capacity check and the
// update that follows it (no lock when not shared).
class DeviceLock {
 public:
  explicit DeviceLock(int device);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  // What the run's other processes hold on the device. `verify`: first
  // check each for a process that died (and free its share); the capacity
  // check asks so only when the room is short.
  uint64_t others(bool verify);

 private:
  int device_;
  bool locked_ = false;
};

// This process now holds `bytes` on `device` (all kinds together).
void publish(int device, uint64_t bytes);

// What the other live processes hold on `device` (dead ones' shares freed).
uint64_t others_bytes(int device);

struct Peer {
  pid_t pid;
  uint64_t bytes;
};
// The other live processes with bytes on `device`, by pid (NVML's list).
std::vector<Peer> peers(int device);

}  // namespace sim::shared
