#include "nccl/comm.h"

#include <pthread.h>

#include <cstdio>
#include <unordered_set>

namespace sim::nccl {
namespace {

std::mutex g_comms_mu;
std::unordered_set<const ncclComm*>* g_comms = new std::unordered_set<const ncclComm*>();

ncclResult_t take(ncclComm* c, uint64_t bytes, std::vector<DeviceBuffer>* into) {
  DeviceBuffer b;
  switch (alloc_buffer(c->device, bytes, c->plan.cumem, &b)) {
    case AllocResult::kOk:
      into->push_back(b);
      return ncclSuccess;
    case AllocResult::kOutOfMemory:
      // include/alloc.h: "Failed to CUDA calloc %ld bytes", ncclUnhandledCudaError.
      return fail(c, ncclUnhandledCudaError, "Failed to CUDA calloc " + std::to_string(bytes) +
                                                 " bytes (out of memory on device " + std::to_string(c->device) + ")");
    case AllocResult::kNoDriver:
      return fail(c, ncclUnhandledCudaError, "no CUDA driver (libcuda.so.1) to allocate from");
    case AllocResult::kFailed:
      break;
  }
  return fail(c, ncclUnhandledCudaError, "the CUDA driver refused an allocation of " + std::to_string(bytes) + " bytes");
}

// One connection job, on the proxy thread (c->mu held).
ncclResult_t run_job(ncclComm* c, ConnectKind kind, int peer) {
  const uint64_t recv = recv_conn_bytes(c->plan);
  const uint64_t send = send_conn_bytes(c->plan);
  if (kind == kRing) {
    if (c->ring_connected || c->nranks < 2) return ncclSuccess;
    for (int ch = 0; ch < c->plan.channels; ++ch) {
      if (ncclResult_t rc = take(c, recv, &c->conns)) return rc;
      if (ncclResult_t rc = take(c, send, &c->conns)) return rc;
    }
    c->ring_connected = true;
    return ncclSuccess;
  }
  std::set<int>& done = kind == kSend ? c->send_peers : c->recv_peers;
  if (peer == c->rank || done.count(peer) != 0) return ncclSuccess;  // to itself: a local copy
  for (int ch = 0; ch < c->plan.p2p_per_peer; ++ch)
    if (ncclResult_t rc = take(c, kind == kSend ? send : recv, &c->conns)) return rc;
  done.insert(peer);
  return ncclSuccess;
}

void proxy_main(ncclComm* c) {
  char name[16];
  snprintf(name, sizeof name, "NCCL Service %2u", static_cast<unsigned>(c->device) % 100u);  // proxy.cc's thread name
  pthread_setname_np(pthread_self(), name);
  bind_device(c->device);
  std::unique_lock<std::mutex> lock(c->mu);
  for (;;) {
    c->proxy_cv.wait(lock, [c] { return c->proxy_stop || !c->proxy_jobs.empty(); });
    if (c->proxy_jobs.empty()) return;
    const auto job = c->proxy_jobs.front();
    c->proxy_jobs.erase(c->proxy_jobs.begin());
    const ncclResult_t rc = run_job(c, static_cast<ConnectKind>(job.first), job.second);
    if (rc != ncclSuccess && c->proxy_result == ncclSuccess) c->proxy_result = rc;
    --c->proxy_pending;
    c->proxy_cv.notify_all();
  }
}

}  // namespace

void register_comm(ncclComm* c) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_comms->insert(c);
}

void unregister_comm(ncclComm* c) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_comms->erase(c);
}

bool is_comm(const ncclComm* c) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  return c != nullptr && g_comms->count(c) != 0;
}

ncclResult_t alloc_init_memory(ncclComm* c) {
  std::lock_guard<std::mutex> lock(c->mu);
  const std::vector<uint64_t> sizes = init_allocations(c->plan, c->nranks, c->split_share);
  for (size_t i = 0; i < sizes.size(); ++i)  // the first two are devCommSetup's
    if (ncclResult_t rc = take(c, sizes[i], i < 2 ? &c->persist : &c->conns)) return rc;
  return ncclSuccess;
}

ncclResult_t connect(ncclComm* c, ConnectKind kind, int peer) {
  if (c->split_share && c->parent != nullptr && is_comm(c->parent)) return ncclSuccess;  // the parent's connections
  if (kind == kRing && (!c->plan.runtime_connect || c->nranks < 2)) return ncclSuccess;  // connected at init
  std::unique_lock<std::mutex> lock(c->mu);
  if (kind == kRing && c->ring_connected) return ncclSuccess;
  if (!c->proxy.joinable()) c->proxy = std::thread(proxy_main, c);
  c->proxy_jobs.emplace_back(kind, peer);
  ++c->proxy_pending;
  c->proxy_cv.notify_all();
  c->proxy_cv.wait(lock, [c] { return c->proxy_pending == 0; });
  const ncclResult_t rc = c->proxy_result;
  c->proxy_result = ncclSuccess;
  return rc;
}

void release_memory(ncclComm* c) {
  std::thread proxy;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    c->proxy_stop = true;
    c->proxy_cv.notify_all();
    proxy.swap(c->proxy);
  }
  if (proxy.joinable()) proxy.join();
  std::lock_guard<std::mutex> lock(c->mu);
  for (const DeviceBuffer& b : c->conns) free_buffer(b);
  for (const DeviceBuffer& b : c->persist) free_buffer(b);
  c->conns.clear();
  c->persist.clear();
}

uint64_t mem_stat(ncclComm* c, ncclCommMemStat_t stat) {
  std::lock_guard<std::mutex> lock(c->mu);
  uint64_t persist = 0, conns = 0;
  for (const DeviceBuffer& b : c->persist) persist += b.size;
  for (const DeviceBuffer& b : c->conns) conns += b.size;
  switch (stat) {
    case ncclStatGpuMemSuspend: return conns;
    case ncclStatGpuMemSuspended: return 0;
    case ncclStatGpuMemPersist: return persist;
    case ncclStatGpuMemTotal: return persist + conns;
  }
  return 0;
}

}  // namespace sim::nccl
