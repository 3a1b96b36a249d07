#include "shim/dump/query/gpu_processes.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/config.h"
#include "shim/base/fd_io.h"
#include "shim/base/loader_guard.h"
#include "shim/base/hook_table.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

// NVML's ABI, declared here (no NVML header is needed to build the shim).
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2/v3 entry points)
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct NvmlProcessInfoV1 {  // the original entry points
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

std::string proc_comm(uint32_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/comm", pid);
  std::string name = read_file_at(AT_FDCWD, path, 255);
  size_t nl = name.find('\n');
  if (nl != std::string::npos) name.resize(nl);
  return name;
}

using ListFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*);
using ListV1Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV1*);

// The NVML entry points we use, resolved in an already dlopen'ed library.
struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_bus)(const char*, nvmlDevice_t*) = nullptr;
  ListFn compute = nullptr, graphics = nullptr;
  ListV1Fn compute_v1 = nullptr;
  nvmlReturn_t (*proc_name)(unsigned int, char*, unsigned int) = nullptr;

  bool resolve(void* h) {
    auto sym = [&](const char* n) { return real_dlsym()(h, n); };
    init = reinterpret_cast<decltype(init)>(sym("nvmlInit_v2"));
    shutdown = reinterpret_cast<decltype(shutdown)>(sym("nvmlShutdown"));
    by_index = reinterpret_cast<decltype(by_index)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    by_bus = reinterpret_cast<decltype(by_bus)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    compute = reinterpret_cast<ListFn>(sym("nvmlDeviceGetComputeRunningProcesses_v3"));
    if (!compute) compute = reinterpret_cast<ListFn>(sym("nvmlDeviceGetComputeRunningProcesses_v2"));
    graphics = reinterpret_cast<ListFn>(sym("nvmlDeviceGetGraphicsRunningProcesses_v3"));
    if (!graphics) graphics = reinterpret_cast<ListFn>(sym("nvmlDeviceGetGraphicsRunningProcesses_v2"));
    compute_v1 = reinterpret_cast<ListV1Fn>(sym("nvmlDeviceGetComputeRunningProcesses"));
    proc_name = reinterpret_cast<decltype(proc_name)>(sym("nvmlSystemGetProcessName"));
    return init && by_index && (compute || compute_v1);
  }
};

// CUDA ordinals follow CUDA_VISIBLE_DEVICES, NVML indexes do not: match by
// PCI bus id when the CUDA driver can give it.
nvmlDevice_t find_device(const Nvml& n, int device) {
  nvmlDevice_t dev = nullptr;
  using BusIdFn = int (*)(char*, int, int);
  if (auto bus = reinterpret_cast<BusIdFn>(lookup_library_symbol(Library::CUDA, "cuDeviceGetPCIBusId"))) {
    char id[64] = {};
    if (device >= 0 && bus(id, sizeof id - 1, device) == 0 && n.by_bus && n.by_bus(id, &dev) != kNvmlSuccess)
      dev = nullptr;
  }
  if (!dev && n.by_index(unsigned(device < 0 ? 0 : device), &dev) != kNvmlSuccess) dev = nullptr;
  return dev;
}

// One entry per pid (compute and graphics lists may both name it), the
// largest figure NVML gave.
void add_process(std::vector<GpuProcess>* procs, uint32_t pid, unsigned long long used) {
  for (auto& p : *procs)
    if (p.pid == pid) {
      if (used != kNvmlValueNotAvailable && (!p.has_used || used > p.used_bytes)) {
        p.used_bytes = used;
        p.has_used = true;
      }
      return;
    }
  GpuProcess p;
  p.pid = pid;
  p.has_used = used != kNvmlValueNotAvailable;
  p.used_bytes = p.has_used ? used : 0;
  p.is_self = pid == uint32_t(getpid());
  procs->push_back(p);
}

