// What NCCL would see of the simulated machine, and NCCL's variables.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/config.h"
#include "nccl/comm.h"

namespace sim::nccl {
namespace {

// NVLinks per GPU to the NVSwitches of the SXM boards (NVIDIA's datasheets:
// H100 SXM5 and H200 SXM, 18 fourth-generation links, 900 GB/s; A100 SXM4,
// 12 third-generation links, 600 GB/s). The PCIe cards (H100 PCIe, A100 PCIe,
// L4, T4, RTX 4090) and the tests' Fake GPU talk over PCIe.
struct CardLinks {
  const char* id;
  int nvlinks;
};
constexpr CardLinks kNvlinkCards[] = {{"h100-80gb", 18}, {"h200-141gb", 18}, {"a100-40gb", 12}, {"a100-80gb", 12}};

Links card_links() {
  Links l;
  const Profile* p = config().profile;
  if (p == nullptr) return l;  // Fake GPU: PCIe
  l.cc = p->cc_major * 10 + p->cc_minor;
  for (const CardLinks& c : kNvlinkCards)
    if (strcmp(c.id, p->id) == 0) l.nvlinks = c.nvlinks;
  return l;
}

// NCCL_PARAM's reading (include/param.h ncclLoadParam): strtoll of the
// whole value; anything else keeps the default.
int64_t param(const char* name, int64_t def) {
  const char* s = getenv(name);
  if (s == nullptr || *s == '\0') return def;
  errno = 0;
  char* end = nullptr;
  const long long v = strtoll(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return def;
  return v;
}

Env read_env() {
  Env e;
  e.buffsize = param("NCCL_BUFFSIZE", -2);
  e.ll_buffsize = param("NCCL_LL_BUFFSIZE", -2);
  e.ll128_buffsize = param("NCCL_LL128_BUFFSIZE", -2);
  e.min_channels = static_cast<int>(param("NCCL_MIN_NCHANNELS", param("NCCL_MIN_NRINGS", -2)));
  e.max_channels = static_cast<int>(param("NCCL_MAX_NCHANNELS", param("NCCL_MAX_NRINGS", -2)));
  e.cumem = static_cast<int>(param("NCCL_CUMEM_ENABLE", -2));
  e.runtime_connect = static_cast<int>(param("NCCL_RUNTIME_CONNECT", 1));
  e.p2p_read = static_cast<int>(param("NCCL_P2P_READ_ENABLE", -2));
  for (int64_t* b : {&e.buffsize, &e.ll_buffsize, &e.ll128_buffsize})
    if (*b != -2 && *b <= 0) *b = -2;
  return e;
}

}  // namespace

Plan plan_for(int device, int min_ctas, int max_ctas) {
  Plan p = make_plan(card_links(), read_env(), min_ctas, max_ctas);
  const uint64_t g = granularity(device);
  if (g != 0) p.granularity = g;
  return p;
}

}  // namespace sim::nccl
