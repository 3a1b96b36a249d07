// Memory by role at the peak (peak.json `roles`; docs/design.md, "Roles at
// the peak").
//
// The Python hook's walk (roles.py) names the framework's storages by role
// at one moment only: an out-of-memory or the interpreter's exit. The peak
// is earlier, and at the peak no walk ran. What is known exactly: the
// device's total was the peak over one stretch, from the peak's moment P
// (the latest that reached it) to the first decrease after it (or the cut);
// no allocation or free changed the total in between (a decrease would end
// it, an increase would be a higher or later peak), so every allocation the
// recorder saw live at P was live, the same allocation, all through the
// stretch. A walk inside that stretch (P <= its snapshot, its end before the
// decrease) is a moment of the peak: its roles, with what the framework does
// not hold (other libraries' own memory: outside_framework = the peak minus
// the roles' sum), are the peak's bytes by role, exactly, at that moment.
//
// What is not known: inside a framework's cached segments blocks come and go
// without the recorder seeing them (the caching allocator reuses its cache),
// so at another moment of the same stretch the roles may differ (activations
// during a step, the optimizer state made into the cache after the peak). A
// walk outside the stretch says nothing about the peak: its storages may
// have been made into memory that was cache at the peak. Then `known` is
// false with why; the walk's own figures stay in framework.json.
#pragma once
#include "shim/dump/capture/framework_report.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/capture/peak_finish.h"

namespace gpumemrec {

// After finish_peak_live (wall times): the walk of `fw` (null: none) against
// the peak of the device it walked.
void add_peak_roles(const FrameworkReport* fw, const FrozenState& frozen, PeakReport* out);

}  // namespace gpumemrec
