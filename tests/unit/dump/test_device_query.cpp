// Dump-time questions to the driver and to NVML (shim/dump/query/
// device_query.cpp, gpu_processes.cpp), asked of the fake libcuda and the
// fake NVML (tests/fakes: the real headers' ABIs) loaded RTLD_LOCAL as
// Python loads them, and of a process without either.
#include "shim/dump/query/device_query.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "shim/base/hook_table.h"
#include "shim/dump/query/gpu_processes.h"

using namespace gpumemrec;

namespace {

constexpr uint64_t kCapacity = 64ull << 20;

// The fake driver with 1 MiB allocated on device 0 (through its own
// cuMemAlloc_v2, not our wrapper: nothing here is recorded).
void* load_fake_driver() {
  setenv("FAKEGPU_CAPACITY", std::to_string(kCapacity).c_str(), 1);
  setenv("FAKEGPU_DEVICES", "2", 1);
  void* h = dlopen(GPUMEMREC_UNIT_FAKES_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto init = reinterpret_cast<int (*)(unsigned)>(real_dlsym()(h, "cuInit"));
  auto alloc = reinterpret_cast<int (*)(unsigned long long*, size_t)>(real_dlsym()(h, "cuMemAlloc_v2"));
  unsigned long long p = 0;
  if (!init || init(0) != 0 || !alloc || alloc(&p, 1 << 20) != 0) return nullptr;
  return h;
}

bool system_has_nvml() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST(DeviceQuery, NoDriverLoadedAnswersNothingAndLoadsNothing) {
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) GTEST_SKIP() << "a CUDA driver is loaded already";
  const DeviceReport r = query_devices(Backend::kCuda, 0);
  EXPECT_FALSE(r.has_mem_info);
  EXPECT_EQ(r.driver_version, 0);
  EXPECT_EQ(r.runtime_version, 0);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_EQ(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), nullptr);  // never loads the driver
}

TEST(DeviceQuery, FakeDriverReportsMemoryVersionAndDevices) {
  ASSERT_NE(load_fake_driver(), nullptr) << dlerror();
  const DeviceReport r = query_devices(Backend::kCuda, 0);
  ASSERT_TRUE(r.has_mem_info);
  EXPECT_EQ(r.total_bytes, kCapacity);
  EXPECT_EQ(r.free_bytes, kCapacity - (1 << 20));
  EXPECT_EQ(r.driver_version, 13000);
  EXPECT_EQ(r.runtime_version, 0);  // no runtime loaded
  ASSERT_EQ(r.devices.size(), 2u);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(r.devices[d].device_id, d);
    EXPECT_EQ(r.devices[d].name, "Fake GPU " + std::to_string(d));
    EXPECT_EQ(r.devices[d].total_bytes, kCapacity);
  }
}

TEST(DeviceQuery, ErrorNamesPerFamily) {
  EXPECT_STREQ(error_name(Backend::kCuda, true, 2), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(error_name(Backend::kCuda, false, 2), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_STREQ(error_name(Backend::kHip, true, 2), "hipErrorOutOfMemory");
  EXPECT_STREQ(error_name(Backend::kCuda, false, 201), "CUDA_ERROR_INVALID_CONTEXT");
  EXPECT_STREQ(error_name(Backend::kCuda, true, 99999), "cudaError");  // unknown: the family's type name
  EXPECT_STREQ(error_name(Backend::kCuda, false, -1), "CUresult");
}

TEST(GpuProcesses, WithoutNvmlSaysWhy) {
  if (system_has_nvml()) GTEST_SKIP() << "this machine has NVML";
  const GpuProcessReport r = query_gpu_processes(0);
  EXPECT_FALSE(r.available);
  EXPECT_EQ(r.error, "NVML (libnvidia-ml.so.1) is not available");
  EXPECT_EQ(describe_gpu_processes(r), "");
}

TEST(GpuProcesses, FakeNvmlListsEveryProcessLargestFirst) {
  if (system_has_nvml()) GTEST_SKIP() << "this machine has a real NVML";
  setenv("FAKEGPU_NVML_PROCS", "4242:1000:python3,4343:2000", 1);
  ASSERT_NE(load_fake_driver(), nullptr) << dlerror();
  // Loaded by path first: NVML's dlopen by soname then finds it.
  ASSERT_NE(dlopen(GPUMEMREC_UNIT_FAKES_DIR "/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  const GpuProcessReport r = query_gpu_processes(0);
  ASSERT_TRUE(r.available) << r.error;
  ASSERT_EQ(r.processes.size(), 3u);
  EXPECT_EQ(r.processes[0].pid, uint32_t(getpid()));
  EXPECT_TRUE(r.processes[0].is_self);
  EXPECT_EQ(r.processes[0].used_bytes, 1u << 20);
  EXPECT_EQ(r.processes[1].pid, 4343u);
  EXPECT_EQ(r.processes[1].used_bytes, 2000u);
  EXPECT_FALSE(r.processes[1].is_self);
  EXPECT_EQ(r.processes[2].pid, 4242u);
  EXPECT_EQ(r.processes[2].name, "python3");
  const std::string text = describe_gpu_processes(r);
  EXPECT_EQ(text.rfind("this process holds 1.00 MiB (NVML); pid 4343 (", 0), 0u) << text;
  EXPECT_NE(text.find("; pid 4242 (python3) holds 1000 B"), std::string::npos) << text;
  const GpuProcessReport none = query_gpu_processes(7);
  EXPECT_FALSE(none.available);
  EXPECT_EQ(none.error, "NVML does not know device 7");
}

TEST(GpuProcesses, DescribeAnEmptyList) {
  GpuProcessReport r;
  r.available = true;
  EXPECT_EQ(describe_gpu_processes(r), "no process is listed on this device");
  GpuProcess p;
  p.pid = 77;
  r.processes.push_back(p);  // NVML would not say how much
  EXPECT_EQ(describe_gpu_processes(r), "pid 77 (?) holds an unknown amount");
}
