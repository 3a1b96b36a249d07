// GPUMEMREC_DIR made absolute at start-up (shim/base/absolute_dir.cpp):
// relative to the working directory then, only the string changed.
#include "shim/base/absolute_dir.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/unit/unit_files.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;

namespace {

std::string cwd() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) ? buf : "";
}

}  // namespace

TEST(AbsoluteDir, RelativeGoesUnderTheWorkingDirectory) {
  std::string why;
  const std::string here = cwd();
  ASSERT_FALSE(here.empty());
  EXPECT_EQ(absolute_dump_dir("dumps", &why), here + "/dumps");
  EXPECT_EQ(absolute_dump_dir("./dumps", &why), here + "/dumps");
  EXPECT_EQ(absolute_dump_dir("././dumps", &why), here + "/dumps");
  EXPECT_EQ(absolute_dump_dir("sub/../dumps", &why), here + "/sub/../dumps");  // no path resolution
  EXPECT_EQ(absolute_dump_dir(".", &why), here);
  EXPECT_EQ(absolute_dump_dir("./", &why), here);
  EXPECT_TRUE(why.empty()) << why;
}

TEST(AbsoluteDir, AbsoluteAndEmptyStayAsTheyAre) {
  std::string why;
  EXPECT_EQ(absolute_dump_dir("/var/tmp/dumps", &why), "/var/tmp/dumps");
  EXPECT_EQ(absolute_dump_dir("", &why), "");
  EXPECT_TRUE(why.empty());
}

TEST(AbsoluteDir, AtTheRootNoDoubleSlash) {
  const int status = unit_process::in_child([] {
    std::string why;
    return chdir("/") == 0 && absolute_dump_dir("dumps", &why) == "/dumps" ? 0 : 1;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The working directory was removed: getcwd fails, the path stays relative
// and *why says so (one warning at start-up).
TEST(AbsoluteDir, RemovedWorkingDirectoryKeepsItRelative) {
  const std::string gone = unit_files::make_tmpdir();
  const int status = unit_process::in_child([&] {
    if (chdir(gone.c_str()) != 0 || rmdir(gone.c_str()) != 0) return 2;
    std::string why;
    if (absolute_dump_dir("dumps", &why) != "dumps") return 3;
    return why.find("cannot resolve the relative GPUMEMREC_DIR dumps (getcwd: ") == 0 ? 0 : 4;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
