// What a collective leaves in small buffers (docs/simulate-ranks.md, "What
// collectives leave in memory").
//
// Collectives move no data between the ranks' processes. But a program reads
// back what small collectives gathered, and decides on it: DDP's start-up
// allgathers every rank's parameter count and broadcasts the shapes
// (torch/csrc/distributed/c10d/reducer.cpp, verify_params_across_processes),
// its reducer broadcasts its bucket indices (sync_bucket_indices). The
// simulated runtime keeps what small copies put into device memory until the
// next kernel launch (simulate/runtime/kept_bytes.h); over those bytes a
// collective leaves what it would leave if every rank had sent what this rank
// sent: an all-gather repeats this rank's contribution for every rank, a
// broadcast leaves the buffer as this rank has it, a sum is the contribution
// times the ranks, a min, max or average the contribution itself. Where that
// cannot be said (send and receive, all-to-all, gather and scatter, a product
// or user op, half-precision sums, buffers past the runtime's bound), the
// receive buffer reads as zeros, as every buffer did before.
#pragma once

#include "nccl/types.h"

namespace sim::nccl {

enum class Coll { AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, Other };

// After a successful call: writes the receive buffer's kept bytes (`count` as
// the call has it: per rank for AllGather and ReduceScatter). No-op when the
// runtime keeps nothing, or is not the simulated one.
void symmetric_result(Coll kind, const void* send, void* recv, size_t count, ncclDataType_t type, int op, int root,
                      int rank, int nranks);

}  // namespace sim::nccl
