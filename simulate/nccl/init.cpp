// Communicator creation: ncclGetUniqueId, ncclCommInitRank(Config,
// Scalable), ncclCommInitAll, and the communicator's queries.
#include <cstring>

#include "nccl/api.h"
#include "nccl/comm.h"
#include "nccl/init_internal.h"

namespace sim::nccl {
namespace {

template <typename T>
bool has_field(const ncclConfig_t* c, const T& field) {
  return reinterpret_cast<const char*>(&field) + sizeof field <= reinterpret_cast<const char*>(c) + c->size;
}

}  // namespace

ncclResult_t read_config(const ncclConfig_t* config, const ncclComm* parent, InitOptions* out) {
  if (parent != nullptr) {
    out->blocking = parent->blocking;
    out->split_share = parent->split_share;
  }
  if (config == nullptr) return ncclSuccess;
  if (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int) ||
      config->size > 4096)
    return fail(nullptr, ncclInvalidArgument,
                "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER (magic or size)");
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1)
      return fail(nullptr, ncclInvalidArgument,
                  "Invalid config blocking attribute value " + std::to_string(config->blocking));
    out->blocking = config->blocking == 1;
  }
  if (has_field(config, config->minCTAs)) out->min_ctas = config->minCTAs;
  if (has_field(config, config->maxCTAs)) out->max_ctas = config->maxCTAs;
  if (has_field(config, config->splitShare) && config->splitShare != NCCL_CONFIG_UNDEF_INT)
    out->split_share = config->splitShare == 1;
  return ncclSuccess;
}

ncclComm* new_comm(int nranks, int rank, int device, const InitOptions& o) {
  auto* c = new ncclComm();
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->blocking = o.blocking;
  c->split_share = o.split_share;
  c->plan = plan_for(device, o.min_ctas, o.max_ctas);
  register_comm(c);
  return c;
}

void delete_comm(ncclComm* c) {
  if (c->init_thread.joinable()) {
    c->abort.store(true);
    c->init_thread.join();
  }
  release_memory(c);
  unregister_comm(c);
  delete c;
}

ncclResult_t hand_over(ncclComm* c, ncclResult_t rc, ncclComm_t* out) {
  if (rc != ncclSuccess) {
    delete_comm(c);
    return rc;
  }
  *out = c;
  return ncclSuccess;
}

ncclResult_t finish_init(ncclComm* c) {
  ncclResult_t rc = alloc_init_memory(c);
  // NCCL_RUNTIME_CONNECT=0, or without cuMem: the ring is connected at init.
  if (rc == ncclSuccess && !c->plan.runtime_connect && c->nranks > 1) {
    c->plan.runtime_connect = true;  // connect() makes it now
    rc = connect(c, kRing, -1);
    c->plan.runtime_connect = false;
  }
  c->state.store(rc);
  return rc;
}

namespace {

// The rendezvous and what follows it, on the caller's thread (blocking) or
// NCCL's init thread (nonblocking).
ncclResult_t meet_and_init(ncclComm* c) {
  const Outcome o = meet(c->name, c->id.creator, c->id.creator_start, c->nranks,
                         Member{c->rank, c->device, 0, 0, 0}, &c->abort);
  if (o.rc != ncclSuccess) {
    c->state.store(o.rc);
    return fail(c, o.rc, o.why);
  }
  // init.cc: "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx".
  for (const Member& m : o.members)
    if (m.rank != c->rank && m.device == c->device)
      return c->state.store(ncclInvalidUsage),
             fail(c, ncclInvalidUsage,
                  "Duplicate GPU detected : rank " + std::to_string(c->rank) + " and rank " + std::to_string(m.rank) +
                      " both on CUDA device " + std::to_string(c->device));
  return finish_init(c);
}

ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank, const ncclConfig_t* config) {
  if (out == nullptr) return fail(nullptr, ncclInvalidArgument, "CommInitRank : newcomm argument is NULL");
  *out = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(nullptr, ncclInvalidArgument,
                "Invalid rank requested : " + std::to_string(rank) + "/" + std::to_string(nranks));
  IdFields f{};
  if (id == nullptr || !read_unique_id(*id, &f))
    return fail(nullptr, ncclInvalidArgument, "the unique id was not made by ncclGetUniqueId");
  InitOptions o;
  if (ncclResult_t rc = read_config(config, nullptr, &o)) return rc;
  int device = 0;
  if (!current_device(&device))
    return fail(nullptr, ncclUnhandledCudaError, "cudaGetDevice failed: no current CUDA device");
  ncclComm* c = new_comm(nranks, rank, device, o);
  c->id = f;
  c->name = table_name(f, 0);
  if (!c->blocking) {
    *out = c;
    c->init_thread = std::thread([c] {
      bind_device(c->device);
      meet_and_init(c);
    });
    return ncclInProgress;
  }
  return hand_over(c, meet_and_init(c), out);
}

}  // namespace
}  // namespace sim::nccl

