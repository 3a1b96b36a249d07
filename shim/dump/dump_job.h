// One dump, from the frozen state to the stderr line: what the writer thread
// runs (or the thread that asked, for signal and exit dumps, and when the
// writer cannot be started).
//
//   [failure, GPUMEMREC_RECOVERED=count] wait up to kVerdictGraceMs for the
//     verdict: a recovered episode gets no bundle at all;
//   write the bundle (outcome as known now), publish, prune, give the frozen
//     memory and the dump slot back;
//   [failure, outcome still unknown] wait for the verdict (the episode's
//     deadline, the program's exit, a fatal signal), then write its files
//     again with it, or remove the bundle if it recovered and is not kept;
//   one line on stderr.
#pragma once
#include <memory>
#include <cstdint>
#include <string>

#include "shim/dump/write/bundle_input.h"
#include "shim/dump/verdict/episodes.h"
#include "shim/dump/capture/freeze.h"

namespace gpumemrec {

struct Recorder;
class Symbolizer;

constexpr uint64_t kVerdictGraceMs = 200;

struct DumpJob {
  Recorder* recorder = nullptr;
  DumpReason reason = DumpReason::kNone;
  bool has_failure = false;
  FailureInfo failure;
  uint64_t episode = 0;  // failures only
  uint64_t failed_before = 0;
  uint64_t created_ns = 0;
  DeviceReport devices;  // asked on the failing thread (its context is the device's)
  int set = -1;          // the frozen regions (freeze.h)
  FrozenState frozen;
  std::atomic<bool>* awaiting_symbols = nullptr;  // see BundleInput
  uint64_t frozen_late_ns = 0;  // > 0: frozen this long after the failure (deferred, dumper.cpp)
  LiveAtFreeze live_at_freeze;  // the recorder's live counters, read right after the freeze
  // A framework_oom job's report (the framework's snapshot, up to 1 GiB):
  // moved out by the job when it fills its input, so that a finished set
  // does not pin it until its next use.
  mutable std::shared_ptr<const FrameworkReport> framework;
  model::SignalRequests signal_requests;  // signal dumps: the requests it serves
};

// What every job shares (dumper.cpp owns it).
struct DumpServices {
  Episodes* episodes = nullptr;
  Symbolizer* symbolizer = nullptr;
  WriteBuffer buffer;          // for the bundle's files (whoever holds the dump slot)
  WriteBuffer rewrite_buffer;  // for the verdict's rewrite (the writer, without the slot)
  std::atomic<int>* seq = nullptr;           // bundle sequence numbers
  std::atomic<bool>* program_ending = nullptr;  // exit() has begun
};

// `on_writer`: on the writer thread, which takes the dump slot itself
// around the writing and may wait for the verdict; else the caller holds
// the slot. Gives back the frozen set (the job belongs to it: valid until
// then) and the slot.
bool run_dump_job(const DumpJob& job, const DumpServices& s, bool on_writer);

// A recovered episode gets no bundle (GPUMEMREC_RECOVERED=count): said on
// stderr the first time.
void say_recovered_unwritten(const FailureInfo& f, const Verdict& v);

// One line on stderr that needs no memory at all (when even formatting a
// warning could fail).
void raw_warning(const char* a, const char* b = "", const char* c = "");

// "cudaMalloc(1024 bytes, 1.00 KiB) on device 0 failed with ... (2)".
std::string describe_failure(const FailureInfo& f);

}  // namespace gpumemrec
