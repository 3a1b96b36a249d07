#include "shim/base/privilege.h"

#include <sys/auxv.h>
#include <unistd.h>

namespace gpumemrec {

bool privileged_decision(uid_t ruid, uid_t euid, gid_t rgid, gid_t egid, unsigned long at_secure) {
  return ruid != euid || rgid != egid || at_secure != 0;
}

bool process_is_privileged() {
  return privileged_decision(getuid(), geteuid(), getgid(), getegid(), getauxval(AT_SECURE));
}

}  // namespace gpumemrec
