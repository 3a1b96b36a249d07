// The simulated communicator: who it is (rank, size, device), its state
// (ncclCommGetAsyncError), its device memory (nccl/plan.h) and its proxy
// thread, which takes the connections' buffers as NCCL's proxy service
// thread does (proxy.cc ncclProxyService; transport/p2p.cc
// p2pSendProxySetup / p2pRecvProxySetup run there): the recorder sees those
// allocations on a thread of NCCL's, with no Python frame.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nccl/device_memory.h"
#include "nccl/plan.h"
#include "nccl/rendezvous.h"
#include "nccl/types.h"

struct ncclComm {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  bool blocking = true;
  bool split_share = false;
  std::string name;            // the rendezvous table's name: splits derive theirs from it
  sim::nccl::IdFields id{};
  sim::nccl::Plan plan;
  std::atomic<int> state{ncclInProgress};  // ncclCommGetAsyncError
  std::atomic<bool> abort{false};
  std::atomic<uint64_t> splits{0};
  ncclComm* parent = nullptr;  // splitShare: connections are the parent's
  std::thread init_thread;     // nonblocking init

  std::mutex mu;  // what follows
  // ncclMemPersist (devCommSetup's) and ncclMemOffload (the channels'
  // structures and the connections' buffers): ncclCommMemStats' two kinds.
  std::vector<sim::nccl::DeviceBuffer> persist;
  std::vector<sim::nccl::DeviceBuffer> conns;
  bool ring_connected = false;
  std::set<int> send_peers, recv_peers;           // p2p connections made
  std::thread proxy;
  std::condition_variable proxy_cv;
  std::vector<std::pair<int, int>> proxy_jobs;    // (kind, peer) waiting for the proxy thread
  bool proxy_stop = false;
  int proxy_pending = 0;
  ncclResult_t proxy_result = ncclSuccess;
};

namespace sim::nccl {

// Communicators this process made and has not destroyed: a handle that is
// not one of them is refused (ncclInvalidArgument) instead of read.
void register_comm(ncclComm* c);
void unregister_comm(ncclComm* c);
bool is_comm(const ncclComm* c);

// The plan for a communicator on `device` with the config's CTA bounds.
Plan plan_for(int device, int min_ctas, int max_ctas);

// Takes init's structures (plan.h) on the communicator's device.
ncclResult_t alloc_init_memory(ncclComm* c);

// What a collective (ring) or a send/recv to `peer` needs connected; the
// buffers are taken by the proxy thread, the caller waits. Inside a group
// the connections are made at ncclGroupEnd (group.cc ncclCollPreconnect and
// ncclP2PPreconnectFunc run from the group's launch).
enum ConnectKind { kRing = 0, kSend = 1, kRecv = 2 };
ncclResult_t connect(ncclComm* c, ConnectKind kind, int peer);

// Frees every buffer, stops the proxy thread.
void release_memory(ncclComm* c);

// Bytes of a ncclCommMemStats figure.
uint64_t mem_stat(ncclComm* c, ncclCommMemStat_t stat);

// Records why a call failed (ncclGetLastError: one message for the process,
// as NCCL's ncclLastError) and, when NCCL_DEBUG is set, says it on stderr as
// NCCL's WARN does ("host:pid:tid [dev] NCCL WARN ..."). Returns rc.
ncclResult_t fail(ncclComm* c, ncclResult_t rc, const std::string& why);

}  // namespace sim::nccl
