// The shapes of NCCL's communication calls (collectives.cpp); the API
// functions (coll_api.cpp) are each one line over them.
#pragma once

#include "nccl/comm.h"
#include "nccl/symmetric_data.h"

namespace sim::nccl {

// op -1: the call takes no reduction; root -1: it has no root. `kind`: what
// it leaves in small buffers (symmetric_data.h).
ncclResult_t run_collective(Coll kind, const char* fn, const void* send, void* recv, size_t count,
                            ncclDataType_t type, int op, int root, ncclComm* comm, bool needs_send);
ncclResult_t run_p2p(const char* fn, const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm* comm,
                     bool send);
ncclResult_t run_all_to_all(const char* fn, const void* send, void* recv, size_t count, ncclDataType_t type,
                            ncclComm* comm);
ncclResult_t run_rooted(const char* fn, const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                        ncclComm* comm, bool gather);

ncclResult_t group_start();
ncclResult_t group_end();

ncclResult_t create_op(ncclRedOp_t* op, ncclComm* comm);
bool destroy_op(ncclRedOp_t op, ncclComm* comm);

}  // namespace sim::nccl
