// Deciding when to dump, and making sure a dump can be written when memory
// is short: the directory is prepared at start-up, one thread dumps at a time
// (a compare-and-swap guard, the others keep running), the bundle is written
// under a temporary name and renamed when complete.
#pragma once
#include <cstdint>

#include "shim/hooks.h"

namespace gpumemrec {

struct Recorder;
enum class DumpReason : uint8_t;

struct FailureInfo {
  HookId api;
  int device = -1;
  uint64_t size = 0;
  int result = 0;
  uint64_t seq = 0;
  uint32_t stack_id = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  DumpReason reason;
};

void dumper_init(Recorder* r);   // from init: no loader calls, no threads
void dumper_start(Recorder* r);  // from the constructor: signal, atexit, exec
// Every out-of-memory failure comes here (episode logic, then maybe a dump).
void dumper_on_failure(Recorder* r, const FailureInfo& f);
// Writes a bundle now (signal thread, exit); false if another dump runs or
// writing failed.
bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f);

// True while some thread writes a bundle.
bool dumper_busy();

void dumper_atfork_prepare();
void dumper_atfork_parent();
void dumper_atfork_child();

}  // namespace gpumemrec
