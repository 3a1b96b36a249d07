// The ranks of a communicator meeting across processes, as NCCL's bootstrap
// makes them meet (src/bootstrap.cc: every rank reaches the root named in the
// unique id, and ncclCommInitRank returns once all nranks have): here through
// a small table in shared memory named after the unique id, in /dev/shm
// (`gpumemrec-nccl-<uid>-<creator pid>-<id>`). Each rank writes its slot
// (pid and start time, device, split color and key) and waits until every
// rank has; the last rank to leave removes the table. A wait ends early when
// a rank that joined has died (its pid gone or reused), when the process
// that made the unique id died before all ranks joined, or on abort.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl/types.h"

namespace sim::nccl {

constexpr int kMaxRanks = 4096;

// What the unique id holds (ncclUniqueId's 128 bytes are opaque to callers).
struct IdFields {
  uint64_t magic;     // kIdMagic
  uint64_t random;    // names the rendezvous
  uint32_t creator;   // pid of the process that made the id
  uint32_t pad;
  uint64_t creator_start;
};
constexpr uint64_t kIdMagic = 0x31434e4d52534d47ull;  // "GMSRMNC1"

// A fresh unique id made by this process.
ncclUniqueId make_unique_id();
// The id's fields; false for bytes no simulated ncclGetUniqueId made.
bool read_unique_id(const ncclUniqueId& id, IdFields* out);

struct Member {
  int rank = -1;
  int device = -1;
  int color = 0;  // ncclCommSplit
  int key = 0;
  pid_t pid = 0;
};

struct Outcome {
  ncclResult_t rc = ncclSuccess;
  std::string why;                 // for ncclGetLastError, when rc != ncclSuccess
  std::vector<Member> members;     // by rank
};

// Joins the rendezvous `name` (an id's, or a split's: see table_name) as
// `me`, one of `nranks`. Blocks until every rank joined or the wait fails.
Outcome meet(const std::string& name, uint32_t creator, uint64_t creator_start, int nranks, const Member& me,
             const std::atomic<bool>* abort);

// The table's name for an id (seq 0) or for the seq-th split of a
// communicator made from it.
std::string table_name(const IdFields& id, uint64_t seq);

// Removes tables left in /dev/shm by processes of this user that are gone.
void prune_stale_tables();

}  // namespace sim::nccl
