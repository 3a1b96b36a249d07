// Refusing to run in a privileged (setuid / setgid / file-capability) process.
// Checked by the first call that could initialise the recorder, whether that
// is our constructor or a hook that runs before it.
#pragma once
#include <sys/types.h>

namespace gpumemrec {

// The decision, separated from the system calls so it can be unit-tested.
// at_secure is getauxval(AT_SECURE): the kernel sets it for every exec that
// changed credentials (setuid, setgid, file capabilities), even when the
// program later makes its real and effective ids equal again.
bool privileged_decision(uid_t ruid, uid_t euid, gid_t rgid, gid_t egid, unsigned long at_secure);

// privileged_decision() for this process, now.
bool process_is_privileged();

}  // namespace gpumemrec
