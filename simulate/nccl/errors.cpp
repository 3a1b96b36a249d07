// ncclGetErrorString, ncclGetLastError, ncclGetVersion and the WARN line.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "nccl/api.h"
#include "nccl/comm.h"

namespace sim::nccl {
namespace {

std::mutex g_last_mu;
// The text ncclGetLastError returns: never freed, so a pointer handed out
// stays readable (NCCL's ncclLastError is a static buffer of 1024 bytes).
char g_last[1024] = "";

}  // namespace

ncclResult_t fail(ncclComm* c, ncclResult_t rc, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(g_last_mu);
    snprintf(g_last, sizeof g_last, "%s", why.c_str());
  }
  if (getenv("NCCL_DEBUG") == nullptr) return rc;
  char host[64] = "localhost";
  gethostname(host, sizeof host - 1);
  char line[1200];
  const int n = snprintf(line, sizeof line, "%s:%d:%ld [%d] NCCL WARN %s\n", host, static_cast<int>(getpid()),
                         static_cast<long>(syscall(SYS_gettid)), c != nullptr ? c->device : 0, why.c_str());
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
  return rc;
}

}  // namespace sim::nccl

// src/init.cc ncclGetErrorString, word for word.
NCCL_SIM_API(const char*, GetErrorString, (ncclResult_t code)) {
  switch (code) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return "unknown result code";
  }
}

// The communicator is unused, as in NCCL 2.30 (one message for the process).
NCCL_SIM_API(const char*, GetLastError, (ncclComm_t)) {
  std::lock_guard<std::mutex> lock(sim::nccl::g_last_mu);
  return sim::nccl::g_last;
}

NCCL_SIM_API(ncclResult_t, GetVersion, (int* version)) {
  if (version == nullptr) return sim::nccl::fail(nullptr, ncclInvalidArgument, "GetVersion : version argument is NULL");
  *version = NCCL_SIM_VERSION_CODE;
  return ncclSuccess;
}
