#include "nccl/plan.h"

#include <algorithm>

namespace sim::nccl {
namespace {

// include/device.h: NCCL_STEPS 8; LL: NCCL_LL_LINES_PER_THREAD 8 x
// NCCL_LL_MAX_NTHREADS 512 x 16-byte lines; LL128: NCCL_LL128_ELEMS_PER_THREAD
// 120 x NCCL_LL128_MAX_NTHREADS 640 x 8 bytes; SIMPLE: DEFAULT_BUFFSIZE 4 MiB
// (init.cc computeBuffSizes).
constexpr uint64_t kSteps = 8;
constexpr uint64_t kDefaultLL = 8 * 512 * kSteps * 16;        // 524288
constexpr uint64_t kDefaultLL128 = 120 * 640 * kSteps * 8;    // 4915200
constexpr uint64_t kDefaultSimple = 1ull << 22;
// include/comm.h: ncclSendMem and ncclRecvMem are padded to MEM_ALIGN (4096);
// CUDA_IPC_MIN 2097152.
constexpr uint64_t kConnMem = 4096;
constexpr uint64_t kIpcMin = 2097152;
// Sizes of the structures of devCommSetup and initChannel (include/device.h:
// ncclDevCommAndChannels, ncclDevChannelPeer). They matter only with
// NCCL_CUMEM_ENABLE=0, where each is a cudaMalloc of its own size; with cuMem
// each takes one granule. Approximate: the structures' fields summed.
constexpr uint64_t kDevCommAndChannels = 64 * 1024;
constexpr uint64_t kDevChannelPeer = 656;

// graph/topo.h: the NVLink bandwidth NCCL assumes per link (GB/s).
double nvlink_bw(int cc) {
  if (cc >= 100) return 40.1;  // SM100_NVLINK_BW
  if (cc >= 90) return 20.6;   // SM90_NVLINK_BW
  if (cc == 86) return 12.0;   // SM86_NVLINK_BW
  return 20.0;                 // SM80 / SM70
}

// graph/search.cc: the speeds the intra-node search tries, fastest first.
const double kSpeeds[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
const double kSpeedsSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
const double kSpeedsSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};

uint64_t round_up(uint64_t v, uint64_t a) { return a == 0 ? v : (v + a - 1) / a * a; }

int pow2_up(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

int ring_channels(const Links& links) {
  // PCIe: one ring at the link's speed (12-24 GB/s, below ncclTopoDupChannels'
  // 25 GB/s), doubled by ncclTopoPostset.
  if (links.nvlinks <= 0) return 2;
  const double total = links.nvlinks * nvlink_bw(links.cc);
  const double* speeds = links.cc >= 100 ? kSpeedsSm100 : links.cc >= 90 ? kSpeedsSm90 : kSpeeds;
  const int nspeeds = links.cc >= 100 ? 12 : links.cc >= 90 ? 11 : 13;
  // Pass 1: the fastest speed the GPU's NVSwitch link carries, with as many
  // rings as fit (maxChannels = MAXCHANNELS / 2, init.cc).
  int i = 0;
  while (i < nspeeds - 1 && speeds[i] > total) ++i;
  const double speed = speeds[i];
  int n = std::min(static_cast<int>(total / speed), kMaxChannels / 2);
  if (n < 1) n = 1;
  // ncclTopoDupChannels.
  if (speed >= 25.0 && !(links.cc > 80 && speed < 50.0 && n > 4)) n = std::min(2 * n, kMaxChannels / 2);
  // ncclTopoPostset.
  return std::min(kMaxChannels, 2 * n);
}

Plan make_plan(const Links& links, const Env& env, int min_ctas, int max_ctas) {
  Plan p;
  int n = ring_channels(links);
  // connect.cc: min(NCCL_MAX_NCHANNELS, nChannels, maxCTAs), then copied up
  // to max(NCCL_MIN_NCHANNELS, minCTAs).
  if (env.max_channels > 0) n = std::min(n, env.max_channels);
  if (max_ctas > 0) n = std::min(n, max_ctas);
  n = std::max({n, env.min_channels, min_ctas, 1});
  p.channels = std::min(n, kMaxChannels);
  // paths.cc ncclTopoComputeP2pChannels / ncclTopoGetNchannels: 2 per
  // NVLink's worth of bandwidth to a peer (2 over PCIe), powers of two.
  p.p2p_channels = std::min(pow2_up(p.channels), kMaxChannels);
  const int per_peer = links.nvlinks > 0 ? 2 * std::max(1, links.nvlinks) : 2;
  p.p2p_per_peer = std::min(pow2_up(per_peer), p.p2p_channels);
  p.p2p_read = links.nvlinks > 0 && links.cc == 80;
  if (env.p2p_read != -2) p.p2p_read = env.p2p_read != 0;
  p.buff[kLL] = env.ll_buffsize != -2 ? static_cast<uint64_t>(env.ll_buffsize) : kDefaultLL;
  p.buff[kLL128] = env.ll128_buffsize != -2 ? static_cast<uint64_t>(env.ll128_buffsize) : kDefaultLL128;
  p.buff[kSimple] = env.buffsize != -2 ? static_cast<uint64_t>(env.buffsize) : kDefaultSimple;
  p.cumem = env.cumem == -2 || env.cumem == -1 || env.cumem > 0;
  p.runtime_connect = p.cumem && env.runtime_connect != 0;
  return p;
}

uint64_t recv_conn_bytes(const Plan& p) {
  uint64_t b = kConnMem + p.buff[kLL] + p.buff[kLL128];
  if (!p.p2p_read) b += p.buff[kSimple];
  return round_up(b, kIpcMin);
}

uint64_t send_conn_bytes(const Plan& p) {
  uint64_t b = kConnMem;
  if (p.p2p_read) b += p.buff[kSimple];
  return round_up(b, kIpcMin);
}

uint64_t device_bytes(const Plan& p, uint64_t bytes) { return p.cumem ? round_up(bytes, p.granularity) : bytes; }

std::vector<uint64_t> init_allocations(const Plan& p, int nranks, bool sharing_parent) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  std::vector<uint64_t> out;
  // devCommSetup: the device communicator with its channels, rankToLocalRank.
  out.push_back(kDevCommAndChannels);
  out.push_back(n * sizeof(int));
  // initChannel, per channel: the shared devPeers (tpNRanks peers), the
  // channel's devPeers (nRanks + 1 CollNet + localRanks NVLS pointers),
  // devRingUserRanks.
  for (int c = 0; c < p.p2p_channels; ++c) {
    if (!sharing_parent) out.push_back(n * kDevChannelPeer);
    out.push_back((2 * n + 1) * sizeof(void*));
    out.push_back(n * sizeof(int));
  }
  return out;
}

uint64_t init_bytes(const Plan& p, int nranks, bool sharing_parent) {
  uint64_t total = 0;
  for (uint64_t b : init_allocations(p, nranks, sharing_parent)) total += device_bytes(p, b);
  return total;
}

}  // namespace sim::nccl
