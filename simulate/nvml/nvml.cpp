// The simulated NVML (libnvidia-ml.so.1): initialisation, devices, memory
// and the processes on each device. PCI, UUID and versions: device_info.cpp.
//
// Types: nvml/types.h.
//   nvmlDeviceGetComputeRunningProcesses     -> v1 layout
//   nvmlDeviceGetComputeRunningProcesses_v2 / _v3 -> 4-field layout
//
// Process list of device 0: $FAKEGPU_NVML_PROCS ("pid:bytes[:name],...")
// plus, on every device, the calling process itself with the live bytes of
// the fake libcuda and its FAKEGPU_CONTEXT_BYTES if that library is loaded
// in the process (looked up with
// dlopen(RTLD_NOLOAD) + dlsym of fakegpu_cuda_live_bytes).
// FAKEGPU_NVML_ALLOC_WHILE_LISTING: see allocate_while_listing.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/shared_ledger.h"
#include "nvml/internal.h"




namespace {

constexpr int kMaxDevices = 64;
constexpr unsigned int kNoInstance = 0xFFFFFFFFu;
constexpr unsigned int kMemoryV2 = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

std::mutex g_mu;
int g_init_count = 0;
char g_device_objects[kMaxDevices];

struct Proc {
  unsigned int pid;
  unsigned long long bytes;
  std::string name;
};

uint64_t env_u64(const char* name, uint64_t def) {
  const char* s = getenv(name);
  if (s == nullptr || *s == '\0') return def;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return def;
  return v;
}

// NVML's total is the card's whole memory (nvidia-smi's figure), larger than
// what the driver reports as the context's total (cuMemGetInfo).
uint64_t capacity() {
  const sim::Config& c = sim::config();
  return c.profile != nullptr ? c.profile->nvml_total_bytes : c.capacity;
}
int device_count() { return sim::config().devices; }

}  // namespace

bool nvml_initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_init_count > 0;
}

nvmlDevice_t nvml_device(int index) { return reinterpret_cast<nvmlDevice_t>(&g_device_objects[index]); }

int nvml_device_index(nvmlDevice_t d) {
  const char* p = reinterpret_cast<const char*>(d);
  if (p < g_device_objects || p >= g_device_objects + kMaxDevices) return -1;
  const int idx = static_cast<int>(p - g_device_objects);
  return idx < device_count() ? idx : -1;
}

namespace {

bool initialized() { return nvml_initialized(); }
int device_index(nvmlDevice_t d) { return nvml_device_index(d); }

// What the fake libcuda holds for this process (its allocations and its
// FAKEGPU_CONTEXT_BYTES), or -1 if it is not loaded.
long long own_cuda_bytes(int device) {
  using Fn = unsigned long long (*)(int);
  Fn fn = nullptr;
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    fn = reinterpret_cast<Fn>(dlsym(h, "fakegpu_cuda_process_bytes"));
    dlclose(h);
  }
  if (fn == nullptr) fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "fakegpu_cuda_process_bytes"));
  if (fn == nullptr) return -1;
  return static_cast<long long>(fn(device));
}

// FAKEGPU_NVML_ALLOC_WHILE_LISTING=<bytes>: every listing makes another
// thread of the program allocate that much (cuMemAlloc_v2 as the program
// would call it: through whatever interposes it) and waits for it, as a
// program whose other threads keep allocating while NVML is read. The
// allocations are kept.
void allocate_while_listing() {
  const uint64_t bytes = env_u64("FAKEGPU_NVML_ALLOC_WHILE_LISTING", 0);
  if (bytes == 0) return;
  using AllocFn = int (*)(unsigned long long*, size_t);
  auto alloc = reinterpret_cast<AllocFn>(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  if (alloc == nullptr) return;
  std::thread([alloc, bytes] {
    unsigned long long p = 0;
    (void)alloc(&p, size_t(bytes));
  }).join();
}

std::vector<Proc> processes(int device) {
  allocate_while_listing();
  std::vector<Proc> out;
  if (device == 0) {
    if (const char* env = getenv("FAKEGPU_NVML_PROCS")) {
      std::string s(env);
      size_t pos = 0;
      while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        const std::string item = s.substr(pos, comma - pos);
        pos = comma + 1;
        if (item.empty()) continue;
        const size_t c1 = item.find(':');
        if (c1 == std::string::npos) continue;
        const size_t c2 = item.find(':', c1 + 1);
        Proc p;
        p.pid = static_cast<unsigned int>(strtoul(item.substr(0, c1).c_str(), nullptr, 10));
        p.bytes = strtoull(item.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1).c_str(),
                           nullptr, 10);
        if (c2 != std::string::npos) p.name = item.substr(c2 + 1);
        if (p.pid != 0) out.push_back(p);
      }
    }
  }
  const long long own = own_cuda_bytes(device);
  if (own >= 0) out.push_back(Proc{static_cast<unsigned int>(getpid()), static_cast<unsigned long long>(own), ""});
  // The run's other processes on this device (core/shared_ledger.h).
  for (const sim::shared::Peer& p : sim::shared::peers(device))
    out.push_back(Proc{static_cast<unsigned int>(p.pid), static_cast<unsigned long long>(p.bytes), ""});
  return out;
}

