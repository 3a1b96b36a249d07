// gpumemrec simulate --list [--json]: the cards `gpumemrec run --simulate`
// can present (docs/simulate.md).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/simulate_setup.h"

namespace gpumemrec::cli {

RunFn add_simulate(CLI::App& root) {
  auto list = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  CLI::App* app = root.add_subcommand("simulate", "The simulated GPUs a program can run on without a GPU");
  app->footer(
      "Usage: gpumemrec simulate --list [--json]\n"
      "Each card is presented by drop-in CUDA libraries with the card's memory,\n"
      "properties and driver behaviour; run a program on one with\n"
      "  gpumemrec run --simulate NAME[:COUNT] -- CMD ARGS...\n"
      "Kernels do not run and device memory holds no data (docs/simulate.md).");
  app->add_flag("--list", *list, "List the simulated cards, one a line: id, name, memory as programs read it, "
                                 "compute capability, SMs");
  app->add_flag("--json", *json, "With --list: a JSON array");
  return [=]() -> int {
    if (!*list) throw CliError(kBadInput, "simulate: nothing to do (use --list; run a program with "
                                          "'gpumemrec run --simulate NAME -- CMD')");
    fputs(*json ? simulate_list_json().c_str() : simulate_list_text().c_str(), stdout);
    return 0;
  };
}

}  // namespace gpumemrec::cli
