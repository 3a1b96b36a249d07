// Every JSON key of every bundle file (docs/bundle-format.md), spelled once.
// The shim's writers (shim/dump/write/) and the tools' reader
// (common/bundle_read_*.cpp) both name a key as key::kName; a key literal
// anywhere else fails tests/lint/check_schema_keys.py, and a key missing from
// docs/bundle-format.md fails it too.
//
// Adding a key: one line below (X(kIdentifier, "json_name"), in its file's
// group; a name shared by several files is listed once, at its first file),
// then write it (shim/dump/write/), read it (common/bundle_read_*.cpp) and
// document it (docs/bundle-format.md).
#pragma once

#define GPUMEMREC_BUNDLE_KEYS(X)                                                   \
  /* manifest.json */                                                             \
  X(kSchemaVersion, "schema_version")                                             \
  X(kBundleName, "bundle_name")                                                   \
  X(kCreatedAtUtc, "created_at_utc")                                              \
  X(kReason, "reason")                                                            \
  X(kBackend, "backend")                                                          \
  X(kOutcome, "outcome")                                                          \
  X(kEventCount, "event_count")                                                   \
  X(kFiles, "files")                                                              \
  X(kGenerator, "generator")                                                      \
  X(kPid, "pid")                                                                  \
  /* events.json */                                                               \
  X(kSeq, "seq")                                                                  \
  X(kTimestamp, "timestamp")                                                      \
  X(kEventType, "event_type")                                                     \
  X(kMemoryAllocated, "memory_allocated")                                         \
  X(kMemoryReserved, "memory_reserved")                                           \
  X(kMemoryChange, "memory_change")                                               \
  X(kDeviceId, "device_id")                                                       \
  X(kContext, "context")                                                          \
  X(kApi, "api")                                                                  \
  X(kMemoryType, "memory_type")                                                   \
  X(kAddress, "address")                                                          \
  X(kSize, "size")                                                                \
  X(kResult, "result")                                                            \
  X(kThreadId, "thread_id")                                                       \
  X(kStackId, "stack_id")                                                         \
  X(kDurationNs, "duration_ns")                                                   \
  X(kStream, "stream")                                                            \
  X(kTimestampNs, "timestamp_ns")                                                 \
  X(kDeviceTotal, "device_total")                                                 \
  X(kDeviceFree, "device_free")                                                   \
  X(kRank, "rank")                                                                \
  X(kLocalRank, "local_rank")                                                     \
  X(kWorldSize, "world_size")                                                     \
  X(kJobId, "job_id")                                                             \
  /* metadata.json */                                                             \
  X(kErrorCode, "error_code")                                                     \
  X(kErrorName, "error_name")                                                     \
  X(kRequestedBytes, "requested_bytes")                                           \
  X(kDeviceFreeBytes, "device_free_bytes")                                        \
  X(kDeviceTotalBytes, "device_total_bytes")                                      \
  X(kLiveBytes, "live_bytes")                                                     \
  X(kLiveAllocations, "live_allocations")                                         \
  X(kLiveBytesByDevice, "live_bytes_by_device")                                   \
  X(kExceptionType, "exception_type")                                             \
  X(kExceptionModule, "exception_module")                                         \
  X(kExceptionMessage, "exception_message")                                       \
  X(kCapturedEventCount, "captured_event_count")                                  \
  X(kTotalEventCount, "total_event_count")                                        \
  X(kFailedCallsBeforeDump, "failed_calls_before_dump")                           \
  X(kFrozenAfterFailureMs, "frozen_after_failure_ms")                             \
  X(kSignalRequests, "signal_requests")                                           \
  X(kSignal, "signal")                                                            \
  X(kFirstNs, "first_ns")                                                         \
  X(kLastNs, "last_ns")                                                           \
  X(kSenderPid, "sender_pid")                                                     \
  X(kOutcomeDetail, "outcome_detail")                                             \
  X(kRecovery, "recovery")                                                        \
  X(kAfterMs, "after_ms")                                                         \
  X(kFreedBytes, "freed_bytes")                                                   \
  X(kRetrySize, "retry_size")                                                     \
  X(kRetryApi, "retry_api")                                                       \
  X(kHandler, "handler")                                                          \
  X(kRecoveredFailures, "recovered_failures")                                     \
  X(kCount, "count")                                                              \
  X(kListed, "listed")                                                            \
  X(kGpuProcesses, "gpu_processes")                                               \
  X(kName, "name")                                                                \
  X(kUsedBytes, "used_bytes")                                                     \
  X(kThisProcess, "this_process")                                                 \
  X(kGpuProcessesNote, "gpu_processes_note")                                      \
  X(kCustomMetadata, "custom_metadata")                                           \
  X(kSimulated, "simulated")                                                      \
  X(kProfile, "profile")                                                          \
  X(kHostname, "hostname")                                                        \
  X(kDeviceAccounting, "device_accounting")                                       \
  X(kDevice, "device")                                                            \
  X(kFreeBytes, "free_bytes")                                                     \
  X(kRecordedLiveBytes, "recorded_live_bytes")                                    \
  X(kRecordedByLibrary, "recorded_by_library")                                    \
  X(kProcessUnrecordedBytes, "process_unrecorded_bytes")                          \
  X(kOtherProcesses, "other_processes")                                           \
  X(kUnaccountedBytes, "unaccounted_bytes")                                       \
  X(kNote, "note")                                                                \
  /* metadata.json framework, and framework.json (the Python hook's digest) */ \
  X(kFramework, "framework")                                                      \
  X(kRequestBytes, "request_bytes")                                               \
  X(kReservedBytes, "reserved_bytes")                                             \
  X(kAllocatedBytes, "allocated_bytes")                                           \
  X(kLargestFreeBlock, "largest_free_block")                                      \
  X(kSegmentCount, "segment_count")                                               \
  X(kMostlyFreeSegmentCount, "mostly_free_segment_count")                         \
  X(kMostlyFreeBytes, "mostly_free_bytes")                                        \
  X(kMostlyFreeSegments, "mostly_free_segments")                                  \
  X(kTotalSize, "total_size")                                                     \
  X(kAllocatedSize, "allocated_size")                                             \
  X(kError, "error")                                                              \
  X(kStateFile, "state_file")                                                     \
  X(kRetryHandler, "retry_handler")                                               \
  /* stacks.json */                                                               \
  X(kPython, "python")                                                            \
  X(kFrames, "frames")                                                            \
  X(kKind, "kind")                                                                \
  X(kModule, "module")                                                            \
  X(kOffset, "offset")                                                            \
  X(kFunction, "function")                                                        \
  X(kFile, "file")                                                                \
  X(kLine, "line")                                                                \
  X(kSiteFrame, "site_frame")                                                     \
  X(kLibrary, "library")                                                          \
  X(kPythonThread, "python_thread")                                               \
  X(kPythonBorrow, "python_borrow")                                               \
  X(kAutogradNode, "autograd_node")                                               \
  /* environment.json */                                                          \
  X(kCwd, "cwd")                                                                  \
  X(kPpid, "ppid")                                                                \
  X(kCmdline, "cmdline")                                                          \
  X(kUid, "uid")                                                                  \
  X(kDriverVersion, "driver_version")                                             \
  X(kRuntimeVersion, "runtime_version")                                           \
  X(kDevices, "devices")                                                          \
  X(kTotalBytes, "total_bytes")                                                   \
  X(kModules, "modules")                                                          \
  X(kSystem, "system")                                                            \
  X(kPlatform, "platform")                                                        \
  X(kArchitecture, "architecture")                                                \
  X(kKernelRelease, "kernel_release")                                             \
  X(kDetectedBackend, "detected_backend")                                         \
  X(kGpuCount, "gpu_count")                                                       \
  X(kGpuName, "gpu_name")                                                         \
  X(kCpuCount, "cpu_count")                                                       \
  X(kMemoryTotal, "memory_total")                                                 \
  X(kEnv, "env")                                                                  \
  X(kConfig, "config")                                                            \
  X(kDir, "dir")                                                                  \
  X(kRingEvents, "ring_events")                                                   \
  X(kStackDepth, "stack_depth")                                                   \
  X(kEpisodeMs, "episode_ms")                                                     \
  X(kMaxDumps, "max_dumps")                                                       \
  X(kMaxTotalMb, "max_total_mb")                                                  \
  X(kPythonStacks, "python_stacks")                                               \
  X(kSymbolizer, "symbolizer")                                                    \
  X(kUnwinder, "unwinder")                                                        \
  /* peak.json */                                                                 \
  X(kSchema, "schema")                                                            \
  X(kPeakBytes, "peak_bytes")                                                     \
  X(kPeakTimeNs, "peak_time_ns")                                                  \
  X(kPeakSeq, "peak_seq")                                                         \
  X(kExact, "exact")                                                              \
  X(kWhyInexact, "why_inexact")                                                   \
  X(kLiveNowBytes, "live_now_bytes")                                              \
  X(kEventsReplayed, "events_replayed")                                           \
  X(kSites, "sites")                                                              \
  X(kBytes, "bytes")                                                              \
  X(kPeakUntilNs, "peak_until_ns")                                                \
  X(kByLibrary, "by_library")                                                     \
  X(kAfterGap, "after_gap")                                                       \
  X(kGaps, "gaps")                                                                \
  X(kLostEvents, "lost_events")                                                   \
  X(kFromSeq, "from_seq")                                                         \
  X(kFromTimeNs, "from_time_ns")                                                  \
  X(kStartBytes, "start_bytes")                                                   \
  X(kRoles, "roles")                                                              \
  X(kKnown, "known")                                                              \
  X(kWhyNotKnown, "why_not_known")                                                \
  X(kWalk, "walk")                                                                \
  X(kWalkStatus, "walk_status")                                                   \
  X(kWalkTimeNs, "walk_time_ns")

namespace gpumemrec::key {

#define GPUMEMREC_KEY_CONSTANT(id, name) inline constexpr char id[] = name;
GPUMEMREC_BUNDLE_KEYS(GPUMEMREC_KEY_CONSTANT)
#undef GPUMEMREC_KEY_CONSTANT

// Every key, for tests and tables.
inline constexpr const char* kAll[] = {
#define GPUMEMREC_KEY_NAME(id, name) name,
    GPUMEMREC_BUNDLE_KEYS(GPUMEMREC_KEY_NAME)
#undef GPUMEMREC_KEY_NAME
};

}  // namespace gpumemrec::key
