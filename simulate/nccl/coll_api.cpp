// NCCL's communication API over the shapes of collectives.cpp.
#include "nccl/api.h"
#include "nccl/collectives.h"

using namespace sim::nccl;

NCCL_SIM_API(ncclResult_t, AllReduce, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t)) {
  return run_collective(Coll::AllReduce, "AllReduce", sendbuff, recvbuff, count, datatype, op, -1, comm, true);
}

NCCL_SIM_API(ncclResult_t, Reduce, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t)) {
  return run_collective(Coll::Reduce, "Reduce", sendbuff, recvbuff, count, datatype, op, root, comm, true);
}

NCCL_SIM_API(ncclResult_t, Broadcast, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t)) {
  return run_collective(Coll::Broadcast, "Broadcast", sendbuff, recvbuff, count, datatype, -1, root, comm, false);
}

// The in-place legacy form: ncclBroadcast(buff, buff, ...).
NCCL_SIM_API(ncclResult_t, Bcast, (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t)) {
  return run_collective(Coll::Broadcast, "Bcast", buff, buff, count, datatype, -1, root, comm, false);
}

NCCL_SIM_API(ncclResult_t, AllGather, (const void* sendbuff, void* recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t)) {
  return run_collective(Coll::AllGather, "AllGather", sendbuff, recvbuff, sendcount, datatype, -1, -1, comm, true);
}

NCCL_SIM_API(ncclResult_t, ReduceScatter, (const void* sendbuff, void* recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t)) {
  return run_collective(Coll::ReduceScatter, "ReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, -1, comm,
                        true);
}

NCCL_SIM_API(ncclResult_t, AlltoAll, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclComm_t comm, cudaStream_t)) {
  return run_all_to_all("AlltoAll", sendbuff, recvbuff, count, datatype, comm);
}

NCCL_SIM_API(ncclResult_t, Gather, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t)) {
  return run_rooted("Gather", sendbuff, recvbuff, count, datatype, root, comm, true);
}

NCCL_SIM_API(ncclResult_t, Scatter, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t)) {
  return run_rooted("Scatter", sendbuff, recvbuff, count, datatype, root, comm, false);
}

NCCL_SIM_API(ncclResult_t, Send, (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t)) {
  return run_p2p("Send", sendbuff, count, datatype, peer, comm, true);
}

NCCL_SIM_API(ncclResult_t, Recv, (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t)) {
  return run_p2p("Recv", recvbuff, count, datatype, peer, comm, false);
}

NCCL_SIM_API(ncclResult_t, GroupStart, ()) { return group_start(); }

NCCL_SIM_API(ncclResult_t, GroupEnd, ()) { return group_end(); }

NCCL_SIM_API(ncclResult_t, RedOpCreatePreMulSum, (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype,
                                                  ncclScalarResidence_t residence, ncclComm_t comm)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "RedOpCreatePreMulSum : comm argument is invalid");
  if (op == nullptr || scalar == nullptr || datatype < 0 || datatype >= ncclNumTypes ||
      (residence != ncclScalarDevice && residence != ncclScalarHostImmediate))
    return fail(comm, ncclInvalidArgument, "RedOpCreatePreMulSum : invalid argument");
  return create_op(op, comm);
}

NCCL_SIM_API(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "ncclRedOpDestroy : comm argument is invalid");
  if (op >= 0 && op < ncclNumOps)
    return fail(comm, ncclInvalidArgument, "ncclRedOpDestroy : operator is a builtin.");
  if (!destroy_op(op, comm))
    return fail(comm, ncclInvalidArgument, "ncclRedOpDestroy :  operator is garbage.");
  return ncclSuccess;
}
