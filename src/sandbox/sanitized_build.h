// kAddressSanitized: whether this build runs under AddressSanitizer (gcc's
// and clang's -fsanitize=address), whose runtime needs what the sandbox
// otherwise refuses: memory beyond RLIMIT_DATA for its shadow, and, for the
// leak checker at exit, a traced clone of the process.
//
//   if (kAddressSanitized) ...;
#pragma once

namespace lizard {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#else
inline constexpr bool kAddressSanitized = false;
#endif

}  // namespace lizard
