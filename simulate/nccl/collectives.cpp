// The collectives and point-to-point calls, group calls and reduction ops.
// Nothing is computed and nothing waits for the other ranks (kernels are not
// run on a simulated card): a call checks its arguments as NCCL's argcheck.cc
// does, makes the connections it needs (comm.h connect), leaves in small
// buffers what it would if every rank sent what this one sent
// (symmetric_data.h), and returns.
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "nccl/collectives.h"

namespace sim::nccl {
namespace {

// Group calls nest per thread (group.cc ncclGroupDepth is thread-local); the
// connections asked for inside a group are made at the outermost
// ncclGroupEnd.
thread_local int t_group_depth = 0;
thread_local std::vector<std::tuple<ncclComm*, ConnectKind, int>> t_pending;

// User reduction ops (ncclRedOpCreatePreMulSum): values from ncclNumOps up.
std::mutex g_ops_mu;
std::set<std::pair<const ncclComm*, int>>* g_ops = new std::set<std::pair<const ncclComm*, int>>();
int g_next_op = ncclNumOps;

ncclResult_t check_comm(ncclComm* comm, const char* fn) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, std::string(fn) + " : comm argument is invalid");
  const int state = comm->state.load();
  if (state == ncclInProgress)
    return fail(comm, ncclInvalidUsage, std::string(fn) + " : the communicator is still being initialized");
  if (state != ncclSuccess)
    return fail(comm, static_cast<ncclResult_t>(state), std::string(fn) + " : the communicator is in error");
  return ncclSuccess;
}

bool user_op(const ncclComm* comm, int op) {
  std::lock_guard<std::mutex> lock(g_ops_mu);
  return g_ops->count({comm, op}) != 0;
}

ncclResult_t check_type_op(ncclComm* comm, const char* fn, ncclDataType_t type, int op) {
  if (type < 0 || type >= ncclNumTypes)
    return fail(comm, ncclInvalidArgument, std::string(fn) + " : invalid type " + std::to_string(type));
  if (op >= 0 && op < ncclNumOps) return ncclSuccess;
  if (op != -1 && user_op(comm, op)) return ncclSuccess;
  if (op == -1) return ncclSuccess;  // the call takes no op
  return fail(comm, ncclInvalidArgument, std::string(fn) + " : invalid reduction operation " + std::to_string(op));
}

ncclResult_t check_buffers(ncclComm* comm, const char* fn, const void* send, const void* recv, size_t count,
                           bool needs_send, bool needs_recv) {
  if (count == 0) return ncclSuccess;
  if (needs_send && send == nullptr)
    return fail(comm, ncclInvalidArgument, std::string(fn) + " : sendbuff argument is NULL");
  if (needs_recv && recv == nullptr)
    return fail(comm, ncclInvalidArgument, std::string(fn) + " : recvbuff argument is NULL");
  return ncclSuccess;
}

ncclResult_t check_rank(ncclComm* comm, const char* fn, const char* what, int r) {
  if (r < 0 || r >= comm->nranks)
    return fail(comm, ncclInvalidArgument, std::string(fn) + " : invalid " + what + " " + std::to_string(r));
  return ncclSuccess;
}

ncclResult_t need(ncclComm* comm, ConnectKind kind, int peer) {
  if (t_group_depth > 0) {
    t_pending.emplace_back(comm, kind, peer);
    return ncclSuccess;
  }
  return connect(comm, kind, peer);
}

// A collective on the ring: one shape for all of them.
ncclResult_t collective(const char* fn, const void* send, void* recv, size_t count, ncclDataType_t type, int op,
                        int root, ncclComm* comm, bool needs_send) {
  if (ncclResult_t rc = check_comm(comm, fn)) return rc;
  if (ncclResult_t rc = check_type_op(comm, fn, type, op)) return rc;
  if (root != -1)
    if (ncclResult_t rc = check_rank(comm, fn, "root", root)) return rc;
  if (ncclResult_t rc = check_buffers(comm, fn, send, recv, count, needs_send, true)) return rc;
  return count == 0 ? ncclSuccess : need(comm, kRing, -1);
}

// AlltoAll, Gather and Scatter are grouped sends and receives in NCCL 2.30
// (collectives.cc): connections to every peer.
ncclResult_t all_peers(ncclComm* comm, bool send, bool recv) {
  for (int p = 0; p < comm->nranks; ++p) {
    if (send)
      if (ncclResult_t rc = need(comm, kSend, p)) return rc;
    if (recv)
      if (ncclResult_t rc = need(comm, kRecv, p)) return rc;
  }
  return ncclSuccess;
}

