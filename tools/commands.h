// Each subcommand registers its CLI11 options and the function that runs it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpumemrec::cli {

using RunFn = std::function<int()>;

RunFn add_run(CLI::App& root, std::vector<std::string>* command_after_dashdash);
RunFn add_ls(CLI::App& root);
RunFn add_report(CLI::App& root);
RunFn add_html(CLI::App& root);
RunFn add_export(CLI::App& root);
RunFn add_query(CLI::App& root);
RunFn add_diff(CLI::App& root);
RunFn add_simulate(CLI::App& root);
RunFn add_top(CLI::App& root);

}  // namespace gpumemrec::cli
