// The simulated cards: every figure a program can read of them, with where it
// comes from. docs/simulate.md ("Profiles") lists the same for users.
//
// Which driver: PyTorch 2.14.1's cu13 wheel needs an R580 (CUDA 13.0) driver,
// and the memory a program reads moves with the driver by tens of MiB
// (an H100 80GB HBM3 reads 85045477376 bytes under 12.7, 85028896768 under
// 12.8, 85017755648 under 13.0). So the memory figures are the ones read under
// a 13.0 driver where a public measurement exists, else the newest one found
// (its driver is named). A figure not measured on the card itself says
// "derived" and from what.
//
// Sources cited below by tag:
//   [val]   this repository's H200 run, docs/validation/2026-11-26/ (driver
//           580.159.04): machine.txt, cases/torch_default/metadata.json.
//   [ccg]   CUDA C++ Programming Guide, "Compute Capabilities" table
//           (docs.nvidia.com/cuda/cuda-c-programming-guide/, features and
//           technical specifications): threads, blocks, shared memory and
//           registers per SM, shared memory per block with opt-in.
//   [pci]   PCI ID database, pci-ids.ucw.cz/read/PC/10de (and NVIDIA's own
//           github.com/NVIDIA/gpu-admin-tools gpu/devid_names.py).
//   [lmem]  forums.developer.nvidia.com/t/local-memory-management/289339/9:
//           a context's local memory is max threads per SM x SMs x local
//           memory per thread (1 KiB: cudaLimitStackSize's default).
//   [modal] github.com/modal-labs/modal-client/pull/2797: nvidia-smi totals
//           (MiB) of H100, A100 80GB/40GB, L4, T4.
//   [tham]  github.com/thamada/nvidia-smi: captured deviceQuery/nvidia-smi
//           outputs (gls/L4_deviceQuery.py, gls/RTX4090_deviceQuery.py,
//           gls/A100SXMx4_deviceQuery.py, package/RTX4090_smi.py,
//           nvsim/H100SXMx8_deviceQuery.py).
#include <cstring>

#include "core/profile.h"

