#include "tools/top_cards.h"

#include <dlfcn.h>

#include <string>

namespace gpumemrec::cli {

namespace {

// NVML's ABI (nvml.h), declared here: no NVML header is needed to build.
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
constexpr nvmlReturn_t kSuccess = 0;

}  // namespace

struct Cards::Api {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_bus)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*) = nullptr;

  bool resolve() {
    auto sym = [&](const char* n) { return dlsym(handle, n); };
    init = reinterpret_cast<decltype(init)>(sym("nvmlInit_v2"));
    shutdown = reinterpret_cast<decltype(shutdown)>(sym("nvmlShutdown"));
    by_index = reinterpret_cast<decltype(by_index)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    by_bus = reinterpret_cast<decltype(by_bus)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    memory = reinterpret_cast<decltype(memory)>(sym("nvmlDeviceGetMemoryInfo"));
    return init && by_index && memory;
  }
};

Cards::Cards() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    problem_ = "no NVML (libnvidia-ml.so.1): card memory unknown";
    return;
  }
  auto* a = new Api;
  a->handle = h;
  if (!a->resolve()) {
    problem_ = "NVML lacks nvmlDeviceGetMemoryInfo: card memory unknown";
  } else if (a->init() != kSuccess) {
    problem_ = "NVML did not start (nvmlInit_v2 failed): card memory unknown";
  } else {
    api_ = a;
    return;
  }
  dlclose(h);
  delete a;
}

Cards::~Cards() {
  if (!api_) return;
  if (api_->shutdown) api_->shutdown();
  dlclose(api_->handle);
  delete api_;
}

CardMemory Cards::memory(const std::string& bus_id, int device) const {
  CardMemory m;
  if (!api_ || (bus_id.empty() && device < 0)) return m;
  const std::string key = bus_id.empty() ? "#" + std::to_string(device) : bus_id;
  auto asked = asked_.find(key);
  if (asked != asked_.end()) return asked->second;
  m.by_index = bus_id.empty();
  auto h = handles_.find(key);
  if (h == handles_.end()) {
    nvmlDevice_t dev = nullptr;
    const nvmlReturn_t rc = bus_id.empty() ? api_->by_index(unsigned(device), &dev)
                            : api_->by_bus ? api_->by_bus(bus_id.c_str(), &dev)
                                           : 1;
    h = handles_.emplace(key, rc == kSuccess ? static_cast<void*>(dev) : nullptr).first;
  }
  NvmlMemory mem{};
  if (h->second && api_->memory(static_cast<nvmlDevice_t>(h->second), &mem) == kSuccess) {
    m.known = true;
    m.total = mem.total;
    m.free = mem.free;
  }
  asked_[key] = m;
  return m;
}

}  // namespace gpumemrec::cli
