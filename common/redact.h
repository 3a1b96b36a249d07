// Secrets kept out of bundles and out of what the tools show: one set of
// rules for environment variables and for the command line.
//
//  - a NAME is secret when it contains TOKEN, KEY, SECRET, PASSWORD, PASSWD,
//    CREDENTIAL or AUTH (case-insensitive; "-" and "_" alike);
//  - environment: the value of a secret name is replaced by "<redacted>";
//  - command line: `--name=value`, `-name=value` and `NAME=value` with a
//    secret name keep the name and lose the value; `--name value` (an option
//    with a secret name followed by a separate argument) loses the next
//    argument; a URL's password (`scheme://user:password@host`) is replaced
//    anywhere in an argument.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gpumemrec {

inline constexpr const char* kRedacted = "<redacted>";

bool is_secret_name(std::string_view name);
// `value` with every URL password replaced by <redacted>.
std::string redact_url_passwords(std::string_view value);
// The value to show for environment variable `name`.
std::string redact_env_value(std::string_view name, std::string_view value);
// The command line with secrets replaced (same length and order).
std::vector<std::string> redact_cmdline(const std::vector<std::string>& argv);

}  // namespace gpumemrec
