// A framework's own view at its out-of-memory, handed over by the Python
// start-up hook (docs/python-hook.md) through gpumemrec_framework_oom():
// a digest (framework.json) and the framework's own state file
// (PyTorch: framework_state.pickle, torch.cuda.memory._snapshot(); JAX:
// framework_memory_profile.pb.gz, jax.profiler.device_memory_profile()).
//
// Up to four reports are held, each for the bundle of its episode (or,
// episode 0, the framework_oom bundle being written for it); the writer
// takes it. Never on the hot path: a spin lock around four pointers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "common/framework_digest.h"

namespace gpumemrec {

struct FrameworkReport {
  std::string digest;      // framework.json: the hook's JSON object, validated, verbatim
  FrameworkDigest fields;  // read from it, for metadata.json and summary.txt
  std::string state_name;  // framework_state_name_ok
  std::string state;       // its bytes (may be empty: the framework could not give it)
  uint64_t episode = 0;    // the driver-level episode it closes; 0 = a bundle of its own
};

// The state file names a report may carry (nothing else is written).
bool framework_state_name_ok(const std::string& name);

// A report of the digest's bytes (copied, checked: a JSON object naming
// its framework), or null and *why (none, over max_bytes, not a digest).
std::shared_ptr<FrameworkReport> framework_report_from_digest(const char* digest, size_t len, size_t max_bytes,
                                                              std::string* why);

// Holds `r` (replacing a report of the same episode not taken; when four
// episodes' reports are held, one of them, each slot in turn).
void framework_report_put(std::shared_ptr<const FrameworkReport> r);
// The held report for `episode` (0: the framework_oom bundle's), taken.
std::shared_ptr<const FrameworkReport> framework_report_take(uint64_t episode);
// The device of the held report for `episode`, -1 when none (not taken).
int framework_report_device(uint64_t episode);
// The digest the hook hands over at the interpreter's exit
// (gpumemrec_framework_exit, framework_exit.cpp): the latest is kept, and
// every later exit or signal bundle without a report of its own writes it
// as framework.json (not taken: a signal bundle before the exit bundle
// leaves it for that one).
void framework_exit_put(std::shared_ptr<const FrameworkReport> r);
std::shared_ptr<const FrameworkReport> framework_exit_get();
// The report or exit digest handed over last, taken or not (the status
// region's roles: shim/dump/status/).
std::shared_ptr<const FrameworkReport> framework_report_latest();
void framework_report_atfork_child();

}  // namespace gpumemrec