namespace sim {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr int KiB = 1 << 10;

// Per-SM limits of a compute capability [ccg]. The opt-in maximum per block
// is the SM's shared memory less the 1 KiB CUDA reserves per block on 8.0
// and later (none on 7.5).
struct CcLimits {
  int major, minor;
  int threads_per_sm, blocks_per_sm;
  int shared_per_sm, shared_per_block_optin;
  int regs_per_sm;
};
constexpr CcLimits kTuring75{7, 5, 1024, 16, 64 * KiB, 64 * KiB, 65536};
constexpr CcLimits kAmpere80{8, 0, 2048, 32, 164 * KiB, 163 * KiB, 65536};
constexpr CcLimits kAda89{8, 9, 1536, 24, 100 * KiB, 99 * KiB, 65536};
constexpr CcLimits kHopper90{9, 0, 2048, 32, 228 * KiB, 227 * KiB, 65536};

// The device memory before any allocation, measured once [val]: an H200's
// PyTorch process held 543162368 bytes nobody allocated (the CUDA context
// with PyTorch's lazily loaded kernels), and cuMemGetInfo reported 9240576
// more bytes used than any process held.
constexpr uint64_t kH200ContextBytes = 543162368ull;
constexpr uint64_t kH200ReservedBytes = 9240576ull;

// Another card's context, derived from the H200's: the part that scales with
// the card is the local memory reservation [lmem] (1 KiB x threads/SM x SMs;
// 264 MiB of the H200's 518), the rest (code, heaps) is the same program's.
constexpr uint64_t context_like_h200(int sms, int threads_per_sm) {
  return kH200ContextBytes - 1024ull * 2048 * 132 + 1024ull * threads_per_sm * sms;
}
static_assert(context_like_h200(132, 2048) == kH200ContextBytes, "the H200 is its own measurement");

struct Card {
  const char* id;
  const char* name;
  uint64_t total_bytes;
  uint64_t nvml_total_mib;
  uint64_t reserved_bytes;
  const CcLimits& cc;
  int sm_count;
  int l2_bytes;
  int persisting_l2_max_bytes;
  int memory_bus_width_bits;
  int clock_khz;
  int memory_clock_khz;
  int pci_device_id;
  int async_engines;
  bool ecc;
  const char* source;
};

constexpr Profile make(const Card& c) {
  return Profile{c.id,
                 c.name,
                 c.total_bytes,
                 c.nvml_total_mib * MiB,
                 context_like_h200(c.sm_count, c.cc.threads_per_sm),
                 c.reserved_bytes,
                 c.cc.major,
                 c.cc.minor,
                 c.sm_count,
                 c.l2_bytes,
                 c.persisting_l2_max_bytes,
                 c.cc.threads_per_sm,
                 c.cc.blocks_per_sm,
                 c.cc.shared_per_sm,
                 c.cc.shared_per_block_optin,
                 c.cc.regs_per_sm,
                 c.memory_bus_width_bits,
                 c.clock_khz,
                 c.memory_clock_khz,
                 c.pci_device_id,
                 c.async_engines,
                 c.ecc,
                 /*multi_gpu_board=*/false,  // none of these boards carries two GPUs
                 c.source};
}

// H100 SXM5 80GB HBM3. deviceQuery under driver 13.0 (github.com/LandonTClipp/
// LandonTClipp.github.io docs/blog/posts/2025-10-21-gpu-containers-as-a-service.md):
// 85017755648 bytes, 132 SMs, 1980 MHz, 2619 MHz memory, 5120-bit, 50 MiB L2,
// 3 copy engines, ECC on. 12.7: 85045477376 [tham]; PyTorch OOM messages of
// older drivers read 79.11 GiB. nvidia-smi: 81559 MiB [modal] (also
// NVIDIA/nccl#1264). Persisting L2: derived from the H200's 62.5% (same die).
// PCI 0x2330 [pci].
constexpr Card kH100Sxm{"h100-80gb", "NVIDIA H100 80GB HBM3",
                        85017755648ull, 81559, kH200ReservedBytes, kHopper90,
                        132, 50 * 1024 * KiB, 32768000, 5120, 1980000, 2619000, 0x2330, 3, true,
                        "H100 SXM5: deviceQuery (driver 13.0), nvidia-smi; context derived from H200"};

// H100 PCIe 80GB. nvaccelinfo + nvidia-smi under driver 565.57.01 (12.7):
// 114 SMs, 1755 MHz, 1593 MHz memory, 5120-bit, 50 MiB L2, 3 async engines,
// ECC on, 81559 MiB; its total there, 85045477376, equals the SXM5's under
// 12.7 [tham], so the 13.0 total is the SXM5's (derived). Clocks also in
// chipsandcheese.com/2023/07/02/nvidias-h100-funny-l2-and-tons-of-bandwidth/.
// PCI 0x2331 [pci] (akash-network/provider-configs#91).
constexpr Card kH100Pcie{"h100-pcie-80gb", "NVIDIA H100 PCIe",
                         85017755648ull, 81559, kH200ReservedBytes, kHopper90,
                         114, 50 * 1024 * KiB, 32768000, 5120, 1755000, 1593000, 0x2331, 3, true,
                         "H100 PCIe: nvaccelinfo (driver 12.7); total derived from H100 SXM5 under 13.0"};

// H200 SXM 141GB. Memory [val]: 150109880320 bytes (139.80 GiB), nvidia-smi
// 143771 MiB (also NVIDIA/cuda-samples#311). 132 SMs and 60 MiB L2: PyTorch's
// _CudaDeviceProperties printout "total_memory=143156MB, multi_processor_count
// =132, L2_cache_size=60MB" (same 143156 MiB). Persisting L2 37.5 MiB and
// 1980 MHz: a public L2-residency probe on an H200 (driver 570.124.06).
// Memory 3201 MHz: public H200 benchmark code (nvidia-smi's clock); 6144-bit:
// six 1024-bit HBM3e stacks, as GH200's deviceQuery reads; 6144 x 2 x 3201 MHz
// = 4.9 TB/s against NVIDIA's 4.8 TB/s datasheet. Copy engines: derived from
// the H100 SXM5. PCI 0x2335 [pci].
constexpr Card kH200{"h200-141gb", "NVIDIA H200",
                     150109880320ull, 143771, kH200ReservedBytes, kHopper90,
                     132, 60 * 1024 * KiB, 39321600, 6144, 1980000, 3201000, 0x2335, 3, true,
                     "H200 SXM: this repository's validation run (driver 580); public probes"};

// A100 SXM4 40GB. deviceQuery (bottlerocket-os/bottlerocket#3873, driver
// 12.2): 42298834944 bytes, 3 copy engines; the PCIe 40GB read 1 MiB less at
// 12.3 and 42405855232 under 13.0 (github.com/felicepantaleo/gpu_training
// cuda.md), so the 13.0 figure is that (derived). 108 SMs, 1410 MHz, 1215 MHz
// memory, 5120-bit, 40 MiB L2 (samridh-dev/votess#10, NVIDIA A100 datasheet).
// Persisting L2 30 MiB: forums.developer.nvidia.com/t/275542 (an A100).
// nvidia-smi 40960 MiB [modal]. PCI 0x20b0 [pci].
constexpr Card kA100Sxm40{"a100-40gb", "NVIDIA A100-SXM4-40GB",
                          42405855232ull, 40960, kH200ReservedBytes, kAmpere80,
                          108, 40 * 1024 * KiB, 31457280, 5120, 1410000, 1215000, 0x20b0, 3, true,
                          "A100 SXM4 40GB: deviceQuery (12.2), A100 PCIe 40GB under 13.0; nvidia-smi"};

// A100 SXM4 80GB. deviceQuery under driver 12.5 [tham]: 85100068864 bytes,
// 108 SMs, 1410 MHz, 1593 MHz memory, 5120-bit, 40 MiB L2, 3 copy engines,
// ECC on (12.2 read 84987740160). No 13.0 reading found. nvidia-smi 81920 MiB
// [modal]. Persisting L2 as the A100 40GB (same L2). PCI 0x20b2 [pci].
constexpr Card kA100Sxm80{"a100-80gb", "NVIDIA A100-SXM4-80GB",
                          85100068864ull, 81920, kH200ReservedBytes, kAmpere80,
                          108, 40 * 1024 * KiB, 31457280, 5120, 1410000, 1593000, 0x20b2, 3, true,
                          "A100 SXM4 80GB: deviceQuery (driver 12.5), nvidia-smi"};

// A100 PCIe 40GB. deviceQuery under driver 13.0 (felicepantaleo/gpu_training
// cuda.md): 42405855232 bytes, 108 SMs, 1410 MHz, 1215 MHz memory, 5120-bit,
// 40 MiB L2, 3 copy engines, ECC on. nvidia-smi: derived from the SXM4 40GB
// (same 40 GB of HBM2). PCI 0x20f1 [pci].
constexpr Card kA100Pcie40{"a100-pcie-40gb", "NVIDIA A100-PCIE-40GB",
                           42405855232ull, 40960, kH200ReservedBytes, kAmpere80,
                           108, 40 * 1024 * KiB, 31457280, 5120, 1410000, 1215000, 0x20f1, 3, true,
                           "A100 PCIe 40GB: deviceQuery (driver 13.0); nvidia-smi derived from SXM4"};

// L4. deviceQuery under driver 12.4 [tham]: 23570219008 bytes, 58 SMs,
// 2040 MHz, 6251 MHz memory, 192-bit, 48 MiB L2, 2 copy engines, ECC on.
// nvidia-smi 23034 MiB [modal]. Persisting L2: derived, 75% as on the A100.
// PCI 0x27b8 [pci].
constexpr Card kL4{"l4-24gb", "NVIDIA L4",
                   23570219008ull, 23034, kH200ReservedBytes, kAda89,
                   58, 48 * 1024 * KiB, 37748736, 192, 2040000, 6251000, 0x27b8, 2, true,
                   "L4: deviceQuery (driver 12.4), nvidia-smi; persisting L2 derived"};

// Tesla T4. deviceQuery under driver 12.5 (a cloud VM's, published in a
// setup guide whose repository the code search did not name): 15642329088 bytes
// (14.57 GiB; PyTorch OOMs on GCP in 2025 read 14.56 GiB, Zheng-Chong/CatVTON#133;
// Colab's driver 550 reads 15828320256), 40 SMs, 1590 MHz, 5001 MHz memory,
// 256-bit, 4 MiB L2, 3 copy engines, ECC on. nvidia-smi 15360 MiB [modal]
// (also robbyant-research/MagicQuill#57). No L2 persistence below 8.0 [ccg].
// PCI 0x1eb8 [pci].
constexpr Card kT4{"t4-16gb", "Tesla T4",
                   15642329088ull, 15360, kH200ReservedBytes, kTuring75,
                   40, 4 * 1024 * KiB, 0, 256, 1590000, 5001000, 0x1eb8, 3, true,
                   "T4: deviceQuery (driver 12.5), nvidia-smi, PyTorch OOM messages"};

// GeForce RTX 4090. deviceQuery under driver 13.0 (github.com/gocnn/gocu
// INSTALL guide, Linux): 25250627584 bytes, 128 SMs, 2520 MHz, 10501 MHz
// memory, 384-bit, 72 MiB L2, 2 copy engines, no ECC (12.4 read 25386352640
// [tham]). nvidia-smi 24564 MiB, PCI 0x2684 (nvidia-smi -q, [tham]).
// Persisting L2: derived, 75% as on the A100.
constexpr Card kRtx4090{"rtx4090-24gb", "NVIDIA GeForce RTX 4090",
                        25250627584ull, 24564, kH200ReservedBytes, kAda89,
                        128, 72 * 1024 * KiB, 56623104, 384, 2520000, 10501000, 0x2684, 2, false,
                        "RTX 4090: deviceQuery (driver 13.0), nvidia-smi; persisting L2 derived"};

const Profile kProfiles[] = {make(kH100Sxm),    make(kH100Pcie), make(kH200), make(kA100Sxm40), make(kA100Sxm80),
                             make(kA100Pcie40), make(kL4),       make(kT4),   make(kRtx4090)};

}  // namespace

const Profile* profiles(size_t* count) {
  *count = sizeof(kProfiles) / sizeof(kProfiles[0]);
  return kProfiles;
}

const Profile* find_profile(const char* id, size_t len) {
  for (const Profile& p : kProfiles)
    if (strlen(p.id) == len && memcmp(p.id, id, len) == 0) return &p;
  return nullptr;
}

bool parse_simulate(const char* spec, const Profile** profile, int* count) {
  if (spec == nullptr) return false;
  const char* colon = strchr(spec, ':');
  const size_t len = colon != nullptr ? static_cast<size_t>(colon - spec) : strlen(spec);
  const Profile* p = find_profile(spec, len);
  if (p == nullptr) return false;
  int n = 1;
  if (colon != nullptr) {
    const char* s = colon + 1;
    if (*s == '\0') return false;
    n = 0;
    for (; *s != '\0'; ++s) {
      if (*s < '0' || *s > '9' || n > 64) return false;
      n = n * 10 + (*s - '0');
    }
    if (n < 1 || n > 64) return false;
  }
  *profile = p;
  *count = n;
  return true;
}

}  // namespace sim
