// The layout of a run's shared device table (core/shared_ledger.h) and the
// file operations on it: one fixed-size file in /dev/shm, mapped by every
// process of the run. Fields are atomics or written before `magic` (the
// maker) or a slot's state (its owner) is published with release order.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "core/config.h"

namespace sim::shared {

constexpr uint64_t kTableMagic = 0x3142444c4d495347ull;  // "GSIMLDB1"
constexpr int kMaxSlots = 256;                            // processes of one run at once

enum SlotState : int32_t { kSlotFree = 0, kSlotClaiming = 1, kSlotLive = 2 };

struct Slot {
  std::atomic<int32_t> state;
  pid_t pid;
  uint64_t start_time;  // process_alive()
  std::atomic<uint64_t> bytes[kMaxDevices];
};

struct Table {
  std::atomic<uint64_t> magic;  // set last by the maker
  char profile[32];             // the card all processes of the run simulate
  int32_t devices;
  uint64_t capacity;
  pid_t creator;
  uint64_t creator_start;
  pthread_mutex_t locks[kMaxDevices];  // robust, process-shared: the capacity checks
  Slot slots[kMaxSlots];
};

// /dev/shm/gpumemrec-sim-<uid>-<run>.
std::string table_path(const std::string& run);

// Opens or (create: exclusively) makes the table and maps it; *made says
// which. nullptr when it cannot be had (the file belongs to another user,
// has another size, or /dev/shm refuses), and a table that is not there
// when !create.
Table* open_table(const std::string& path, bool create, bool* made);
// The maker: the table is complete.
void publish_table(Table* t);
// Another process's table: waits (at most a second) for its maker to
// complete it. False if it never is.
bool wait_published(const Table* t);

// Removes this user's tables of other runs whose maker and processes are all
// gone.
void prune_stale_tables(const std::string& keep_run);

void init_robust_mutex(pthread_mutex_t* m);
// Locks; a holder that died leaves the mutex to the next locker, consistent
// (what it guards is counters, each always valid).
void lock_robust_mutex(pthread_mutex_t* m);

}  // namespace sim::shared
