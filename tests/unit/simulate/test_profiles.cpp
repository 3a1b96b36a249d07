// The simulated cards' table (simulate/core/profiles.cpp): the invariants every
// entry keeps, and GPUMEMREC_SIMULATE's NAME[:COUNT] parsing.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/profile.h"

using sim::Profile;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::vector<const Profile*> all_profiles() {
  size_t n = 0;
  const Profile* p = sim::profiles(&n);
  std::vector<const Profile*> out;
  for (size_t i = 0; i < n; ++i) out.push_back(&p[i]);
  return out;
}

// PyTorch 2.14.1+cu130's x86_64 wheel carries cubins for these (its
// torch._C._cuda_getArchFlags(): sm_75 sm_80 sm_86 sm_90 sm_100 sm_120); a
// card runs one when torch/cuda/__init__.py's DEVICE_REQUIREMENT says so:
// _CompatInterval(start=cc) is the same major with a minor at least cc's,
// and 8.6's excludes 8.7 (Jetson Orin). 8.9 (L4, RTX 4090) runs sm_86's.
bool torch_cu130_runs(int major, int minor) {
  const int cc = major * 10 + minor;
  for (int code : {75, 80, 86, 90, 100, 120}) {
    if ((code == 80 || code == 86) && cc == 87) continue;
    if (cc / 10 == code / 10 && cc % 10 >= code % 10) return true;
  }
  return false;
}

bool parse(const char* spec, const Profile** p, int* n) { return sim::parse_simulate(spec, p, n); }

}  // namespace

TEST(SimProfiles, TheCardsTheTaskNamesAreAllThere) {
  for (const char* id : {"h100-80gb", "h100-pcie-80gb", "h200-141gb", "a100-40gb", "a100-80gb",
                         "a100-pcie-40gb", "l4-24gb", "t4-16gb", "rtx4090-24gb"})
    EXPECT_NE(sim::find_profile(id, strlen(id)), nullptr) << id;
}

TEST(SimProfiles, IdsAreUniqueLowerCaseWordsAndNamesUnique) {
  std::set<std::string> ids, names;
  for (const Profile* p : all_profiles()) {
    ASSERT_NE(p->id, nullptr);
    ASSERT_NE(p->name, nullptr);
    ASSERT_NE(p->source, nullptr);
    EXPECT_GT(strlen(p->source), 0u) << p->id;
    EXPECT_TRUE(ids.insert(p->id).second) << "duplicate id " << p->id;
    EXPECT_TRUE(names.insert(p->name).second) << "duplicate name " << p->name;
    ASSERT_GT(strlen(p->id), 0u);
    for (const char* c = p->id; *c != '\0'; ++c)
      EXPECT_TRUE(islower(static_cast<unsigned char>(*c)) || isdigit(static_cast<unsigned char>(*c)) || *c == '-')
          << p->id;
    // cudaDeviceProp.name is char[256]; nvmlDeviceGetName's documented buffer is 96.
    EXPECT_LT(strlen(p->name), 96u) << p->id;
  }
}

TEST(SimProfiles, MemoryAsProgramsReadIt) {
  for (const Profile* p : all_profiles()) {
    SCOPED_TRACE(p->id);
    EXPECT_GT(p->total_bytes, 1ull << 30);
    // cuMemGetInfo's total never exceeds what nvidia-smi counts (NVML keeps
    // back what the driver reserves), and nvidia-smi counts whole MiB.
    EXPECT_LE(p->total_bytes, p->nvml_total_bytes);
    EXPECT_EQ(p->nvml_total_bytes % kMiB, 0u);
    // The driver's reserve between the two is hundreds of MiB, not GiB.
    EXPECT_LT(p->nvml_total_bytes - p->total_bytes, 1024 * kMiB);
    EXPECT_LT(p->context_bytes + p->driver_reserved_bytes, p->total_bytes / 4);
  }
}

TEST(SimProfiles, TheH200IsTheValidationRunsCard) {
  // docs/validation/2026-11-26: machine.txt and cases/torch_default/metadata.json.
  const Profile* p = sim::find_profile("h200-141gb", 10);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->total_bytes, 150109880320ull);
  EXPECT_EQ(p->nvml_total_bytes, 143771 * kMiB);
  EXPECT_EQ(p->context_bytes, 543162368ull);
  EXPECT_EQ(p->driver_reserved_bytes, 9240576ull);
}

TEST(SimProfiles, ContextHoldsAtLeastTheLocalMemoryReservation) {
  // A context reserves 1 KiB (the default stack limit) per resident thread:
  // max threads per SM x SMs (NVIDIA forum, local memory management).
  for (const Profile* p : all_profiles())
    EXPECT_GT(p->context_bytes, 1024ull * p->max_threads_per_sm * p->sm_count) << p->id;
}

TEST(SimProfiles, ComputeCapabilityIsOneTorchCu130Runs) {
  for (const Profile* p : all_profiles())
    EXPECT_TRUE(torch_cu130_runs(p->cc_major, p->cc_minor)) << p->id << " " << p->cc_major << "." << p->cc_minor;
  EXPECT_TRUE(torch_cu130_runs(8, 9));
  EXPECT_FALSE(torch_cu130_runs(8, 7));
  EXPECT_FALSE(torch_cu130_runs(7, 0));
  EXPECT_FALSE(torch_cu130_runs(6, 1));
}

