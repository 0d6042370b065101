// cuda_cpu_private.h: part of cuda_cpu.h (the CPU backend's CUDA layer):
// private copies of aggregate fields for the device library
// (lizard_device_aggregate.h).
//
// On a GPU the library keeps a block's partial result of an aggregate field
// in shared memory and adds it to the field once, when the block ends.  On
// the CPU every block of a launch range runs on one OS thread, so the copy
// can live longer: the first thread that asks for a field's copy gets one
// filled with the reducer's identity, every later thread on the same OS
// thread gets the same copy, and run_launch folds each copy into its field
// once, after the last block of its range (flush_private_copies).  Adding
// into a copy is a plain read-modify-write.
//
//   T* mine = lizard_cpu::private_copy<T>(field, count, identity, &fold);
#ifndef LIZARD_CUDA_CPU_PRIVATE_H
#define LIZARD_CUDA_CPU_PRIVATE_H

#include <new>

#include "cuda_cpu_thread.h"

namespace lizard_cpu {

// Folds `count` values of a private copy into the field they belong to.
typedef void (*FoldCopy)(void* field, const void* copy, size_t count);

struct PrivateCopy {
  const void* field = nullptr;
  void* copy = nullptr;
  size_t count = 0;
  FoldCopy fold = nullptr;
};

// The copies of the running launch range, on one OS thread.  The arena is
// reserved once (address space only) and reused by every launch.
struct PrivateCopies {
  static constexpr int kMaxCopies = 64;
  static constexpr size_t kArenaBytes = size_t{1} << 30;
  PrivateCopy items[kMaxCopies];
  int n = 0;
  char* arena = nullptr;
  size_t used = 0;
  ~PrivateCopies() {
    if (arena) munmap(arena, kArenaBytes);
  }
};

static thread_local PrivateCopies private_copies_of_thread;

// Called by run_launch before the first block of a range.
inline void begin_private_copies() {
  PrivateCopies& p = private_copies_of_thread;
  p.n = 0;
  p.used = 0;
  lizard_cpu_thread.private_copies = &p;
}

// Called by run_launch after the last block of a range: each copy is folded
// into its field (with atomics: other OS threads fold theirs at the same time).
inline void flush_private_copies() {
  PrivateCopies* p = static_cast<PrivateCopies*>(lizard_cpu_thread.private_copies);
  if (!p) return;
  for (int i = 0; i < p->n; ++i) {
    const PrivateCopy& c = p->items[i];
    c.fold(const_cast<void*>(c.field), c.copy, c.count);
  }
  p->n = 0;
  p->used = 0;
  lizard_cpu_thread.private_copies = nullptr;
}

// Called by run_launch when a block fails: the partial results are dropped.
inline void drop_private_copies() {
  PrivateCopies* p = static_cast<PrivateCopies*>(lizard_cpu_thread.private_copies);
  if (p) p->n = 0;
  lizard_cpu_thread.private_copies = nullptr;
}

// This OS thread's copy of `count` values of `field`, made (filled with
// `identity`) by the first call of the launch range.
template <typename T>
inline T* private_copy(const T* field, size_t count, T identity, FoldCopy fold) {
  PrivateCopies* p = static_cast<PrivateCopies*>(lizard_cpu_thread.private_copies);
  if (!p) trap("an aggregate helper of lizard_device.h used outside a kernel launch");
  for (int i = 0; i < p->n; ++i)
    if (p->items[i].field == field) return static_cast<T*>(p->items[i].copy);
  if (!p->arena) {
    void* m = mmap(nullptr, PrivateCopies::kArenaBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) trap("out of memory for private copies of aggregate fields");
    p->arena = static_cast<char*>(m);
  }
  const size_t bytes = (count * sizeof(T) + 63) & ~size_t{63};
  if (p->n == PrivateCopies::kMaxCopies || bytes > PrivateCopies::kArenaBytes - p->used)
    trap("too many private copies of aggregate fields in one launch");
  T* copy = reinterpret_cast<T*>(p->arena + p->used);
  p->used += bytes;
  for (size_t i = 0; i < count; ++i) copy[i] = identity;
  p->items[p->n++] = PrivateCopy{field, copy, count, fold};
  return copy;
}

}  // namespace lizard_cpu

#endif  // LIZARD_CUDA_CPU_PRIVATE_H
