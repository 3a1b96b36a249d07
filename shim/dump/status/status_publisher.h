// The status region of this process, for `gpumemrec top` (common/
// status_region.h; docs/design.md, "The status region"). Nothing on the
// intercepted calls: the peak keeper's thread, after its passes, at most
// every status::kUpdateNs, collects the figures (status_figures.h: under
// the pass lock), asks for the top stacks' names while a reader wants
// them (status_names.h: made on a thread of their own) and writes the
// region (status_writer.h) into its file
// (status_file.h), made at the first update after the process first held
// GPU memory (a process that never does publishes nothing).
#pragma once
#include <cstdint>

#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/status/status_file.h"

namespace gpumemrec {

struct Recorder;

// From the constructor (lifecycle.cpp), before the keeper starts: with
// GPUMEMREC_STATUS on, keeps what the region says of the process and
// registers the removal at exit. False when off.
bool status_start(Recorder* r, const StatusIdentity& id);
// The keeper's pass hooks (peak_keeper.h, PeakPassHooks).
void status_after_pass_locked(const PeakKept& kept, uint64_t now_ns);
void status_after_pass(uint64_t now_ns);
// exit(), _exit(): no more updates, the file removed. Async-signal-safe.
void status_stop();
// fork: an ASan build waits for an update in progress (asan_build.h); the
// child forgets the parent's region and makes its own at its first update.
void status_atfork_prepare();
void status_atfork_parent();
void status_atfork_child();

// Tests: the region, once made (null before, or when off or refused).
const status::Region* status_region_for_tests();

}  // namespace gpumemrec
