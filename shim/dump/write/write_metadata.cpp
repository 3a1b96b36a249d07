// metadata.json: what failed, the live totals, and who else is on the GPU.
#include <unistd.h>

#include <cstdlib>
#include <initializer_list>

#include "common/card_accounting_json.h"
#include "shim/base/hook_table.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/dump/verdict/verdict_text.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

const char* failure_error_name(const BundleInput& in) {
  const FailureInfo* f = in.failure;
  if (!f) return "";
  const bool runtime_api = hook_info(f->api).library != Library::CUDA;
  return error_name(in.backend, runtime_api, f->result);
}

const char* failure_module(const BundleInput& in) {
  if (!in.failure) return "";
  switch (hook_info(in.failure->api).library) {
    case Library::CUDART: return "cuda_runtime";
    case Library::CUDA: return "cuda_driver";
    case Library::HIP: return "hip";
  }
  return "";
}

std::string failure_context(const BundleInput& in) {
  const FailureInfo* f = in.failure;
  if (!f) return std::string("dump on ") + dump_reason_name(in.reason);
  std::string ctx = std::string(hook_name(f->api)) + "(" + std::to_string(f->size) + ") on device " +
                    std::to_string(f->device) + " returned " + failure_error_name(in);
  if (in.reason == DumpReason::kLimit) ctx += " (refused by GPUMEMREC_LIMIT)";
  if (in.reason == DumpReason::kFailAfter) ctx += " (injected by GPUMEMREC_FAIL_AFTER)";
  return ctx;
}

