// Human-readable figures, one formatter for the shim (summary.txt, warnings)
// and the tools (report, html): "512 B", "1.50 KiB", "3.00 GiB".
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

// Binary units with two decimals; plain bytes below 1 KiB.
std::string format_bytes(uint64_t bytes);
// Signed change: "+1.50 KiB", "-512 B", "+0 B".
std::string format_bytes_signed(int64_t delta);

}  // namespace gpumemrec
