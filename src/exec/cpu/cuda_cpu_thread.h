// cuda_cpu_thread.h: part of cuda_cpu.h (the CPU backend's CUDA layer): the
// per-OS-thread state (threadIdx, blockIdx, blockDim, gridDim, shared memory),
// the dynamic shared buffer, and how a block fails (__trap).
#ifndef LIZARD_CUDA_CPU_THREAD_H
#define LIZARD_CUDA_CPU_THREAD_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_cpu_types.h"

// ---------------------------------------------------------------------------
// Per-OS-thread execution state.
//
// threadIdx, blockIdx, blockDim, gridDim and what the runtime consults on
// every barrier and shared-memory atomic live in one struct per OS thread.
// The executable defines it (src/exec/cpu/thread_state.cpp) and exports it;
// the kernel library reaches it with the initial-exec TLS model, one load
// relative to %fs, where a thread_local of the library itself would cost a
// __tls_get_addr call on every access (the library is loaded with dlopen).
extern "C" {
struct lizard_cpu_thread_state {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  // Memory that only the running block can reach, so atomics on it need no
  // atomic instruction: [0] the dynamic shared buffer (shared_bytes of it),
  // [1] this library's TLS block (static __shared__ variables).
  uintptr_t shared_lo[2];
  uintptr_t shared_len[2];
  char* dynamic_shared;  // this OS thread's dynamic shared buffer
  void* fibers;          // the lizard_cpu::Block of the running launch (fibers only)
  void* private_copies;  // the lizard_cpu::PrivateCopies of the running launch range
  uint32_t solo;         // the running launch has no other OS thread (LIZARD_CPU_LAUNCH_SOLO)
};
extern __thread lizard_cpu_thread_state lizard_cpu_thread
    __attribute__((tls_model("initial-exec"), visibility("default")));
}
// The executable reserves 128 bytes for it.
static_assert(sizeof(lizard_cpu_thread_state) <= 128, "lizard_cpu_thread_state size");

// Kernels only read these, as on a GPU.
#define threadIdx (static_cast<const uint3&>(::lizard_cpu_thread.thread_idx))
#define blockIdx (static_cast<const uint3&>(::lizard_cpu_thread.block_idx))
#define blockDim (static_cast<const dim3&>(::lizard_cpu_thread.block_dim))
#define gridDim (static_cast<const dim3&>(::lizard_cpu_thread.grid_dim))
static constexpr int warpSize = 32;

namespace lizard_cpu {

// The dynamic shared buffer: reserved once per OS thread, at a fixed address
// for the thread's life, so rewritten `extern __shared__` pointers stay valid.
constexpr uint64_t kMaxDynamicShared = uint64_t{16} << 20;

struct DynamicShared {
  char* base = nullptr;
  ~DynamicShared() {
    if (base) munmap(base, kMaxDynamicShared);
  }
};

static thread_local DynamicShared dynamic_shared_buffer;

inline char* dynamic_shared() {
  if (!dynamic_shared_buffer.base) {
    void* p = mmap(nullptr, kMaxDynamicShared, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) abort();
    dynamic_shared_buffer.base = static_cast<char*>(p);
  }
  return dynamic_shared_buffer.base;
}

// True when no other OS thread can touch `p` while the block runs — memory
// only the current block can reach (shared memory), or any memory when the
// whole launch runs on this OS thread — so atomics on it need no atomic
// instruction.
inline bool block_local(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const lizard_cpu_thread_state& t = lizard_cpu_thread;
  return t.solo || a - t.shared_lo[0] < t.shared_len[0] || a - t.shared_lo[1] < t.shared_len[1];
}

struct TlsQuery {
  uintptr_t code = 0;
  uintptr_t lo = 0;
  uintptr_t len = 0;
};

inline int find_module_tls(dl_phdr_info* info, size_t size, void* data) {
  TlsQuery* q = static_cast<TlsQuery*>(data);
  if (size < offsetof(dl_phdr_info, dlpi_tls_data) + sizeof(void*)) return 0;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && q->code - start < ph.p_memsz) mine = true;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_tls_data) {
      q->lo = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      q->len = info->dlpi_phdr[i].p_memsz;
    }
  }
  return 1;
}

// This library's TLS block on this OS thread, looked up on its first launch.
struct ModuleTls {
  bool known = false;
  uintptr_t lo = 0;
  uintptr_t len = 0;
};
static thread_local ModuleTls module_tls;

// Points this OS thread's state at this library's shared memory for a launch
// with `shared_bytes` of dynamic shared memory.
inline void set_shared_memory(uint64_t shared_bytes) {
  lizard_cpu_thread_state& t = lizard_cpu_thread;
  t.dynamic_shared = dynamic_shared();
  t.shared_lo[0] = reinterpret_cast<uintptr_t>(t.dynamic_shared);
  t.shared_len[0] = shared_bytes;
  ModuleTls& m = module_tls;  // allocates this thread's TLS block before the lookup
  if (!m.known) {
    TlsQuery q;
    q.code = reinterpret_cast<uintptr_t>(&find_module_tls);
    dl_iterate_phdr(&find_module_tls, &q);
    m = ModuleTls{true, q.lo, q.len};
  }
  t.shared_lo[1] = m.lo;
  t.shared_len[1] = m.len;
}

// A failure that unwinds the block's OS thread: __trap in threads without
// fibers, a barrier or warp collective outside a kernel.
struct Trap {
  const char* what;
};

inline void set_error(char* err, size_t err_len, const char* text) {
  if (err && err_len) snprintf(err, err_len, "%s", text);
}

}  // namespace lizard_cpu

namespace lizard_cpu {
// Fails the running block with `what` (defined in cuda_cpu_scheduler.h).
// Declared without `inline` here: the definition adds it with `noinline`,
// which GCC accepts after a plain declaration but warns about after an inline one.
[[noreturn]] void trap(const char* what);
}  // namespace lizard_cpu

[[noreturn]] inline void __trap() {
  lizard_cpu::trap("__trap() called");
}
[[noreturn]] inline void __brkpt() {
  lizard_cpu::trap("__brkpt() called");
}

#endif  // LIZARD_CUDA_CPU_THREAD_H
