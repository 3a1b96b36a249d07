// Whether libgpumemrec.so can be preloaded into programs on this system,
// checked by `gpumemrec run` before it sets LD_PRELOAD (docs/compatibility.md,
// "A preload that never stops a program"). ld.so ignores, with one ERROR
// line, an LD_PRELOAD object it cannot open or that was built for another
// machine, but a glibc symbol version the running glibc lacks stops the
// program before main (glibc elf/dl-version.c: a missing non-weak version
// need is fatal). So the launcher looks first and leaves the preload out.
#pragma once

#include <string>

namespace gpumemrec::cli {

// "" when `library` can be preloaded here; otherwise why not, in words
// ("it is an ELF file for machine 183, this is 62", "it needs GLIBC_2.34,
// this system has glibc 2.31", "cannot read it: ...").
std::string preload_refusal(const std::string& library);

// Whether dotted version `need` ("2.34", "2.2.5") is newer than `have`.
bool glibc_version_newer(const std::string& need, const std::string& have);

}  // namespace gpumemrec::cli
