// gpumemrec_framework_exit() (shim/dump/framework_exit.cpp): the hook's
// digest at the interpreter's exit, kept for the exit and signal bundles.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "shim/dump/capture/framework_report.h"

extern "C" int gpumemrec_framework_exit(const char* digest, size_t len);

using namespace gpumemrec;

TEST(FrameworkExit, KeepsTheLatestGoodDigest) {
  const std::string a = R"({"framework":"torch","at":"exit","torch_peak_allocated":100})";
  const std::string b = R"({"framework":"torch","at":"exit","torch_peak_allocated":200})";
  ASSERT_EQ(gpumemrec_framework_exit(a.data(), a.size()), 0);
  ASSERT_EQ(gpumemrec_framework_exit(b.data(), b.size()), 0);
  auto r = framework_exit_get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->digest, b);
  EXPECT_EQ(r->fields.framework, "torch");
  EXPECT_TRUE(framework_exit_get()) << "not taken: every later exit or signal bundle writes it";
}

TEST(FrameworkExit, RefusesBadInputAndKeepsWhatItHad) {
  const std::string good = R"({"framework":"jax","at":"exit"})";
  ASSERT_EQ(gpumemrec_framework_exit(good.data(), good.size()), 0);
  EXPECT_EQ(gpumemrec_framework_exit(nullptr, 10), -1);
  EXPECT_EQ(gpumemrec_framework_exit(good.data(), 0), -1);
  const std::string not_json = "framework=torch";
  EXPECT_EQ(gpumemrec_framework_exit(not_json.data(), not_json.size()), -1);
  const std::string nameless = R"({"at":"exit"})";
  EXPECT_EQ(gpumemrec_framework_exit(nameless.data(), nameless.size()), -1);
  std::string huge = R"({"framework":"torch","pad":")" + std::string(4 << 20, 'x') + "\"}";
  EXPECT_EQ(gpumemrec_framework_exit(huge.data(), huge.size()), -1) << "over 4 MiB";
  EXPECT_EQ(framework_exit_get()->digest, good);
}

TEST(FrameworkExit, ThreadsHandingOverAtOnceLeaveOneWholeDigest) {
  std::vector<std::string> digests;
  for (int i = 0; i < 8; ++i) digests.push_back(R"({"framework":"torch","n":)" + std::to_string(i) + "}");
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] {
      for (int k = 0; k < 500; ++k) {
        gpumemrec_framework_exit(digests[i].data(), digests[i].size());
        auto r = framework_exit_get();
        ASSERT_TRUE(r);
      }
    });
  for (auto& t : ts) t.join();
  const std::string last = framework_exit_get()->digest;
  EXPECT_NE(std::find(digests.begin(), digests.end(), last), digests.end());
}
