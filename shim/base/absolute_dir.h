// GPUMEMREC_DIR given relative is resolved against the working directory at
// start-up, so that a program that chdir()s before it runs out of memory
// still writes where it was started. Only the string is made absolute (no
// symlink is resolved: the dump path checks the last component itself).
#pragma once
#include <string>

namespace gpumemrec {

// `dir` if already absolute; cwd + "/" + dir otherwise (a leading "./" is
// dropped). When getcwd fails, `dir` unchanged and *why says so.
std::string absolute_dump_dir(const std::string& dir, std::string* why);

}  // namespace gpumemrec