namespace {

const char* first_env(std::initializer_list<const char*> names) {
  for (auto* n : names)
    if (const char* v = std::getenv(n)) return v;
  return nullptr;
}

void int_or_string(JsonWriter& w, const char* key, const char* v) {
  if (!v) return;
  w.Key(key);
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (*v && end && *end == '\0') w.Int64(n);
  else w.String(v);
}

// Made on gpumemrec's simulated card: which one (null on a real GPU).
void write_simulated(JsonWriter& w, const model::Metadata& m) {
  w.Key(key::kSimulated);
  if (!m.simulated) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key(key::kProfile); w.String(m.simulated->profile);
  w.Key(key::kName); w.String(m.simulated->name);
  w.Key(key::kDevices); w.Int(m.simulated->devices);
  w.EndObject();
}

void write_custom_metadata(JsonWriter& w) {
  w.Key(key::kCustomMetadata);
  w.StartObject();
  int_or_string(w, key::kRank, first_env({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}));
  int_or_string(w, key::kLocalRank, first_env({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}));
  int_or_string(w, key::kWorldSize, first_env({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}));
  if (const char* v = first_env({"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"})) {
    w.Key(key::kJobId);
    w.String(v);
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) {
    w.Key(key::kHostname);
    w.String(host);
  }
  w.EndObject();
}

void write_gpu_processes(JsonWriter& w, const GpuProcessReport& g) {
  w.Key(key::kGpuProcesses);
  if (g.available) {
    w.StartArray();
    for (const auto& p : g.processes) {
      w.StartObject();
      w.Key(key::kPid); w.Uint(p.pid);
      w.Key(key::kName); w.String(p.name);
      w.Key(key::kUsedBytes); p.has_used ? w.Uint64(p.used_bytes) : w.Null();
      w.Key(key::kThisProcess); w.Bool(p.is_self);
      w.EndObject();
    }
    w.EndArray();
  } else {
    w.Null();
  }
  w.Key(key::kGpuProcessesNote); w.String(g.available ? "from NVML" : g.error);
}

// Where each device's memory went (common/card_accounting.h): one object
// per device, common/card_accounting_json.h.
void write_device_accounting(JsonWriter& w, const model::Metadata& m) {
  w.Key(key::kDeviceAccounting);
  w.StartArray();
  for (const model::DeviceAccounting& a : m.device_accounting) model::write_device_accounting_json(w, a);
  w.EndArray();
}

// Signal bundles: the requests (handler runs) this bundle serves.
void write_signal_requests(JsonWriter& w, const model::Metadata& m) {
  if (!m.signal_requests) return;
  const model::SignalRequests& r = *m.signal_requests;
  w.Key(key::kSignalRequests);
  w.StartObject();
  w.Key(key::kSignal); w.Int(r.signal);
  w.Key(key::kCount); w.Uint64(r.count);
  w.Key(key::kFirstNs); w.Uint64(r.first_ns);
  w.Key(key::kLastNs); w.Uint64(r.last_ns);
  w.Key(key::kSenderPid); w.Int64(r.sender_pid);
  w.EndObject();
}

// Stormlog/gpumemprof's exception keys; null for signal and exit dumps.
void write_exception(JsonWriter& w, const BundleInput& in, const model::Metadata& m) {
  const bool f = in.failure != nullptr;
  w.Key(key::kExceptionType); f ? w.String(m.error_name) : w.Null();
  w.Key(key::kExceptionModule); f ? w.String(failure_module(in)) : w.Null();
  w.Key(key::kExceptionMessage); f ? w.String(m.context) : w.Null();
}

void write_recovery(JsonWriter& w, const model::Recovery& r) {
  w.StartObject();
  w.Key(key::kAfterMs); w.Double(r.after_ms);
  w.Key(key::kFreedBytes); w.Uint64(r.freed_bytes);
  w.Key(key::kRetrySize); w.Uint64(r.retry_size);
  w.Key(key::kRetryApi); w.String(r.retry_api);
  w.Key(key::kThreadId); w.Uint(r.thread_id);
  w.Key(key::kHandler);
  if (r.handler.empty()) w.Null();
  else w.String(r.handler);
  w.EndObject();
}

// The verdict (out-of-memory bundles only) and the recovered episodes that
// got no bundle (every bundle), from the model (dump_model.h,
// set_model_verdict); the framework's view first (write_framework.h).
void write_outcome(JsonWriter& w, const BundleInput& in, const model::Metadata& m) {
  write_framework_metadata(w, in);
  if (has_verdict(in)) {
    w.Key(key::kOutcome); w.String(m.outcome);
    w.Key(key::kOutcomeDetail); w.String(m.outcome_detail);
    w.Key(key::kRecovery);
    if (m.recovery) write_recovery(w, *m.recovery);
    else w.Null();
  }
  w.Key(key::kRecoveredFailures);
  w.StartObject();
  w.Key(key::kCount); w.Uint64(m.recovered_count);
  w.Key(key::kListed);
  w.StartArray();
  for (const model::RecoveredFailure& r : m.recovered_listed) {
    w.StartObject();
    w.Key(key::kTimestamp); w.Double(r.timestamp);
    w.Key(key::kDeviceId); w.Int(r.device_id);
    w.Key(key::kSize); w.Uint64(r.size);
    w.Key(key::kApi); w.String(r.api);
    w.Key(key::kThreadId); w.Uint(r.thread_id);
    w.Key(key::kStackId); w.Uint64(r.stack_id);
    w.Key(key::kAfterMs); w.Double(r.after_ms);
    w.Key(key::kFreedBytes); w.Uint64(r.freed_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

bool write_metadata_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kMetadata);
  if (file.ok()) {
    const model::Metadata& m = c.model.metadata;
    const bool f = c.in.failure != nullptr;
    JsonWriter w(file.out());
    w.StartObject();
    w.Key(key::kReason); w.String(m.reason);
    w.Key(key::kApi); f ? w.String(m.api) : w.Null();
    w.Key(key::kErrorCode); f ? w.Int64(m.error_code) : w.Null();
    w.Key(key::kErrorName); f ? w.String(m.error_name) : w.Null();
    w.Key(key::kRequestedBytes); f ? w.Uint64(m.requested_bytes) : w.Null();
    w.Key(key::kDeviceId); f || m.device_id >= 0 ? w.Int(m.device_id) : w.Null();  // framework_oom: the framework's
    w.Key(key::kDeviceFreeBytes); m.device_free_bytes ? w.Uint64(*m.device_free_bytes) : w.Null();
    w.Key(key::kDeviceTotalBytes); m.device_total_bytes ? w.Uint64(*m.device_total_bytes) : w.Null();
    w.Key(key::kLiveBytes); w.Uint64(m.live_bytes);
    w.Key(key::kLiveAllocations); w.Uint64(m.live_allocations);
    w.Key(key::kLiveBytesByDevice);
    w.StartObject();
    for (auto& kv : m.live_bytes_by_device) {
      w.Key(std::to_string(kv.first).c_str());
      w.Uint64(kv.second);
    }
    w.EndObject();
    w.Key(key::kThreadId); f ? w.Uint(m.thread_id) : w.Uint(current_tid());
    w.Key(key::kStackId); w.Uint64(m.stack_id);
    w.Key(key::kContext); w.String(m.context);
    write_exception(w, c.in, m);
    w.Key(key::kBackend); w.String(m.backend);
    write_simulated(w, m);
    w.Key(key::kPid); w.Int(getpid());
    w.Key(key::kCapturedEventCount); w.Uint64(m.captured_event_count);
    w.Key(key::kTotalEventCount); w.Uint64(m.total_event_count);
    w.Key(key::kFailedCallsBeforeDump); w.Uint64(m.failed_calls_before_dump);
    if (m.frozen_after_failure_ms > 0) {
      w.Key(key::kFrozenAfterFailureMs); w.Double(m.frozen_after_failure_ms);
    }
    write_signal_requests(w, m);
    write_outcome(w, c.in, m);
    w.Key(key::kTimestamp); w.Double(m.timestamp);
    write_gpu_processes(w, c.in.gpu_processes);
    write_device_accounting(w, m);
    write_custom_metadata(w);
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
