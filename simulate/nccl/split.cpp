// ncclCommSplit and ncclCommShrink, and the end of a communicator:
// ncclCommFinalize, ncclCommDestroy, ncclCommAbort, ncclCommRevoke.
#include <algorithm>

#include "nccl/api.h"
#include "nccl/init_internal.h"

namespace sim::nccl {
namespace {

ncclResult_t check_parent(ncclComm* comm, ncclComm_t* newcomm, const char* fn) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, std::string(fn) + " : comm argument is invalid");
  if (newcomm == nullptr) return fail(comm, ncclInvalidArgument, std::string(fn) + " : newcomm argument is NULL");
  if (comm->state.load() != ncclSuccess)
    return fail(comm, ncclInvalidUsage, std::string(fn) + " : the parent communicator is not initialized");
  return ncclSuccess;
}

// The child, initialized: `name` names its own splits' rendezvous.
ncclResult_t make_child(ncclComm* parent, int nranks, int rank, const std::string& name, const InitOptions& o,
                        ncclComm_t* newcomm) {
  ncclComm* c = new_comm(nranks, rank, parent->device, o);
  c->id = parent->id;
  c->name = name;
  c->parent = parent;
  return hand_over(c, finish_init(c), newcomm);
}

}  // namespace
}  // namespace sim::nccl

using namespace sim::nccl;

// Every rank of the parent calls it (NCCL_SPLIT_NOCOLOR for those in no new
// communicator); ranks of one color are ordered by key, then parent rank
// (init.cc commGetSplitInfo). The simulation meets the parent's ranks in a
// rendezvous of its own, named after the parent's and the split's sequence.
NCCL_SIM_API(ncclResult_t, CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) {
  if (ncclResult_t rc = check_parent(comm, newcomm, "CommSplit")) return rc;
  *newcomm = nullptr;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(comm, ncclInvalidArgument, "CommSplit : invalid color " + std::to_string(color));
  InitOptions o;
  if (ncclResult_t rc = read_config(config, comm, &o)) return rc;
  const std::string name = comm->name + "-s" + std::to_string(++comm->splits);
  const Outcome out =
      meet(name, comm->id.creator, comm->id.creator_start, comm->nranks, Member{comm->rank, comm->device, color, key, 0},
           &comm->abort);
  if (out.rc != ncclSuccess) return fail(comm, out.rc, out.why);
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::vector<Member> mine;
  for (const Member& m : out.members)
    if (m.color == color) mine.push_back(m);
  std::stable_sort(mine.begin(), mine.end(), [](const Member& a, const Member& b) { return a.key < b.key; });
  int rank = 0;
  while (mine[rank].rank != comm->rank) ++rank;
  return make_child(comm, static_cast<int>(mine.size()), rank, name + "-c" + std::to_string(color), o, newcomm);
}

// No rendezvous is needed: every remaining rank knows the new order (the
// excluded ranks removed, the others closing the gaps).
NCCL_SIM_API(ncclResult_t, CommShrink, (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                        ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags)) {
  if (ncclResult_t rc = check_parent(comm, newcomm, "CommShrink")) return rc;
  *newcomm = nullptr;
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr) ||
      excludeRanksCount >= comm->nranks || (shrinkFlags & ~1) != 0)
    return fail(comm, ncclInvalidArgument, "CommShrink : invalid excludeRanksList, excludeRanksCount or shrinkFlags");
  std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
  std::sort(excluded.begin(), excluded.end());
  if (std::binary_search(excluded.begin(), excluded.end(), comm->rank))
    return fail(comm, ncclInvalidArgument, "CommShrink : rank " + std::to_string(comm->rank) + " is excluded");
  const int below = static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), comm->rank) - excluded.begin());
  InitOptions o;
  if (ncclResult_t rc = read_config(config, comm, &o)) return rc;
  const std::string name = comm->name + "-k" + std::to_string(++comm->splits);
  return make_child(comm, comm->nranks - excludeRanksCount, comm->rank - below, name, o, newcomm);
}

// Operations complete at once: nothing is in flight to flush.
NCCL_SIM_API(ncclResult_t, CommFinalize, (ncclComm_t comm)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommFinalize : comm argument is invalid");
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommDestroy, (ncclComm_t comm)) {
  if (comm == nullptr) return ncclSuccess;  // init.cc: a NULL communicator is a no-op
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommDestroy : comm argument is invalid");
  delete_comm(comm);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommAbort, (ncclComm_t comm)) {
  if (comm == nullptr) return ncclSuccess;
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommAbort : comm argument is invalid");
  comm->abort.store(true);
  delete_comm(comm);
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "CommRevoke : comm argument is invalid");
  if (revokeFlags != 0) return fail(comm, ncclInvalidArgument, "CommRevoke : revokeFlags must be 0");
  return ncclSuccess;
}
