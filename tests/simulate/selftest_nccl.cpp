// Self-test of the simulated libnccl.so.2 in one process: the API's answers
// and errors, and the device memory a communicator takes, checked against
// NCCL 2.30.7's figures (selftest_nccl.h) and the simulated driver's ledger.
//
// Usage: selftest_nccl h100|h100-read|pcie [oom]
//   h100: GPUMEMREC_SIMULATE=h100-80gb; h100-read: the same with
//   NCCL_P2P_READ_ENABLE=1; pcie: the Fake GPU
//   oom: only the out-of-memory case (run with a small FAKEGPU_CAPACITY)
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "selftest_nccl.h"

extern "C" ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);  // not modeled

namespace {

constexpr size_t kCount = 1 << 20;
float* const kBuf = reinterpret_cast<float*>(0x100000001000ull);  // never read: kernels are not run

ncclComm_t clique(ncclComm_t comms[2]) {
  CHECK_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  return comms[0];
}

void test_version_and_errors() {
  int v = 0;
  CHECK_EQ(ncclGetVersion(&v), ncclSuccess);
  CHECK_EQ(v, 23007);
  CHECK(strcmp(ncclGetErrorString(ncclInvalidUsage), "invalid usage (run with NCCL_DEBUG=WARN for details)") == 0);
  CHECK(strcmp(ncclGetErrorString(static_cast<ncclResult_t>(42)), "unknown result code") == 0);
  CHECK_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  CHECK(strstr(ncclGetLastError(nullptr), "version") != nullptr);
}

void test_single_rank(const Expect& e) {
  CHECK(set_device(0));
  const uint64_t before = live_bytes(0);
  ncclUniqueId id;
  CHECK_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  CHECK_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  int n = -1, dev = -1, rank = -1;
  CHECK(ncclCommCount(c, &n) == ncclSuccess && ncclCommCuDevice(c, &dev) == ncclSuccess &&
        ncclCommUserRank(c, &rank) == ncclSuccess);
  CHECK(n == 1 && dev == 0 && rank == 0);
  CHECK_EQ(live_bytes(0) - before, e.init());
  uint64_t total = 0, persist = 0;
  CHECK(ncclCommMemStats(c, ncclStatGpuMemTotal, &total) == ncclSuccess &&
        ncclCommMemStats(c, ncclStatGpuMemPersist, &persist) == ncclSuccess);
  CHECK_EQ(total, e.init());
  CHECK_EQ(persist, 4 * kMiB);  // devCommSetup's two
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(0) - before, e.init());  // one rank: no ring to connect
  CHECK_EQ(ncclCommSuspend(c, 1), ncclInvalidUsage);  // not modeled: one line on stderr
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  CHECK_EQ(live_bytes(0), before);
}