template <typename Info, typename Fill>
nvmlReturn_t list_processes(nvmlDevice_t device, unsigned int* infoCount, Info* infos, Fill fill) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const int d = device_index(device);
  if (d < 0 || infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const std::vector<Proc> procs = processes(d);
  const unsigned int n = static_cast<unsigned int>(procs.size());
  if (*infoCount < n || (infos == nullptr && n > 0)) {
    *infoCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < n; ++i) fill(infos[i], procs[i]);
  *infoCount = n;
  return NVML_SUCCESS;
}

void fill_v2(nvmlProcessInfo_t& i, const Proc& p) {
  i.pid = p.pid;
  i.usedGpuMemory = p.bytes;
  i.gpuInstanceId = kNoInstance;
  i.computeInstanceId = kNoInstance;
}

void fill_v1(nvmlProcessInfo_v1_t& i, const Proc& p) {
  i.pid = p.pid;
  i.usedGpuMemory = p.bytes;
}

nvmlReturn_t memory(nvmlDevice_t device, unsigned long long* total, unsigned long long* free,
                    unsigned long long* used) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const int d = device_index(device);
  if (d < 0) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned long long cap = capacity();
  unsigned long long u = 0;
  for (const Proc& p : processes(d)) u += p.bytes;
  if (u > cap) u = cap;
  *total = cap;
  *used = u;
  *free = cap - u;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  // FAKEGPU_NVML_FAIL=1: NVML is installed but the driver does not answer.
  if (env_u64("FAKEGPU_NVML_FAIL", 0) != 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_init_count;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

FAKE_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return nvmlInit_v2(); }

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init_count;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned int>(device_count());
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= static_cast<unsigned int>(device_count())) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&g_device_objects[index]);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const int d = device_index(device);
  if (d < 0 || name == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  char buf[96];
  sim::device_name(d, buf, sizeof buf);
  const int n = static_cast<int>(strlen(buf));
  if (length <= static_cast<unsigned int>(n)) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, buf, static_cast<size_t>(n) + 1);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* mem) {
  if (mem == nullptr) return initialized() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  return memory(device, &mem->total, &mem->free, &mem->used);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* mem) {
  if (mem == nullptr) return initialized() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
  if (mem->version != kMemoryV2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  mem->reserved = 0;
  return memory(device, &mem->total, &mem->free, &mem->used);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                 nvmlProcessInfo_t* infos) {
  return list_processes(device, infoCount, infos, fill_v2);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                 nvmlProcessInfo_v2_t* infos) {
  return list_processes(device, infoCount, infos, fill_v2);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                              nvmlProcessInfo_v1_t* infos) {
  return list_processes(device, infoCount, infos, fill_v1);
}

// No graphics (display) process runs on a simulated card: an empty list.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                  nvmlProcessInfo_t* infos) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (device_index(device) < 0 || infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *infoCount = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::string result;
  for (const Proc& p : processes(0))
    if (p.pid == pid && !p.name.empty()) result = p.name;
  if (result.empty()) {
    // /proc/<pid>/cmdline's first argument, else /proc/<pid>/comm.
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
    if (FILE* f = fopen(path, "r")) {
      char buf[4096];
      const size_t n = fread(buf, 1, sizeof buf - 1, f);
      fclose(f);
      buf[n] = '\0';
      result = buf;
    }
    if (result.empty()) {
      snprintf(path, sizeof path, "/proc/%u/comm", pid);
      if (FILE* f = fopen(path, "r")) {
        char buf[256];
        if (fgets(buf, sizeof buf, f) != nullptr) result = buf;
        fclose(f);
        while (!result.empty() && (result.back() == '\n' || result.back() == '\r')) result.pop_back();
      }
    }
  }
  if (result.empty()) return NVML_ERROR_NOT_FOUND;
  const size_t n = result.size() < length - 1 ? result.size() : length - 1;  // truncate like NVML
  memcpy(name, result.data(), n);
  name[n] = '\0';
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
  }
}
