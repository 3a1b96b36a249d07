// Shared by the self-tests of the simulated libnccl.so.2 (selftest_nccl*.cpp):
// NCCL's functions (simulate/nccl/api.h), the simulated driver's probes, and
// NCCL 2.30.7's figures written out from its source (simulate/nccl/plan.h
// cites where each comes from) so that the library is checked against them,
// not against itself.
#pragma once

#include <cstdint>

#include "nccl/api.h"
#include "selftest_check.h"

constexpr uint64_t kMiB = 1ull << 20;

// What one communicator takes on a card: channels, channels per peer.
struct Expect {
  int channels;      // ring channels
  int p2p_channels;  // channels initialized at init (a power of two)
  int per_peer;      // send/recv channels per peer
  uint64_t recv;     // one receive connection's buffer
  uint64_t send;     // one send connection's buffer
  // devCommSetup's two buffers and three per initialized channel, a 2 MiB granule each.
  uint64_t init(bool shared = false) const { return (2 + p2p_channels * (shared ? 2 : 3)) * 2 * kMiB; }
  uint64_t ring() const { return channels * (recv + send); }
};

// H100 SXM (18 NVLinks): 24 ring channels, 32 initialized, 32 per peer, P2P
// write: 10 MiB received, 2 MiB sent (NVIDIA/nccl#1685's ALLOC log).
constexpr Expect kH100{24, 32, 32, 10 * kMiB, 2 * kMiB};
// P2P read (NCCL's default between A100s over NVLink; NCCL_P2P_READ_ENABLE=1
// elsewhere): the SIMPLE buffer on the sender.
constexpr Expect kH100Read{24, 32, 32, 6 * kMiB, 6 * kMiB};
// PCIe (the Fake GPU, L4...): 2 channels.
constexpr Expect kPcie{2, 2, 2, 10 * kMiB, 2 * kMiB};

// NCCL_CONFIG_INITIALIZER (nccl.h): every attribute undefined.
inline ncclConfig_t config_initializer() {
  ncclConfig_t c;
  c.size = sizeof c;
  c.magic = NCCL_API_MAGIC;
  c.version = 23007;
  c.netName = c.commName = nullptr;
  c.blocking = c.cgaClusterSize = c.minCTAs = c.maxCTAs = c.splitShare = c.trafficClass = c.collnetEnable =
      c.CTAPolicy = c.shrinkShare = c.nvlsCTAs = c.nChannelsPerNetPeer = c.nvlinkCentricSched = c.graphUsageMode =
          c.numRmaCtx = c.maxP2pPeers = c.graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
  return c;
}

// The simulated driver (dlopen("libcuda.so.1")).
uint64_t live_bytes(int device);         // fakegpu_cuda_live_bytes
bool set_device(int device);             // the primary context current on this thread
uint64_t free_bytes(int device);         // cuMemGetInfo's free on `device`

// The multi-process cases (selftest_nccl_ranks.cpp).
void test_ranks(const Expect& e);