void test_connections(const Expect& e) {
  const uint64_t b0 = live_bytes(0), b1 = live_bytes(1);
  ncclComm_t comms[2] = {};
  ncclComm_t c = clique(comms);
  CHECK_EQ(live_bytes(0) - b0, e.init());
  CHECK_EQ(live_bytes(1) - b1, e.init());
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclBfloat16, ncclAvg, c, nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(0) - b0, e.init() + e.ring());
  CHECK_EQ(ncclAllGather(kBuf, kBuf, kCount, ncclFloat32, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclReduceScatter(kBuf, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclBroadcast(kBuf, kBuf, kCount, ncclFloat32, 1, c, nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(0) - b0, e.init() + e.ring());  // the ring is connected once
  // Inside a group the connections wait for ncclGroupEnd.
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, comms[1], nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(1) - b1, e.init());
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK_EQ(live_bytes(1) - b1, e.init() + e.ring());
  // Point to point: per_peer channels to the peer, each way once.
  CHECK_EQ(ncclSend(kBuf, kCount, ncclFloat32, 1, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclSend(kBuf, kCount, ncclFloat32, 1, c, nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(0) - b0, e.init() + e.ring() + e.per_peer * e.send);
  CHECK_EQ(ncclRecv(kBuf, kCount, ncclFloat32, 1, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclSend(kBuf, kCount, ncclFloat32, 0, c, nullptr), ncclSuccess);  // to itself: a copy
  const uint64_t p2p = e.per_peer * (e.send + e.recv);
  CHECK_EQ(live_bytes(0) - b0, e.init() + e.ring() + p2p);
  CHECK_EQ(ncclAlltoAll(kBuf, kBuf, kCount, ncclFloat32, comms[1], nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(1) - b1, e.init() + e.ring() + p2p);
  uint64_t total = 0;
  CHECK_EQ(ncclCommMemStats(c, ncclStatGpuMemTotal, &total), ncclSuccess);
  CHECK_EQ(total, live_bytes(0) - b0);
  CHECK(ncclCommDestroy(comms[0]) == ncclSuccess && ncclCommDestroy(comms[1]) == ncclSuccess);
  CHECK(live_bytes(0) == b0 && live_bytes(1) == b1);
}

void test_bad_arguments() {
  ncclComm_t comms[2] = {};
  ncclComm_t c = clique(comms);
  int junk = 0;
  auto bogus = reinterpret_cast<ncclComm_t>(&junk);
  int n = 0;
  CHECK_EQ(ncclCommCount(bogus, &n), ncclInvalidArgument);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, bogus, nullptr), ncclInvalidArgument);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, static_cast<ncclDataType_t>(12), ncclSum, c, nullptr),
           ncclInvalidArgument);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, static_cast<ncclRedOp_t>(5), c, nullptr),
           ncclInvalidArgument);
  CHECK_EQ(ncclAllReduce(nullptr, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclInvalidArgument);
  CHECK_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclBroadcast(kBuf, kBuf, kCount, ncclFloat32, 2, c, nullptr), ncclInvalidArgument);
  CHECK_EQ(ncclSend(kBuf, kCount, ncclFloat32, -1, c, nullptr), ncclInvalidArgument);
  float scalar = 0.5f;
  ncclRedOp_t op;
  CHECK_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, c), ncclSuccess);
  CHECK(op >= ncclNumOps);
  CHECK_EQ(ncclReduceScatter(kBuf, kBuf, kCount, ncclFloat32, op, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclRedOpDestroy(op, c), ncclSuccess);
  CHECK_EQ(ncclRedOpDestroy(op, c), ncclInvalidArgument);
  CHECK_EQ(ncclRedOpDestroy(ncclSum, c), ncclInvalidArgument);
  CHECK_EQ(ncclGroupEnd(), ncclInvalidUsage);
  ncclUniqueId zeros{};
  ncclComm_t out = nullptr;
  CHECK_EQ(ncclCommInitRank(&out, 2, zeros, 0), ncclInvalidArgument);
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  CHECK_EQ(ncclCommInitRank(&out, 2, id, 2), ncclInvalidArgument);
  ncclConfig_t config{};  // not NCCL_CONFIG_INITIALIZER
  CHECK_EQ(ncclCommInitRankConfig(&out, 1, id, 0, &config), ncclInvalidArgument);
  CHECK(out == nullptr);
  CHECK_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(bogus), ncclInvalidArgument);
  CHECK(ncclCommDestroy(comms[0]) == ncclSuccess && ncclCommDestroy(comms[1]) == ncclSuccess);
}

// ncclMemAlloc: cuMem at the recommended granularity.
void test_mem_alloc() {
  CHECK(set_device(1));
  const uint64_t before = live_bytes(1);
  void* p = nullptr;
  CHECK_EQ(ncclMemAlloc(&p, 1000), ncclSuccess);
  CHECK(p != nullptr);
  CHECK_EQ(live_bytes(1) - before, 2 * kMiB);
  void* q = nullptr;
  CHECK_EQ(ncclMemAlloc(&q, 5 * kMiB + 1), ncclSuccess);
  CHECK_EQ(live_bytes(1) - before, 2 * kMiB + 6 * kMiB);
  CHECK(ncclMemFree(p) == ncclSuccess && ncclMemFree(q) == ncclSuccess);
  CHECK_EQ(live_bytes(1), before);
  CHECK_EQ(ncclMemFree(kBuf), ncclUnhandledCudaError);
  CHECK_EQ(ncclMemFree(nullptr), ncclSuccess);
  CHECK_EQ(ncclMemAlloc(nullptr, 8), ncclUnhandledCudaError);
  CHECK(set_device(0));
}