bool list_processes(const Nvml& n, nvmlDevice_t dev, std::vector<GpuProcess>* procs) {
  bool listed = false;
  for (ListFn fn : {n.compute, n.graphics}) {
    if (!fn) continue;
    unsigned int count = 256;
    std::vector<NvmlProcessInfo> info(count);
    nvmlReturn_t rc = fn(dev, &count, info.data());
    if (rc == kNvmlInsufficientSize && count > 0 && count < 65536) {
      info.resize(count);
      rc = fn(dev, &count, info.data());
    }
    if (rc != kNvmlSuccess) continue;
    listed = true;
    for (unsigned int i = 0; i < count && i < info.size(); ++i) add_process(procs, info[i].pid, info[i].usedGpuMemory);
  }
  if (!listed && n.compute_v1) {
    unsigned int count = 256;
    std::vector<NvmlProcessInfoV1> info(count);
    if (n.compute_v1(dev, &count, info.data()) == kNvmlSuccess) {
      listed = true;
      for (unsigned int i = 0; i < count && i < info.size(); ++i)
        add_process(procs, info[i].pid, info[i].usedGpuMemory);
    }
  }
  return listed;
}

void name_processes(const Nvml& n, std::vector<GpuProcess>* procs) {
  for (auto& p : *procs) {
    char name[256] = {};
    if (n.proc_name && n.proc_name(p.pid, name, sizeof name - 1) == kNvmlSuccess && name[0]) {
      const char* base = std::strrchr(name, '/');
      p.name = base ? base + 1 : name;
    } else {
      p.name = proc_comm(p.pid);
    }
  }
  std::sort(procs->begin(), procs->end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.used_bytes > b.used_bytes; });
}

// NVML's list with this process's recorded live bytes at the same moment:
// the counter is read before and after, and the list is taken again (up to
// kListTries) while the program allocates or frees in between.
bool list_processes_steady(const Nvml& n, nvmlDevice_t dev, int device, std::vector<GpuProcess>* procs,
                           GpuProcessReport* r) {
  constexpr int kListTries = 4;
  for (int i = 0; i < kListTries; ++i) {
    procs->clear();
    const HeldBytes before = HeldBytes::now(device);
    if (!list_processes(n, dev, procs)) return false;
    const HeldBytes after = HeldBytes::now(device);
    if (before.driver == after.driver && before.pooled == after.pooled) {
      r->self_live_known = true;
      r->self_held = after;
      return true;
    }
  }
  return true;
}

}  // namespace

HeldBytes HeldBytes::now(int device) {
  const uint64_t live = device_live_bytes(device), pooled = device_pooled_bytes(device);
  return HeldBytes{live > pooled ? live - pooled : 0, pooled};
}

void LiveAtFreeze::read() {
  for (int d = 0; d < kMaxDevices; ++d) held[d] = HeldBytes::now(d);
}

GpuProcessReport query_gpu_processes(int device) {
  GpuProcessReport r;
  void* h = guarded_dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);  // on the writer: see loader_guard.h
  if (!h) {
    r.error = "NVML (libnvidia-ml.so.1) is not available";
    return r;
  }
  Nvml n;
  if (!n.resolve(h)) {
    r.error = "NVML lacks the entry points we need";
    dlclose(h);
    return r;
  }
  if (n.init() != kNvmlSuccess) {
    r.error = "nvmlInit failed";
    dlclose(h);
    return r;
  }
  std::vector<GpuProcess> procs;
  nvmlDevice_t dev = find_device(n, device);
  if (!dev) {
    r.error = "NVML does not know device " + std::to_string(device);
  } else if (!list_processes_steady(n, dev, device, &procs, &r)) {
    r.error = "NVML would not list the processes on the device";
  } else {
    name_processes(n, &procs);
    r.processes = std::move(procs);
    r.available = true;
  }
  if (n.shutdown) n.shutdown();
  // The library stays loaded: NVML does not support being unloaded and
  // loaded again in one process reliably.
  return r;
}

std::string describe_gpu_processes(const GpuProcessReport& r) {
  if (!r.available) return "";
  std::string s;
  bool self_seen = false;
  for (auto& p : r.processes) {
    if (!p.is_self) continue;
    s += "this process holds " + (p.has_used ? format_bytes(p.used_bytes) : std::string("an unknown amount")) +
         " (NVML)";
    self_seen = true;
  }
  for (auto& p : r.processes) {
    if (p.is_self) continue;
    if (!s.empty()) s += "; ";
    s += "pid " + std::to_string(p.pid) + " (" + (p.name.empty() ? "?" : p.name) + ") holds " +
         (p.has_used ? format_bytes(p.used_bytes) : std::string("an unknown amount"));
  }
  if (!self_seen && s.empty()) s = "no process is listed on this device";
  return s;
}

}  // namespace gpumemrec
