// Deciding when to dump, and making sure a dump can be written when memory
// is short: the directory is prepared at start-up, one thread dumps at a time
// (a compare-and-swap guard, the others keep running), the bundle is written
// under a temporary name and renamed when complete.
#pragma once
#include <cstdint>

#include "shim/record/failure.h"

namespace gpumemrec {

struct Recorder;

void dumper_init(Recorder* r);   // from start-up (lifecycle.cpp): buffers, symbolizer
void dumper_start(Recorder* r);  // from start-up: atexit, exec
// Every out-of-memory failure comes here (episode logic, then maybe a dump).
void dumper_on_failure(const FailureInfo& f);
// Writes a bundle now (signal thread, exit); false if another dump runs or
// writing failed.
bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f);

// True while some thread writes a bundle.
bool dumper_busy();

void dumper_atfork_prepare();
void dumper_atfork_parent();
void dumper_atfork_child();

}  // namespace gpumemrec
