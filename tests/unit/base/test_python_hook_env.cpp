// The Python start-up hook's injection: which command lines let CPython run
// site and read PYTHONPATH (no -I, -E, -S among the interpreter's options),
// read as CPython's own parser reads them (Python/getopt.c).
#include <gtest/gtest.h>

#include <vector>

#include "shim/base/python_hook_env.h"

using namespace gpumemrec;

namespace {

bool allows(std::vector<const char*> argv) { return python_options_allow_hook(argv.data(), int(argv.size())); }

}  // namespace

TEST(PythonHookEnv, PlainRunsAllowTheHook) {
  EXPECT_TRUE(allows({"python3"}));
  EXPECT_TRUE(allows({"python3", "train.py", "-I"}));  // the script's own arguments
  EXPECT_TRUE(allows({"python3", "-u", "-m", "torch.distributed.run", "-S"}));
  EXPECT_TRUE(allows({"python3", "-c", "import sys", "-E"}));
  EXPECT_TRUE(allows({"python3", "-cprint(1)", "-E"}));  // -c's argument glued on
  EXPECT_TRUE(allows({"python3", "-", "-I"}));
  EXPECT_TRUE(allows({"python3", "--", "-S"}));
  EXPECT_TRUE(allows({"python3", "-W", "-S", "x.py"}));  // -W's argument, not an option
  EXPECT_TRUE(allows({"python3", "-XE", "x.py"}));       // -X's glued argument
  EXPECT_TRUE(allows({"python3", "--check-hash-based-pycs", "-I", "x.py"}));
}

TEST(PythonHookEnv, IsolatedIgnoreEnvironmentAndNoSiteRefuse) {
  EXPECT_FALSE(allows({"python3", "-I", "x.py"}));
  EXPECT_FALSE(allows({"python3", "-E", "x.py"}));
  EXPECT_FALSE(allows({"python3", "-S", "x.py"}));
  EXPECT_FALSE(allows({"python3", "-bIu", "x.py"}));  // grouped
  EXPECT_FALSE(allows({"python3", "-W", "ignore", "-S", "x.py"}));
  EXPECT_FALSE(allows({"python3", "-X", "dev", "-E", "-c", "pass"}));
  EXPECT_FALSE(allows({"python3", "-sE", "-m", "mod"}));
}
