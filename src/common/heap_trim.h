// return_freed_heap: hands the heap memory this process has freed back to
// the system.  glibc keeps freed memory in the arena of the thread that
// freed it, so a server whose request threads each parsed a large body once
// keeps a body's worth of parse per thread for good; after a large request
// is done with, its thread calls this.
//
//   if (body.size() >= kLargeBodyBytes) return_freed_heap();
#pragma once

#include <cstddef>

namespace lizard {

// Bodies of at least this many bytes are large: their parse is worth
// handing back.
inline constexpr size_t kLargeBodyBytes = size_t{8} << 20;

// malloc_trim(0) where the C library has it; a no-op elsewhere.
void return_freed_heap();

}  // namespace lizard
