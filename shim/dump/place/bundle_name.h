// Bundle names (docs/bundle-format.md):
//   oom_dump_<YYYYmmddTHHMMSSZ>_<pid>_<backend>_<seq>_<host>_<random>
// The first five fields are gpumemprof's; <host> (the host name, characters
// other than [A-Za-z0-9.-] replaced by '-', at most 64) and <random> (8 hex
// digits from getrandom(2)) make names unique across hosts and PID
// namespaces sharing one directory (two containers whose processes both have
// pid 1 and fail in the same second).
//
// A name is claimed by creating its temporary directory ".tmp-<name>" with
// mkdir (atomic, fails with EEXIST when taken) while no bundle of that name
// exists; a collision retries with a fresh random part, so no bundle is lost
// to one. The rename into place never replaces an existing directory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/event.h"

namespace gpumemrec {

// The host part: gethostname() made safe for a file name ("host" if empty).
std::string bundle_host_part();
// 8 lowercase hex digits; getrandom(2), else the clock and thread id.
std::string bundle_random_part();
std::string make_bundle_name(uint64_t realtime_ns, Backend backend, int seq, const std::string& host,
                             const std::string& random);

// Creates ".tmp-<name>" in dirfd for a fresh name; on success fills *name and
// tmp (".tmp-" + *name) and returns 0, otherwise returns the errno of the last
// mkdir (after up to 16 attempts on collisions). `random` is for tests.
int claim_bundle_name(int dirfd, uint64_t realtime_ns, Backend backend, int seq, std::string* name, char* tmp,
                      size_t tmp_size, std::string (*random)() = bundle_random_part);

// The gate every new temporary directory passes. When the exit wait gives up
// (the process is ending and its bundle is lost) it removes the process's
// temporary directories; a writer that had not created its directory yet
// would otherwise create it afterwards, while exit() runs, and leave it
// behind. close_tmp_gate() shuts the gate (a later claim fails with
// ECANCELED, creating nothing) and waits, at most max_ms, for a claim already
// past the gate to finish its mkdir, so that the removal that follows sees
// it. Returns false when that wait ran out (or this thread is the one inside
// the gate: a signal handler that interrupted its own claim).
// Async-signal-safe: atomics and nanosleep only.
bool close_tmp_gate(unsigned max_ms);
// In a forked child: the parent's gate, closed or not, is not the child's.
void reopen_tmp_gate_after_fork();

// renameat2(RENAME_NOREPLACE) where the kernel and file system support it,
// else renameat (which fails anyway on a non-empty target). 0 or errno.
int rename_bundle_into_place(int dirfd, const char* tmp, const char* name);

}  // namespace gpumemrec