TEST(SimProfiles, PerSmLimitsFollowTheComputeCapabilityTable) {
  // CUDA C++ Programming Guide, compute capabilities table:
  // {cc, threads/SM, blocks/SM, shared KiB/SM, opt-in KiB/block}.
  struct Row {
    int cc, threads, blocks, shared_kib, optin_kib;
  };
  const Row table[] = {{75, 1024, 16, 64, 64},
                       {80, 2048, 32, 164, 163},
                       {86, 1536, 16, 100, 99},
                       {89, 1536, 24, 100, 99},
                       {90, 2048, 32, 228, 227}};
  for (const Profile* p : all_profiles()) {
    SCOPED_TRACE(p->id);
    const Row* row = nullptr;
    for (const Row& r : table)
      if (r.cc == p->cc_major * 10 + p->cc_minor) row = &r;
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(p->max_threads_per_sm, row->threads);
    EXPECT_EQ(p->max_blocks_per_sm, row->blocks);
    EXPECT_EQ(p->shared_per_sm, row->shared_kib * 1024);
    EXPECT_EQ(p->shared_per_block_optin, row->optin_kib * 1024);
    EXPECT_EQ(p->regs_per_sm, 65536);
  }
}

TEST(SimProfiles, ChipFiguresArePlausible) {
  for (const Profile* p : all_profiles()) {
    SCOPED_TRACE(p->id);
    EXPECT_GE(p->sm_count, 1);
    EXPECT_LE(p->sm_count, 256);
    EXPECT_GT(p->l2_bytes, 0);
    EXPECT_EQ(p->l2_bytes % (1 << 20), 0);
    // L2 persistence is compute capability 8.0 and later, within the L2.
    if (p->cc_major < 8)
      EXPECT_EQ(p->persisting_l2_max_bytes, 0);
    else
      EXPECT_GT(p->persisting_l2_max_bytes, 0);
    EXPECT_LE(p->persisting_l2_max_bytes, p->l2_bytes);
    EXPECT_EQ(p->memory_bus_width_bits % 64, 0);
    EXPECT_GT(p->clock_khz, 500000);
    EXPECT_LT(p->clock_khz, 4000000);
    EXPECT_GT(p->memory_clock_khz, 500000);
    EXPECT_GT(p->pci_device_id, 0);
    EXPECT_LE(p->pci_device_id, 0xffff);
    EXPECT_GE(p->async_engines, 1);
    EXPECT_FALSE(p->multi_gpu_board);
  }
}

TEST(SimProfiles, FindProfileMatchesExactlyTheGivenLength) {
  size_t n = 0;
  const Profile* table = sim::profiles(&n);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(sim::find_profile(table[0].id, strlen(table[0].id)), &table[0]);
  EXPECT_EQ(sim::find_profile("h100-80gb:8", 9), sim::find_profile("h100-80gb", 9));
  EXPECT_EQ(sim::find_profile("h100-80g", 8), nullptr);
  EXPECT_EQ(sim::find_profile("h100-80gbx", 10), nullptr);
  EXPECT_EQ(sim::find_profile("", 0), nullptr);
}

TEST(SimParse, NameAloneIsOneCardAndACountIsThatMany) {
  struct Good {
    const char* spec;
    const char* id;
    int count;
  };
  for (const Good& g : {Good{"h100-80gb", "h100-80gb", 1}, Good{"h100-80gb:8", "h100-80gb", 8},
                        Good{"t4-16gb:1", "t4-16gb", 1}, Good{"h200-141gb:64", "h200-141gb", 64},
                        Good{"h200-141gb:007", "h200-141gb", 7}}) {  // leading zeros: still 7
    const Profile* p = nullptr;
    int n = 0;
    ASSERT_TRUE(parse(g.spec, &p, &n)) << g.spec;
    EXPECT_STREQ(p->id, g.id);
    EXPECT_EQ(n, g.count) << g.spec;
  }
}

TEST(SimParse, BadSpecsLeaveTheOutputsAlone) {
  const Profile* const sentinel = reinterpret_cast<const Profile*>(0x1);
  for (const char* spec : {"", ":0", ":65", ":8", "h100-80gb:", "h100-80gb:0", "h100-80gb:65",
                           "h100-80gb:2x", "h100-80gb:x2", "h100-80gb:-1", "h100-80gb:+2", "h100-80gb: 2",
                           "h100-80gb:2:3", "h100-80gb:99999999999999999999", "H100-80GB", "H100-80gb:8",
                           "h100-80gb ", " h100-80gb", "h100", "nosuchcard:1"}) {
    const Profile* p = sentinel;
    int n = -7;
    EXPECT_FALSE(parse(spec, &p, &n)) << '"' << spec << '"';
    EXPECT_EQ(p, sentinel) << spec;
    EXPECT_EQ(n, -7) << spec;
  }
  const Profile* p = sentinel;
  int n = -7;
  EXPECT_FALSE(parse(nullptr, &p, &n));
  EXPECT_EQ(p, sentinel);
}