ncclResult_t p2p(const char* fn, const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm* comm,
                 ConnectKind kind) {
  if (ncclResult_t rc = check_comm(comm, fn)) return rc;
  if (ncclResult_t rc = check_type_op(comm, fn, type, -1)) return rc;
  if (ncclResult_t rc = check_rank(comm, fn, "peer", peer)) return rc;
  if (ncclResult_t rc = check_buffers(comm, fn, buf, buf, count, true, true)) return rc;
  return need(comm, kind, peer);
}

}  // namespace

ncclResult_t group_start() {
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t group_end() {
  if (t_group_depth == 0) return fail(nullptr, ncclInvalidUsage, "ncclGroupEnd: not in a group call.");
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<std::tuple<ncclComm*, ConnectKind, int>> pending;
  pending.swap(t_pending);
  ncclResult_t first = ncclSuccess;
  for (const auto& p : pending) {
    if (!is_comm(std::get<0>(p))) continue;
    const ncclResult_t rc = connect(std::get<0>(p), std::get<1>(p), std::get<2>(p));
    if (first == ncclSuccess) first = rc;
  }
  return first;
}

ncclResult_t create_op(ncclRedOp_t* op, ncclComm* comm) {
  std::lock_guard<std::mutex> lock(g_ops_mu);
  *op = static_cast<ncclRedOp_t>(g_next_op++);
  g_ops->insert({comm, static_cast<int>(*op)});
  return ncclSuccess;
}

bool destroy_op(ncclRedOp_t op, ncclComm* comm) {
  std::lock_guard<std::mutex> lock(g_ops_mu);
  return g_ops->erase({comm, static_cast<int>(op)}) != 0;
}

ncclResult_t run_collective(Coll kind, const char* fn, const void* send, void* recv, size_t count,
                            ncclDataType_t type, int op, int root, ncclComm* comm, bool needs_send) {
  const ncclResult_t rc = collective(fn, send, recv, count, type, op, root, comm, needs_send);
  if (rc == ncclSuccess) symmetric_result(kind, send, recv, count, type, op, root, comm->rank, comm->nranks);
  return rc;
}

ncclResult_t run_p2p(const char* fn, const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm* comm,
                     bool send) {
  const ncclResult_t rc = p2p(fn, buf, count, type, peer, comm, send ? kSend : kRecv);
  if (rc == ncclSuccess && !send)
    symmetric_result(Coll::Other, nullptr, const_cast<void*>(buf), count, type, -1, -1, comm->rank, comm->nranks);
  return rc;
}

ncclResult_t run_all_to_all(const char* fn, const void* send, void* recv, size_t count, ncclDataType_t type,
                            ncclComm* comm) {
  if (ncclResult_t rc = check_comm(comm, fn)) return rc;
  if (ncclResult_t rc = check_type_op(comm, fn, type, -1)) return rc;
  if (ncclResult_t rc = check_buffers(comm, fn, send, recv, count, true, true)) return rc;
  if (count == 0) return ncclSuccess;
  const ncclResult_t rc = all_peers(comm, true, true);
  if (rc == ncclSuccess)
    symmetric_result(Coll::Other, nullptr, recv, count * comm->nranks, type, -1, -1, comm->rank, comm->nranks);
  return rc;
}

// Gather: every rank sends to the root, which receives from all; Scatter the
// other way.
ncclResult_t run_rooted(const char* fn, const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                        ncclComm* comm, bool gather) {
  if (ncclResult_t rc = check_comm(comm, fn)) return rc;
  if (ncclResult_t rc = check_type_op(comm, fn, type, -1)) return rc;
  if (ncclResult_t rc = check_rank(comm, fn, "root", root)) return rc;
  const bool is_root = comm->rank == root;
  if (ncclResult_t rc = check_buffers(comm, fn, send, recv, count, gather || is_root, !gather || is_root)) return rc;
  if (count == 0) return ncclSuccess;
  const ncclResult_t rc = is_root ? all_peers(comm, !gather, gather) : need(comm, gather ? kSend : kRecv, root);
  if (rc == ncclSuccess && (is_root || !gather))  // what it receives: the root's gather, every rank's scatter
    symmetric_result(Coll::Other, nullptr, recv, gather ? count * comm->nranks : count, type, -1, -1, comm->rank,
                     comm->nranks);
  return rc;
}

}  // namespace sim::nccl