using namespace sim::nccl;

NCCL_SIM_API(ncclResult_t, GetUniqueId, (ncclUniqueId * out)) {
  if (out == nullptr) return fail(nullptr, ncclInvalidArgument, "GetUniqueId : out argument is NULL");
  prune_stale_tables();
  *out = make_unique_id();
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank)) {
  return init_rank(comm, nranks, &id, rank, nullptr);
}

NCCL_SIM_API(ncclResult_t, CommInitRankConfig,
             (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config)) {
  return init_rank(comm, nranks, &id, rank, config);
}

// Every rank passes the same ids in the same order: the first names the
// rendezvous (the others only spread NCCL's bootstrap over more roots).
NCCL_SIM_API(ncclResult_t, CommInitRankScalable,
             (ncclComm_t * comm, int nranks, int rank, int nId, ncclUniqueId* ids, ncclConfig_t* config)) {
  if (nId < 1 || ids == nullptr)
    return fail(nullptr, ncclInvalidArgument, "CommInitRankScalable : nId " + std::to_string(nId) + " or ids NULL");
  return init_rank(comm, nranks, &ids[0], rank, config);
}

// One process, one communicator per device, no rendezvous.
NCCL_SIM_API(ncclResult_t, CommInitAll, (ncclComm_t * comms, int ndev, const int* devlist)) {
  if (comms == nullptr || ndev < 1)
    return fail(nullptr, ncclInvalidArgument, "CommInitAll : comms NULL or ndev " + std::to_string(ndev));
  const ncclUniqueId id = make_unique_id();
  IdFields f{};
  read_unique_id(id, &f);
  for (int i = 0; i < ndev; ++i) {
    ncclComm* c = new_comm(ndev, i, devlist != nullptr ? devlist[i] : i, InitOptions{});
    c->id = f;
    c->name = table_name(f, 0) + "-d" + std::to_string(i);
    if (ncclResult_t rc = finish_init(c)) {
      for (int j = 0; j <= i; ++j) delete_comm(j < i ? comms[j] : c);
      return rc;
    }
    comms[i] = c;
  }
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError)) {
  if (!is_comm(comm)) return fail(nullptr, ncclInvalidArgument, "ncclGetAsyncError : comm argument is invalid");
  if (asyncError == nullptr) return fail(comm, ncclInvalidArgument, "ncclGetAsyncError : asyncError argument is NULL");
  *asyncError = static_cast<ncclResult_t>(comm->state.load());
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommCount, (const ncclComm_t comm, int* count)) {
  if (!is_comm(comm) || count == nullptr) return fail(nullptr, ncclInvalidArgument, "CommCount : invalid argument");
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int* device)) {
  if (!is_comm(comm) || device == nullptr) return fail(nullptr, ncclInvalidArgument, "CommCuDevice : invalid argument");
  *device = comm->device;
  return ncclSuccess;
}

NCCL_SIM_API(ncclResult_t, CommUserRank, (const ncclComm_t comm, int* rank)) {
  if (!is_comm(comm) || rank == nullptr) return fail(nullptr, ncclInvalidArgument, "CommUserRank : invalid argument");
  *rank = comm->rank;
  return ncclSuccess;
}
