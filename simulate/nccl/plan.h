// How much device memory a communicator of NVIDIA's NCCL 2.30.7 takes, and
// when: the figures of its source (github.com/NVIDIA/nccl, tag v2.30.7-1,
// the version of the nvidia-nccl-cu13 wheel PyTorch 2.14.1 installs), for a
// job on one machine whose GPUs talk over NVLink (NVSwitch) or PCIe.
//
// At init (ncclCommInitRank*, ncclCommSplit): src/init.cc devCommSetup takes
// two buffers (the device communicator with its channels, rankToLocalRank)
// and src/channel.cc initChannel three per channel (the shared devPeers, the
// channel's devPeers, devRingUserRanks), for every one of the p2pnChannels
// channels (graph/paths.cc ncclTopoComputeP2pChannels initializes the ones
// beyond nChannels). With cuMem (NCCL_CUMEM_ENABLE's default, misc/cudawrap.cc)
// each is its own cuMemCreate of at least the driver's granularity
// (include/alloc.h ncclCuMemAlloc), however small the structure.
//
// At the first operation that needs them (NCCL_RUNTIME_CONNECT=1, the
// default, init.cc): a collective connects the ring on every channel
// (transport/generic.cc ncclTransportRingConnect: a receive connection from
// the previous rank, a send connection to the next); a send or receive
// connects p2pnChannelsPerPeer channels to that peer. Each connection's
// buffer is transport/p2p.cc's: the receiver's holds ncclRecvMem and the LL
// and LL128 buffers and, when writing, SIMPLE; the sender's holds ncclSendMem
// and, when reading, SIMPLE; each rounded up to CUDA_IPC_MIN (2 MiB). P2P
// read is NCCL's default only between two GPUs of compute capability 8.0
// joined by NVLink (graph/paths.cc ncclTopoCheckP2p). On 8 H100s NCCL's ALLOC
// log shows exactly these two sizes, 10485760 and 2097152 bytes, 32 channels
// per peer for an all-to-all (NVIDIA/nccl#1685).
//
// Not modeled: tree connections (an AllReduce of small messages; on one
// machine AllReduce of training buckets, AllGather, ReduceScatter, Broadcast
// and Reduce run on the ring), NVLS (the simulated card reports no multicast,
// so NCCL would not set it up), CollNet and the network transport.
#pragma once

#include <cstdint>
#include <vector>

namespace sim::nccl {

enum Proto { kLL = 0, kLL128 = 1, kSimple = 2, kNumProtos = 3 };

struct Plan {
  int channels = 2;          // comm->nChannels (ring channels after ncclTopoPostset)
  int p2p_channels = 2;      // comm->p2pnChannels: channels initialized at init
  int p2p_per_peer = 2;      // comm->p2pnChannelsPerPeer
  bool p2p_read = false;     // SIMPLE buffer on the sender
  uint64_t buff[kNumProtos] = {};  // comm->buffSizes
  bool cumem = true;         // ncclCuMemEnable()
  bool runtime_connect = true;
  uint64_t granularity = 2ull << 20;  // cuMemGetAllocationGranularity(MINIMUM)
};

// The card's links as NCCL's topology would see them.
struct Links {
  int nvlinks = 0;       // NVLinks per GPU to the NVSwitches; 0: PCIe
  int cc = 90;           // compute capability, major * 10 + minor
};

// What the environment says (NCCL's variables, read by the caller).
struct Env {
  int64_t buffsize = -2, ll_buffsize = -2, ll128_buffsize = -2;  // NCCL_BUFFSIZE...; -2: unset
  int min_channels = -2, max_channels = -2;  // NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS
  int cumem = -2;                            // NCCL_CUMEM_ENABLE
  int runtime_connect = 1;                   // NCCL_RUNTIME_CONNECT
  int p2p_read = -2;                         // NCCL_P2P_READ_ENABLE
};

// The ring channel count NCCL's search finds for one GPU's links
// (graph/search.cc ncclTopoCompute and ncclTopoDupChannels; graph/connect.cc
// ncclTopoPostset doubles it), before NCCL_MIN/MAX_NCHANNELS.
int ring_channels(const Links& links);

Plan make_plan(const Links& links, const Env& env, int min_ctas, int max_ctas);

// Bytes of one connection's buffer (before the driver's granularity).
uint64_t recv_conn_bytes(const Plan& p);
uint64_t send_conn_bytes(const Plan& p);

// What an allocation of `bytes` takes from the device (cuMem: the
// granularity; NCCL_CUMEM_ENABLE=0: cudaMalloc's exact size).
uint64_t device_bytes(const Plan& p, uint64_t bytes);

// The sizes NCCL asks for at init, one per allocation, for a communicator
// of `nranks` ranks (sharing_parent: ncclCommSplit with splitShare, which
// reuses the parent's shared devPeers).
std::vector<uint64_t> init_allocations(const Plan& p, int nranks, bool sharing_parent);
// What they take from the device.
uint64_t init_bytes(const Plan& p, int nranks, bool sharing_parent);

constexpr int kMaxChannels = 64;  // MAXCHANNELS, include/device.h

}  // namespace sim::nccl
