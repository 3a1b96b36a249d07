// Our exported _exit and _Exit (shim/hooks/exit_hook.cpp): the status the
// program asked for, with or without glibc's function found, and a bundle
// the writer thread is writing is finished before the process goes.
#include "shim/hooks/exit_hook.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>


#include "shim/base/clock.h"
#include "shim/dump/dumper.h"
#include "shim/record/recorder.h"
#include "tests/unit/unit_files.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;

using unit_process::in_child;

TEST(ExitHook, UnderscoreExitGivesTheStatus) {
  const int st = in_child([] {
    exit_hook_init();
    _exit(42);
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 42);
  const int st2 = in_child([] {
    exit_hook_init();
    _Exit(7);
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(st2));
  EXPECT_EQ(WEXITSTATUS(st2), 7);
}

// A child fails an allocation and leaves with _exit at once, as Python's
// forked workers do (os._exit): the bundle is complete, never a .tmp-.
TEST(ExitHook, BundleBeingWrittenIsFinishedFirst) {
  const std::string dir = unit_files::make_tmpdir();
  const int st = in_child([&] {
    Recorder* r = recorder();
    if (!r) return 90;
    r->cfg.dir = dir;
    r->cfg.episode_ms = 60000;  // the verdict is not known before the exit
    exit_hook_init();
    record_alloc(HookId::cudaMalloc, 0, 0x7f0000001000, 4096, 0, MemoryType::kDevice, monotonic_ns(), 0);
    FailureInfo f;
    if (!record_alloc_failure(HookId::cudaMalloc, 0, 1ull << 40, 0, MemoryType::kDevice, monotonic_ns(), 2, true,
                              DumpReason::kOom, &f))
      return 91;
    dumper_on_failure(f);
    _exit(5);
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 5);
  const auto names = unit_files::list_dir(dir);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("oom_dump_", 0), 0u) << names[0];
  const auto files = unit_files::list_dir(dir + "/" + names[0]);
  EXPECT_NE(std::find(files.begin(), files.end(), "manifest.json"), files.end());
  auto manifest = unit_files::read_json(dir + "/" + names[0] + "/manifest.json");
  ASSERT_TRUE(manifest.IsObject());
  // The program ended before the episode did: the verdict is "fatal".
  EXPECT_STREQ(manifest["outcome"].GetString(), "fatal");
}
