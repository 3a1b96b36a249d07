// The simulated NCCL across processes: ranks meet through the unique id's
// table, agree on the communicator, split it; wrong calls fail as NCCL's
// do, and a rank that dies ends its peers' wait instead of hanging them.
// Each rank is a forked child; its exit status is its result.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "selftest_nccl.h"

namespace {

float* const kBuf = reinterpret_cast<float*>(0x100000001000ull);

// Runs fn(i) in child i after `delay_ms * i`; the children's exit codes.
std::vector<int> run_children(int n, int delay_ms, const std::function<int(int)>& fn) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    if (i > 0 && delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const pid_t p = fork();
    if (p == 0) _exit(fn(i));
    pids.push_back(p);
  }
  std::vector<int> codes;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    codes.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  return codes;
}

// An id whose maker has exited: a wait that cannot complete fails instead
// of hanging.
ncclUniqueId orphan_id() {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  const pid_t p = fork();
  if (p == 0) {
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    (void)!write(fds[1], &id, sizeof id);
    _exit(0);
  }
  ncclUniqueId id{};
  CHECK_EQ(read(fds[0], &id, sizeof id), static_cast<long>(sizeof id));
  waitpid(p, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  return id;
}

// A rank of four: the communicator, its ring, then a split by parity in
// reverse key order (rank 3 in no group), sharing the parent's resources.
int four_ranks_rank(const Expect& e, const ncclUniqueId& id, int rank) {
  g_selftest_failures = 0;
  CHECK(set_device(rank));
  const uint64_t before = live_bytes(rank);
  ncclComm_t c = nullptr;
  CHECK_EQ(ncclCommInitRank(&c, 4, id, rank), ncclSuccess);
  int n = 0, r = -1;
  CHECK(ncclCommCount(c, &n) == ncclSuccess && ncclCommUserRank(c, &r) == ncclSuccess && n == 4 && r == rank);
  CHECK_EQ(ncclAllReduce(kBuf, kBuf, 1 << 20, ncclFloat32, ncclSum, c, nullptr), ncclSuccess);
  CHECK_EQ(live_bytes(rank) - before, e.init() + e.ring());
  ncclConfig_t config = config_initializer();
  config.splitShare = 1;
  ncclComm_t half = nullptr;
  const int color = rank == 3 ? NCCL_SPLIT_NOCOLOR : rank % 2;
  CHECK_EQ(ncclCommSplit(c, color, -rank, &half, &config), ncclSuccess);
  if (rank == 3) {
    CHECK(half == nullptr);
  } else {
    const int want = rank == 1 ? 1 : 2;  // {2, 0} and {1}
    CHECK(ncclCommCount(half, &n) == ncclSuccess && n == want);
    CHECK(ncclCommUserRank(half, &r) == ncclSuccess && r == (rank == 0 ? 1 : 0));
    CHECK_EQ(ncclAllReduce(kBuf, kBuf, 1 << 20, ncclFloat32, ncclSum, half, nullptr), ncclSuccess);
    CHECK_EQ(live_bytes(rank) - before, e.init() + e.ring() + e.init(true));  // the parent's connections
    CHECK_EQ(ncclCommDestroy(half), ncclSuccess);
  }
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  CHECK_EQ(live_bytes(rank), before);
  return g_selftest_failures == 0 ? 0 : 1;
}

int init_rc(const ncclUniqueId& id, int nranks, int rank, int device) {
  set_device(device);
  ncclComm_t c = nullptr;
  const ncclResult_t rc = ncclCommInitRank(&c, nranks, id, rank);
  if (rc == ncclSuccess) ncclCommDestroy(c);
  return rc;
}

}  // namespace

void test_ranks(const Expect& e) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  for (int code : run_children(4, 0, [&](int rank) { return four_ranks_rank(e, id, rank); })) CHECK_EQ(code, 0);

  // nranks that disagree: the later rank is refused; the earlier one's wait
  // ends when the id's maker is gone.
  id = orphan_id();
  auto codes = run_children(2, 100, [&](int i) { return init_rc(id, i == 0 ? 3 : 2, i, i); });
  CHECK(codes[0] == ncclRemoteError && codes[1] == ncclInvalidArgument);

  // The same rank twice.
  id = orphan_id();
  codes = run_children(2, 100, [&](int i) { return init_rc(id, 2, 0, i); });
  CHECK(codes[0] == ncclRemoteError && codes[1] == ncclInvalidUsage);

  // Two ranks on one device: "Duplicate GPU detected".
  ncclGetUniqueId(&id);
  codes = run_children(2, 0, [&](int i) { return init_rc(id, 2, i, 0); });
  CHECK(codes[0] == ncclInvalidUsage && codes[1] == ncclInvalidUsage);

  // A rank that joined and died: the waiting rank fails (ncclRemoteError).
  ncclGetUniqueId(&id);
  codes = run_children(2, 0, [&](int i) {
    if (i == 0) return init_rc(id, 3, 0, 0);
    ncclConfig_t config = config_initializer();
    config.blocking = 0;  // returns while its init thread waits in the rendezvous
    set_device(2);
    ncclComm_t c = nullptr;
    ncclCommInitRankConfig(&c, 3, id, 2, &config);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    raise(SIGKILL);
    return 0;
  });
  CHECK(codes[0] == ncclRemoteError && codes[1] == 128 + SIGKILL);
}