// NCCL_BUFFSIZE: 1 MiB of SIMPLE buffer makes the receive side 4096 +
// 512 KiB + 4800 KiB + 1 MiB, four 2 MiB granules.
void test_buffsize(const Expect& e) {
  setenv("NCCL_BUFFSIZE", "1048576", 1);
  const uint64_t b0 = live_bytes(0);
  ncclComm_t comms[2] = {};
  ncclComm_t c = clique(comms);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  const uint64_t recv = e.recv == 6 * kMiB ? 6 * kMiB : 8 * kMiB;  // read mode keeps SIMPLE on the sender
  const uint64_t send = 2 * kMiB;
  CHECK_EQ(live_bytes(0) - b0, e.init() + e.channels * (recv + send));
  CHECK(ncclCommDestroy(comms[0]) == ncclSuccess && ncclCommDestroy(comms[1]) == ncclSuccess);
  unsetenv("NCCL_BUFFSIZE");
}

// A nonblocking communicator: ncclInProgress, then ncclCommGetAsyncError
// says when it is ready (what PyTorch's waitUntilInitialized polls).
void test_nonblocking() {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclConfig_t config = config_initializer();
  config.blocking = 0;
  ncclComm_t c = nullptr;
  const ncclResult_t rc = ncclCommInitRankConfig(&c, 1, id, 0, &config);
  CHECK(rc == ncclInProgress || rc == ncclSuccess);
  CHECK(c != nullptr);
  ncclResult_t state = ncclInProgress;
  for (int i = 0; i < 5000 && state == ncclInProgress; ++i) {
    CHECK_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK_EQ(state, ncclSuccess);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

// NVIDIA's exports: nccl<Name> is the weak alias of pnccl<Name>.
void test_aliases() {
  void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  CHECK(h != nullptr);
  if (h == nullptr) return;
  for (const char* name : {"AllReduce", "CommInitRankConfig", "GetErrorString", "MemAlloc", "GroupEnd"}) {
    void* a = dlsym(h, (std::string("nccl") + name).c_str());
    void* b = dlsym(h, (std::string("pnccl") + name).c_str());
    CHECK(a != nullptr && a == b);
  }
  dlclose(h);
}

// Out of memory at the ring's connection: the call fails as NCCL's does
// (ncclUnhandledCudaError, "Failed to CUDA calloc"), and the communicator
// gives back everything at destroy.
void test_out_of_memory(const Expect& e) {
  const uint64_t b0 = live_bytes(0);
  ncclComm_t comms[2] = {};
  ncclComm_t c = clique(comms);
  CHECK_EQ(live_bytes(0) - b0, e.init());
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, kCount, ncclFloat32, ncclSum, c, nullptr), ncclUnhandledCudaError);
  CHECK(strstr(ncclGetLastError(c), "Failed to CUDA calloc") != nullptr);
  CHECK(ncclCommDestroy(comms[0]) == ncclSuccess && ncclCommDestroy(comms[1]) == ncclSuccess);
  CHECK_EQ(live_bytes(0), b0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string card = argc > 1 ? argv[1] : "";
  const Expect& e = card == "h100" ? kH100 : card == "h100-read" ? kH100Read : kPcie;
  if (card != "h100" && card != "h100-read" && card != "pcie") {
    fprintf(stderr, "usage: selftest_nccl h100|h100-read|pcie [oom]\n");
    return 2;
  }
  CHECK(set_device(0));
  if (argc > 2 && strcmp(argv[2], "oom") == 0) {
    test_out_of_memory(e);
    return selftest_finish("selftest_nccl oom");
  }
  test_version_and_errors();
  test_single_rank(e);
  test_connections(e);
  test_bad_arguments();
  test_mem_alloc();
  test_buffsize(e);
  test_nonblocking();
  test_aliases();
  test_ranks(e);
  return selftest_finish("selftest_nccl");
}
