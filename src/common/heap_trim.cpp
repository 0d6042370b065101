#include "common/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lizard {

void return_freed_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace lizard
