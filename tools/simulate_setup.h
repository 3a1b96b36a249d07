// `gpumemrec run --simulate NAME[:COUNT]` and `gpumemrec simulate`: checks
// the card asked for and the program, and sets up the environment in which
// the program runs on the simulated card (docs/simulate.md).
#pragma once

#include <string>
#include <vector>

namespace gpumemrec::cli {

// Checks `spec` and the program, then exports GPUMEMREC_SIMULATE and puts the
// simulated CUDA libraries (the `simulate/` directory beside `library`) into
// LD_PRELOAD after the recorder. Throws CliError(kBadInput) with one line
// that says what to do for an unknown card, a bad count, missing simulated
// libraries, or a program that carries NVIDIA's own CUDA runtime (which no
// simulated driver can serve); nothing is started then.
void setup_simulation(const std::string& spec, const std::string& library, const std::vector<std::string>& command);

// One line per card: id, name, memory as programs read it, compute capability, SMs.
std::string simulate_list_text();
std::string simulate_list_json();

}  // namespace gpumemrec::cli
