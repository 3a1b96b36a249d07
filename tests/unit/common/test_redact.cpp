// Secrets redaction (environment and command line) and the byte formatter.
#include <gtest/gtest.h>

#include "common/format.h"
#include "common/redact.h"

using namespace gpumemrec;

TEST(Redact, SecretNames) {
  for (const char* n : {"HF_TOKEN", "api-key", "--api-key", "AWS_SECRET_ACCESS_KEY", "db_password", "PASSWD",
                        "GOOGLE_APPLICATION_CREDENTIALS", "auth", "Authorization"})
    EXPECT_TRUE(is_secret_name(n)) << n;
  for (const char* n : {"CUDA_VISIBLE_DEVICES", "--batch-size", "RANK", "lr"}) EXPECT_FALSE(is_secret_name(n)) << n;
}

TEST(Redact, CommandLineOptionForms) {
  const std::vector<std::string> in = {"python",     "train.py",  "--api-key=sk-live-123", "--token",
                                       "abc123",     "--lr",      "0.1",                   "-password",
                                       "hunter2",    "HF_TOKEN=hf_xyz", "--auth-token", "--verbose"};
  const std::vector<std::string> want = {"python",     "train.py",  "--api-key=<redacted>", "--token",
                                         "<redacted>", "--lr",      "0.1",                  "-password",
                                         "<redacted>", "HF_TOKEN=<redacted>", "--auth-token", "--verbose"};
  EXPECT_EQ(redact_cmdline(in), want);
}

TEST(Redact, UrlPasswordsAnywhere) {
  EXPECT_EQ(redact_url_passwords("https://alice:s3cret@example.com/repo.git"),
            "https://alice:<redacted>@example.com/repo.git");
  EXPECT_EQ(redact_url_passwords("--db=postgres://u:p%40ss@db:5432/x and redis://:pw@r:6379"),
            "--db=postgres://u:<redacted>@db:5432/x and redis://:<redacted>@r:6379");
  EXPECT_EQ(redact_url_passwords("https://example.com:8443/a@b"), "https://example.com:8443/a@b");
  EXPECT_EQ(redact_url_passwords("ssh://git@host/x"), "ssh://git@host/x");  // no password
  EXPECT_EQ(redact_cmdline({"prog", "--url", "https://u:pw@h/"}),
            (std::vector<std::string>{"prog", "--url", "https://u:<redacted>@h/"}));
  EXPECT_EQ(redact_cmdline({"/usr/bin/token-tool"}), (std::vector<std::string>{"/usr/bin/token-tool"}));  // argv[0]
}

TEST(Redact, EnvironmentValues) {
  EXPECT_EQ(redact_env_value("HF_TOKEN", "hf_abc"), "<redacted>");
  EXPECT_EQ(redact_env_value("MASTER_ADDR", "10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(redact_env_value("NCCL_URL", "http://u:p@h"), "http://u:<redacted>@h");
}

TEST(Format, Bytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(44ull << 30), "44.00 GiB");
  EXPECT_EQ(format_bytes(~0ull), "16.00 EiB");
  EXPECT_EQ(format_bytes_signed(-1536), "-1.50 KiB");
  EXPECT_EQ(format_bytes_signed(INT64_MIN), "-8.00 EiB");
  EXPECT_EQ(format_bytes_signed(0), "+0 B");
}
