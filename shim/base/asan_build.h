// Whether this is an AddressSanitizer build: its allocator has no fork
// handler in GCC 12 (shim/dump/capture/peak_keeper.h, atfork), so a fork
// waits for the shim's background work that allocates.
#pragma once

namespace gpumemrec {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsanBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsanBuild = true;
#else
constexpr bool kAsanBuild = false;
#endif
#else
constexpr bool kAsanBuild = false;
#endif

}  // namespace gpumemrec
