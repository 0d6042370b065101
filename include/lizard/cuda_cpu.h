// cuda_cpu.h: the CUDA compatibility layer of the CPU backend.
//
// The CPU backend compiles a program's unmodified kernel.cu with the host C++
// compiler.  This header supplies what nvcc would: the execution-space
// qualifiers, threadIdx/blockIdx/blockDim/gridDim, shared memory, barriers,
// atomics, warp intrinsics (32-lane warps), device math and vector types.
// The generated entry file includes it first, then lizard_program.h, then
// kernel.cu, and exports one function per kernel that runs a range of blocks:
//
//   extern "C" int lizard_cpu_kernel_NAME(const lizard_cpu_launch* launch,
//                                          const void* const* args, char* err,
//                                          size_t err_len);
//
// All threads of a block run on one OS thread.  When LIZARD_CPU_FIBERS is 1
// (the kernel uses a barrier or a warp collective) each thread of a block is
// a fiber and the fibers switch at barriers and warp collectives; otherwise
// the threads of a block run one after the other in a plain loop.
//
// threadIdx and the rest of the per-OS-thread state are in one struct that
// the executable exports (lizard_cpu_thread, below).  Static `__shared__`
// variables are thread_local, so blocks running on different OS threads do
// not share them.  `extern __shared__ T name[];` is rewritten by the builder
// into a pointer to this OS thread's dynamic shared buffer.
#ifndef LIZARD_CUDA_CPU_H
#define LIZARD_CUDA_CPU_H

#include <link.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#ifndef LIZARD_CPU_FIBERS
#define LIZARD_CPU_FIBERS 1
#endif
#if LIZARD_CPU_FIBERS
#include <vector>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif
#endif

#define LIZARD_CPU_BACKEND 1

// ---------------------------------------------------------------------------
// The launch ABI shared with the executor (plain C, fixed layout).
extern "C" {
typedef struct {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;
  uint64_t first_block;  // linear blocks [first_block, end_block) run on the calling thread
  uint64_t end_block;
} lizard_cpu_launch;
}
static_assert(sizeof(lizard_cpu_launch) == 48, "lizard_cpu_launch layout");

// ---------------------------------------------------------------------------
// Qualifiers.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __shared__ static thread_local

// ---------------------------------------------------------------------------
// Vector types.
struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define LIZARD_CPU_VEC2(T, name, al)         \
  struct __attribute__((aligned(al))) name { \
    T x, y;                                  \
  };                                         \
  inline name make_##name(T x, T y) {        \
    return name{x, y};                       \
  }
#define LIZARD_CPU_VEC3(T, name)           \
  struct name {                            \
    T x, y, z;                             \
  };                                       \
  inline name make_##name(T x, T y, T z) { \
    return name{x, y, z};                  \
  }
#define LIZARD_CPU_VEC4(T, name, al)            \
  struct __attribute__((aligned(al))) name {    \
    T x, y, z, w;                               \
  };                                            \
  inline name make_##name(T x, T y, T z, T w) { \
    return name{x, y, z, w};                    \
  }
LIZARD_CPU_VEC2(float, float2, 8)
LIZARD_CPU_VEC3(float, float3)
LIZARD_CPU_VEC4(float, float4, 16)
LIZARD_CPU_VEC2(int, int2, 8)
LIZARD_CPU_VEC3(int, int3)
LIZARD_CPU_VEC4(int, int4, 16)
LIZARD_CPU_VEC2(unsigned int, uint2, 8)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return uint3{x, y, z};
}
LIZARD_CPU_VEC4(unsigned int, uint4, 16)
LIZARD_CPU_VEC2(double, double2, 16)
LIZARD_CPU_VEC2(long long, longlong2, 16)
#undef LIZARD_CPU_VEC2
#undef LIZARD_CPU_VEC3
#undef LIZARD_CPU_VEC4

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

// True when `p` is memory that only the current block can reach (shared
// memory), so atomics on it need no atomic instruction.
inline bool block_local(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const lizard_cpu_thread_state& t = lizard_cpu_thread;
  return a - t.shared_lo[0] < t.shared_len[0] || a - t.shared_lo[1] < t.shared_len[1];
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
// Fails the running block with `what` (defined after the fibers, below).
[[noreturn]] inline void trap(const char* what);
}  // namespace lizard_cpu

[[noreturn]] inline void __trap() {
  lizard_cpu::trap("__trap() called");
}
[[noreturn]] inline void __brkpt() {
  lizard_cpu::trap("__brkpt() called");
}

// ---------------------------------------------------------------------------
// Memory fences.  Threads of a block share an OS thread, so a block fence only
// has to stop the compiler from reordering.
inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_system() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_block() {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// ---------------------------------------------------------------------------
// Atomics.  Shared memory is touched by one OS thread only and fibers switch
// only at barriers, so atomics on it are plain read-modify-writes; on global
// memory they are atomic instructions (compare-and-swap loops for floats).
namespace lizard_cpu {

template <typename T>
using IfInt = std::enable_if_t<std::is_integral<T>::value && (sizeof(T) == 4 || sizeof(T) == 8), T>;
template <typename T>
using IfArith =
    std::enable_if_t<std::is_arithmetic<T>::value && (sizeof(T) == 4 || sizeof(T) == 8), T>;

template <typename T, typename F>
inline T rmw(T* p, F f) {
  if (block_local(p)) {
    T old = *p;
    *p = f(old);
    return old;
  }
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T desired = f(old);
  while (!__atomic_compare_exchange(p, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    desired = f(old);
  return old;
}

}  // namespace lizard_cpu

template <typename T>
inline lizard_cpu::IfArith<T> atomicAdd(T* p, T v) {
  if constexpr (std::is_integral<T>::value) {
    if (!lizard_cpu::block_local(p)) return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  }
  return lizard_cpu::rmw(p, [v](T a) { return a + v; });
}
template <typename T>
inline lizard_cpu::IfInt<T> atomicSub(T* p, T v) {
  if (!lizard_cpu::block_local(p)) return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
  return lizard_cpu::rmw(p, [v](T a) { return a - v; });
}
template <typename T>
inline lizard_cpu::IfArith<T> atomicMin(T* p, T v) {
  return lizard_cpu::rmw(p, [v](T a) { return v < a ? v : a; });
}
template <typename T>
inline lizard_cpu::IfArith<T> atomicMax(T* p, T v) {
  return lizard_cpu::rmw(p, [v](T a) { return v > a ? v : a; });
}
template <typename T>
inline lizard_cpu::IfArith<T> atomicExch(T* p, T v) {
  if (lizard_cpu::block_local(p)) return lizard_cpu::rmw(p, [v](T) { return v; });
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
template <typename T>
inline std::enable_if_t<std::is_integral<T>::value, T> atomicCAS(T* p, T compare, T v) {
  if (lizard_cpu::block_local(p)) {
    T old = *p;
    if (old == compare) *p = v;
    return old;
  }
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
template <typename T>
inline lizard_cpu::IfInt<T> atomicAnd(T* p, T v) {
  if (!lizard_cpu::block_local(p)) return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
  return lizard_cpu::rmw(p, [v](T a) { return a & v; });
}
template <typename T>
inline lizard_cpu::IfInt<T> atomicOr(T* p, T v) {
  if (!lizard_cpu::block_local(p)) return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
  return lizard_cpu::rmw(p, [v](T a) { return a | v; });
}
template <typename T>
inline lizard_cpu::IfInt<T> atomicXor(T* p, T v) {
  if (!lizard_cpu::block_local(p)) return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
  return lizard_cpu::rmw(p, [v](T a) { return a ^ v; });
}
inline unsigned int atomicInc(unsigned int* p, unsigned int v) {
  return lizard_cpu::rmw(p, [v](unsigned int a) { return a >= v ? 0u : a + 1; });
}
inline unsigned int atomicDec(unsigned int* p, unsigned int v) {
  return lizard_cpu::rmw(p, [v](unsigned int a) { return (a == 0 || a > v) ? v : a - 1; });
}
// Mixed argument types (atomicAdd(&u64, 1)) convert the value to the pointee.
template <typename T, typename U>
inline std::enable_if_t<!std::is_same<T, U>::value, lizard_cpu::IfArith<T>> atomicAdd(T* p, U v) {
  return atomicAdd(p, static_cast<T>(v));
}
template <typename T, typename U>
inline std::enable_if_t<!std::is_same<T, U>::value, lizard_cpu::IfInt<T>> atomicSub(T* p, U v) {
  return atomicSub(p, static_cast<T>(v));
}
template <typename T, typename U>
inline std::enable_if_t<!std::is_same<T, U>::value, lizard_cpu::IfArith<T>> atomicMin(T* p, U v) {
  return atomicMin(p, static_cast<T>(v));
}
template <typename T, typename U>
inline std::enable_if_t<!std::is_same<T, U>::value, lizard_cpu::IfArith<T>> atomicMax(T* p, U v) {
  return atomicMax(p, static_cast<T>(v));
}
template <typename T, typename U>
inline std::enable_if_t<!std::is_same<T, U>::value, lizard_cpu::IfArith<T>> atomicExch(T* p, U v) {
  return atomicExch(p, static_cast<T>(v));
}
template <typename T, typename U, typename V>
inline std::enable_if_t<!std::is_same<T, U>::value || !std::is_same<T, V>::value, T> atomicCAS(
    T* p, U compare, V v) {
  return atomicCAS(p, static_cast<T>(compare), static_cast<T>(v));
}
#define LIZARD_CPU_SCOPED_ATOMIC(op) \
  template <typename... A>           \
  inline auto op##_block(A... a) {   \
    return op(a...);                 \
  }                                  \
  template <typename... A>           \
  inline auto op##_system(A... a) {  \
    return op(a...);                 \
  }
LIZARD_CPU_SCOPED_ATOMIC(atomicAdd)
LIZARD_CPU_SCOPED_ATOMIC(atomicSub)
LIZARD_CPU_SCOPED_ATOMIC(atomicMin)
LIZARD_CPU_SCOPED_ATOMIC(atomicMax)
LIZARD_CPU_SCOPED_ATOMIC(atomicExch)
LIZARD_CPU_SCOPED_ATOMIC(atomicCAS)
LIZARD_CPU_SCOPED_ATOMIC(atomicAnd)
LIZARD_CPU_SCOPED_ATOMIC(atomicOr)
LIZARD_CPU_SCOPED_ATOMIC(atomicXor)
LIZARD_CPU_SCOPED_ATOMIC(atomicInc)
LIZARD_CPU_SCOPED_ATOMIC(atomicDec)
#undef LIZARD_CPU_SCOPED_ATOMIC

// ---------------------------------------------------------------------------
// Integer and bit intrinsics.
inline int __popc(unsigned int x) {
  return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x) {
  return __builtin_popcountll(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x));
}
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __ffsll(long long x) {
  return __builtin_ffsll(x);
}
inline unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
inline int __mul24(int a, int b) {
  return (a << 8 >> 8) * (b << 8 >> 8);
}
inline unsigned int __umul24(unsigned int a, unsigned int b) {
  return (a & 0xFFFFFFu) * (b & 0xFFFFFFu);
}
inline int __mulhi(int a, int b) {
  return static_cast<int>((int64_t{a} * b) >> 32);
}
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((uint64_t{a} * b) >> 32);
}

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Cache-hinted loads and stores: plain memory accesses on the host.
template <typename T>
inline T __ldcg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldca(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcs(const T* p) {
  return *p;
}
template <typename T>
inline T __ldlu(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcv(const T* p) {
  return *p;
}
template <typename T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stwt(T* p, T v) {
  *p = v;
}

// Bit casts.
namespace lizard_cpu {
template <typename To, typename From>
inline To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast size");
  To out;
  memcpy(&out, &v, sizeof(To));
  return out;
}
}  // namespace lizard_cpu
inline int __float_as_int(float x) {
  return lizard_cpu::bit_cast<int>(x);
}
inline float __int_as_float(int x) {
  return lizard_cpu::bit_cast<float>(x);
}
inline unsigned int __float_as_uint(float x) {
  return lizard_cpu::bit_cast<unsigned int>(x);
}
inline float __uint_as_float(unsigned int x) {
  return lizard_cpu::bit_cast<float>(x);
}
inline long long __double_as_longlong(double x) {
  return lizard_cpu::bit_cast<long long>(x);
}
inline double __longlong_as_double(long long x) {
  return lizard_cpu::bit_cast<double>(x);
}

// ---------------------------------------------------------------------------
// Device math (the rest comes from <math.h>).
inline int min(int a, int b) {
  return a < b ? a : b;
}
inline unsigned int min(unsigned int a, unsigned int b) {
  return a < b ? a : b;
}
inline long min(long a, long b) {
  return a < b ? a : b;
}
inline unsigned long min(unsigned long a, unsigned long b) {
  return a < b ? a : b;
}
inline long long min(long long a, long long b) {
  return a < b ? a : b;
}
inline unsigned long long min(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline float min(float a, float b) {
  return fminf(a, b);
}
inline double min(double a, double b) {
  return fmin(a, b);
}
inline int max(int a, int b) {
  return a > b ? a : b;
}
inline unsigned int max(unsigned int a, unsigned int b) {
  return a > b ? a : b;
}
inline long max(long a, long b) {
  return a > b ? a : b;
}
inline unsigned long max(unsigned long a, unsigned long b) {
  return a > b ? a : b;
}
inline long long max(long long a, long long b) {
  return a > b ? a : b;
}
inline unsigned long long max(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
inline float max(float a, float b) {
  return fmaxf(a, b);
}
inline double max(double a, double b) {
  return fmax(a, b);
}

inline float rsqrtf(float x) {
  return 1.0f / sqrtf(x);
}
inline double rsqrt(double x) {
  return 1.0 / sqrt(x);
}
inline float rcbrtf(float x) {
  return 1.0f / cbrtf(x);
}
inline float __expf(float x) {
  return expf(x);
}
inline float __logf(float x) {
  return logf(x);
}
inline float __log2f(float x) {
  return log2f(x);
}
inline float __log10f(float x) {
  return log10f(x);
}
inline float __powf(float x, float y) {
  return powf(x, y);
}
inline float __sinf(float x) {
  return sinf(x);
}
inline float __cosf(float x) {
  return cosf(x);
}
inline float __tanf(float x) {
  return tanf(x);
}
inline void __sincosf(float x, float* s, float* c) {
  *s = sinf(x);
  *c = cosf(x);
}
inline float __exp10f(float x) {
  return powf(10.0f, x);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float fdividef(float a, float b) {
  return a / b;
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __fsqrt_rn(float x) {
  return sqrtf(x);
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return fmaf(a, b, c);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline double __fma_rn(double a, double b, double c) {
  return fma(a, b, c);
}
inline int __float2int_rn(float x) {
  return static_cast<int>(nearbyintf(x));
}
inline int __float2int_rz(float x) {
  return static_cast<int>(x);
}
inline int __float2int_rd(float x) {
  return static_cast<int>(floorf(x));
}
inline int __float2int_ru(float x) {
  return static_cast<int>(ceilf(x));
}
inline float __int2float_rn(int x) {
  return static_cast<float>(x);
}
inline int __double2int_rn(double x) {
  return static_cast<int>(nearbyint(x));
}

// ---------------------------------------------------------------------------
// Barriers and warp collectives.
namespace lizard_cpu {

enum class WarpOp : uint8_t { kShfl, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSync };
enum class BarrierOp : uint8_t { kSync, kCount, kAnd, kOr };

#if LIZARD_CPU_FIBERS

// Fibers: each GPU thread of a block gets its own stack, and control moves
// from thread to thread with a context switch; elsewhere than x86-64 the
// switch is ucontext.
//
// On x86-64 the switch is inline assembly: it pushes the address to resume
// at (and rbp), stores the stack pointer, loads the other side's and jumps to
// the address found there.  Every other register is declared clobbered, so
// the compiler keeps only what is live across the switch, on the fiber's own
// stack.  There is no call or return: a `ret` to another fiber's call site
// is mispredicted whenever the two fibers stopped at different places, which
// is the rule when control passes from thread to thread, while an indirect
// jump from a given switch site almost always goes to the same place.  The
// floating-point control state (MXCSR, x87 control word) belongs to the OS
// thread and is shared by its fibers; CUDA code has no way to change it.
#if defined(__x86_64__)
struct Context {
  void* sp = nullptr;  // the suspended side's stack: its resume address, then its rbp
};
#if defined(__AVX512F__)
#define LIZARD_CPU_AVX512_CLOBBERS                                                              \
  , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25",   \
      "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k0", "k1", "k2", "k3", "k4", "k5", \
      "k6", "k7"
#else
#define LIZARD_CPU_AVX512_CLOBBERS
#endif
#if defined(__CET__) && (__CET__ & 1)
#define LIZARD_CPU_LANDING "endbr64\n\t"  // an indirect jump's target under IBT
#else
#define LIZARD_CPU_LANDING
#endif
__attribute__((always_inline)) inline void switch_context(Context* save, Context* load) {
  void* to = load->sp;
  asm volatile(
      "leaq -128(%%rsp), %%rsp\n\t"  // past the red zone of the code around
      "pushq %%rbp\n\t"
      "leaq 1f(%%rip), %%rax\n\t"
      "pushq %%rax\n\t"
      "movq %%rsp, (%0)\n\t"
      "movq %1, %%rsp\n\t"
      "popq %%rax\n\t"
      "jmpq *%%rax\n"
      "1:\n\t" LIZARD_CPU_LANDING
      "popq %%rbp\n\t"
      "leaq 128(%%rsp), %%rsp\n\t"
      : "+D"(save), "+S"(to)
      :
      : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory",
        "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)",
        "st(4)", "st(5)", "st(6)", "st(7)", "mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6",
        "mm7" LIZARD_CPU_AVX512_CLOBBERS);
}
#undef LIZARD_CPU_AVX512_CLOBBERS
#undef LIZARD_CPU_LANDING
// Prepares `c` so that switching to it calls entry() on the stack [base, base + size).
inline void make_context(Context* c, char* base, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t{15};
  uint64_t* sp = reinterpret_cast<uint64_t*>(top - 16);
  sp[0] = reinterpret_cast<uint64_t>(entry);
  sp[1] = 0;  // a return address that is never used: entry() sees the frame of a call
  c->sp = sp;
}
#else
struct Context {
  ucontext_t uc;
};
inline void switch_context(Context* save, Context* load) {
  swapcontext(&save->uc, &load->uc);
}
inline void make_context(Context* c, char* base, size_t size, void (*entry)()) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = base;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, entry, 0);
}
#endif

enum class Wait : uint8_t { kRun, kBarrier, kWarp, kDone };

struct Lane {
  Context fiber;  // the thread, while it is suspended
  char* stack = nullptr;
  uint3 tid{0, 0, 0};
  Wait wait = Wait::kRun;
  WarpOp op = WarpOp::kSync;
  BarrierOp barrier_op = BarrierOp::kSync;
  int site = 0;
  int arg = 0;
  int width = 32;
  uint32_t mask = 0;
  uint64_t value = 0;
  uint64_t result = 0;
};

// The threads of the blocks that run on one OS thread.  Lanes and their
// stacks persist across blocks and launches: a lane that finishes its thread
// waits at the top of its loop (fiber_main) to run the same thread of the next
// block.  Control passes from lane to lane directly; the lane that stops last
// in a round completes the warp collective or releases the barrier on its own
// stack and carries on with the next lane, and only the end of the block or
// an error returns to the scheduler (run_block).
struct Block {
  static constexpr size_t kStackBytes = 256 * 1024;
  static constexpr size_t kGuard = 4096;

  std::vector<Lane> lanes;  // the first `n` run the current block
  size_t n = 0;
  Lane* current = nullptr;  // the running lane
  Context scheduler;        // run_block, while the lanes run
  // The round robin: lanes [warp_first, warp_end) form the warp now running;
  // `pos` is the next lane of it to look at; `warp_waits` is set when one of
  // its lanes stopped at a warp collective in this pass.
  size_t pos = 0;
  size_t warp_first = 0;
  size_t warp_end = 0;
  size_t live = 0;  // lanes that have not finished
  bool warp_waits = false;
  bool stale = true;  // some lanes are not at the top of their loop: remake them
  bool failed = false;
  const char* trap = nullptr;
  char* err = nullptr;
  size_t err_len = 0;
  void (*kernel)(void*) = nullptr;  // runs one GPU thread's body
  void* kernel_arg = nullptr;

  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    for (Lane& l : lanes) munmap(l.stack - kGuard, kStackBytes + kGuard);
  }
};

static thread_local Block fiber_block;

inline Block& fibers() {
  return *static_cast<Block*>(lizard_cpu_thread.fibers);
}

inline Lane& current_lane() {
  Block* b = static_cast<Block*>(lizard_cpu_thread.fibers);
  if (!b || !b->current) throw Trap{"barrier or warp collective outside a kernel"};
  return *b->current;
}

// The lane that `l` (lane index `lane`) reads from, or -1 for its own value.
inline int shuffle_source(const Lane& l, int lane) {
  const int width = (l.width >= 1 && l.width <= 32) ? l.width : 32;
  const int base = lane - lane % width;
  switch (l.op) {
    case WarpOp::kShfl:
      return base + ((l.arg % width) + width) % width;
    case WarpOp::kShflUp:
      return lane - base >= l.arg ? lane - l.arg : -1;
    case WarpOp::kShflDown:
      return lane - base + l.arg < width ? lane + l.arg : -1;
    case WarpOp::kShflXor: {
      const int src = lane ^ l.arg;
      return (src >= base && src < base + width) ? src : -1;
    }
    default:
      return -1;
  }
}

// Completes a warp collective: every lane of the warp waiting in one takes
// part; lanes outside its mask, exited or elsewhere do not.
__attribute__((noinline)) inline void resolve_warp(Block& b, size_t first, size_t end) {
  uint32_t waiting = 0;
  for (size_t i = first; i < end; ++i)
    if (b.lanes[i].wait == Wait::kWarp) waiting |= 1u << (i - first);
  for (size_t i = first; i < end; ++i) {
    Lane& l = b.lanes[i];
    if (l.wait != Wait::kWarp) continue;
    const int lane = static_cast<int>(i - first);
    const uint32_t part = waiting & l.mask;
    uint32_t votes = 0;
    for (size_t j = first; j < end; ++j)
      if ((part >> (j - first) & 1) && b.lanes[j].value) votes |= 1u << (j - first);
    switch (l.op) {
      case WarpOp::kBallot:
        l.result = votes;
        break;
      case WarpOp::kAny:
        l.result = votes != 0;
        break;
      case WarpOp::kAll:
        l.result = votes == part;
        break;
      case WarpOp::kSync:
        l.result = 0;
        break;
      default: {
        const int src = shuffle_source(l, lane);
        const bool ok = src >= 0 && (waiting >> src & 1);
        l.result = ok ? b.lanes[first + src].value : l.value;
      }
    }
  }
  for (size_t i = first; i < end; ++i)
    if (b.lanes[i].wait == Wait::kWarp) b.lanes[i].wait = Wait::kRun;
}

// Releases a barrier that every live thread waits at; false when they wait
// at different barriers (the error is written to the block's `err`).
__attribute__((noinline)) inline bool release_barrier(Block& b) {
  const Lane* first = nullptr;
  size_t at_site = 0, votes = 0;
  for (size_t i = 0; i < b.n; ++i) {
    const Lane& l = b.lanes[i];
    if (l.wait != Wait::kBarrier) continue;
    if (!first) first = &l;
    if (l.site == first->site) ++at_site;
    votes += l.value;
  }
  if (!first || at_site != b.live) {
    if (b.err && b.err_len)
      snprintf(b.err, b.err_len, "__syncthreads reached by %zu of %zu threads of block (%u,%u,%u)",
               at_site, b.live, blockIdx.x, blockIdx.y, blockIdx.z);
    b.failed = true;
    return false;
  }
  uint64_t r = 0;
  switch (first->barrier_op) {
    case BarrierOp::kSync:
      r = 0;
      break;
    case BarrierOp::kCount:
      r = votes;
      break;
    case BarrierOp::kAnd:
      r = votes == b.live;
      break;
    case BarrierOp::kOr:
      r = votes != 0;
      break;
  }
  for (size_t i = 0; i < b.n; ++i) {
    Lane& l = b.lanes[i];
    if (l.wait != Wait::kBarrier) continue;
    l.result = r;
    l.wait = Wait::kRun;
  }
  return true;
}

// The lane to run next, or nullptr when the block is over (every thread has
// finished) or has failed.  Warps run in order; the lanes of a warp run in
// order until each has stopped at a barrier or a warp collective, or has
// finished; a warp collective is then completed and the warp's lanes run
// again, and once no lane of the warp is left in one the next warp runs.
// When every warp has stopped, the barrier they wait at is released and the
// round starts again from the first warp.
__attribute__((noinline)) inline Lane* next_lane(Block& b) {
  if (b.trap) return nullptr;
  for (;;) {
    while (b.pos < b.warp_end) {
      Lane& l = b.lanes[b.pos++];
      if (l.wait == Wait::kRun) return &l;
    }
    if (b.warp_waits) {
      b.warp_waits = false;
      resolve_warp(b, b.warp_first, b.warp_end);
      b.pos = b.warp_first;
    } else if (b.warp_end < b.n) {
      b.warp_first = b.warp_end;
      b.warp_end = std::min(b.n, b.warp_first + 32);
    } else if (b.live == 0 || !release_barrier(b)) {
      return nullptr;
    } else {
      b.pos = b.warp_first = 0;
      b.warp_end = std::min<size_t>(b.n, 32);
    }
  }
}

// Leaves lane `l`, which has stopped or finished, for the next lane, or for
// the scheduler when there is none.  Returns when `l` runs again.
inline void switch_away(Block& b, Lane& l) {
  Lane* next = next_lane(b);
  if (next == &l) return;
  if (!next) {
    switch_context(&l.fiber, &b.scheduler);
    return;
  }
  b.current = next;
  lizard_cpu_thread.thread_idx = next->tid;
  switch_context(&l.fiber, &next->fiber);
}

// The body of every fiber: runs its thread of each block it is given.
inline void fiber_main() {
  Block& b = fibers();
  for (;;) {
    Lane& l = *b.current;
    try {
      b.kernel(b.kernel_arg);
    } catch (const Trap& t) {
      b.trap = t.what;
    }
    l.wait = Wait::kDone;
    --b.live;
    switch_away(b, l);
  }
}

// Prepares the lanes for a launch's block size: stacks for new lanes, fresh
// contexts after an error, and each lane's threadIdx.
inline void prepare_lanes(Block& b) {
  const dim3 bd = blockDim;
  const size_t n = size_t{bd.x} * bd.y * bd.z;
  if (b.lanes.size() < n) {
    const size_t old = b.lanes.size();
    b.lanes.resize(n);
    b.stale = true;  // the lanes have moved: remake every context
    for (size_t i = old; i < n; ++i) {
      void* m = mmap(nullptr, Block::kStackBytes + Block::kGuard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) {
        b.lanes.resize(i);
        throw std::bad_alloc();
      }
      mprotect(m, Block::kGuard, PROT_NONE);
      b.lanes[i].stack = static_cast<char*>(m) + Block::kGuard;
    }
  }
  if (b.stale) {
    for (Lane& l : b.lanes) make_context(&l.fiber, l.stack, Block::kStackBytes, &fiber_main);
    b.stale = false;
  }
  size_t i = 0;
  for (unsigned z = 0; z < bd.z; ++z)
    for (unsigned y = 0; y < bd.y; ++y)
      for (unsigned x = 0; x < bd.x; ++x) b.lanes[i++].tid = uint3{x, y, z};
  b.n = n;
}

inline uint64_t warp_op(WarpOp op, uint32_t mask, uint64_t value, int arg, int width) {
  Lane& l = current_lane();
  l.op = op;
  l.mask = mask;
  l.value = value;
  l.arg = arg;
  l.width = width;
  l.wait = Wait::kWarp;
  Block& b = fibers();
  b.warp_waits = true;
  switch_away(b, l);
  return l.result;
}

inline int barrier(int site, BarrierOp op, int pred) {
  Lane& l = current_lane();
  l.site = site;
  l.barrier_op = op;
  l.value = pred != 0;
  l.wait = Wait::kBarrier;
  switch_away(fibers(), l);
  return static_cast<int>(l.result);
}

inline unsigned int active_lanes_of_warp(size_t first, size_t end) {
  const Block& b = fibers();
  unsigned int m = 0;
  for (size_t i = first; i < end; ++i)
    if (b.lanes[i].wait != Wait::kDone) m |= 1u << (i - first);
  return m;
}

// Runs all threads of the current block; false on error (written to `err`).
template <typename K>
inline bool run_block(K& kernel, char* err, size_t err_len) {
  Block& b = fibers();
  b.kernel = [](void* k) { (*static_cast<K*>(k))(); };
  b.kernel_arg = &kernel;
  b.err = err;
  b.err_len = err_len;
  b.trap = nullptr;
  b.failed = false;
  for (size_t i = 0; i < b.n; ++i) b.lanes[i].wait = Wait::kRun;
  b.live = b.n;
  b.pos = b.warp_first = 0;
  b.warp_end = std::min<size_t>(b.n, 32);
  b.warp_waits = false;
  Lane* first = next_lane(b);
  if (first) {
    b.current = first;
    lizard_cpu_thread.thread_idx = first->tid;
    switch_context(&b.scheduler, &first->fiber);
    b.current = nullptr;
  }
  if (b.trap) set_error(err, err_len, b.trap);
  if (b.trap || b.failed) {
    // Threads left waiting are abandoned; their lanes start afresh next time.
    b.stale = true;
    return false;
  }
  return true;
}

#else  // !LIZARD_CPU_FIBERS

// Without fibers no kernel reaches these: the builder enables fibers whenever
// the source names a barrier or a warp collective.
inline uint64_t warp_op(WarpOp, uint32_t, uint64_t, int, int) {
  throw Trap{"warp collective in a kernel built without fibers"};
}
inline int barrier(int, BarrierOp, int) {
  throw Trap{"__syncthreads in a kernel built without fibers"};
}
inline unsigned int active_lanes_of_warp(size_t, size_t) {
  return 0xffffffffu;
}

template <typename K>
inline bool run_block(K& kernel, char* err, size_t err_len) {
  try {
    for (unsigned z = 0; z < blockDim.z; ++z)
      for (unsigned y = 0; y < blockDim.y; ++y)
        for (unsigned x = 0; x < blockDim.x; ++x) {
          lizard_cpu_thread.thread_idx = uint3{x, y, z};
          kernel();
        }
  } catch (const Trap& t) {
    set_error(err, err_len, t.what);
    return false;
  }
  return true;
}

#endif  // LIZARD_CPU_FIBERS

#if LIZARD_CPU_FIBERS
// On a fiber the thread is abandoned where it stands, like the threads left
// waiting when a block fails: nothing unwinds its frames, and its lane starts
// afresh on the next launch.  Elsewhere (threads without fibers) it throws.
[[noreturn]] __attribute__((noinline, cold)) inline void trap(const char* what) {
  Block* b = static_cast<Block*>(lizard_cpu_thread.fibers);
  if (!b || !b->current) throw Trap{what};
  b->trap = what;
  switch_context(&b->current->fiber, &b->scheduler);
  __builtin_trap();  // never resumed
}
#else
[[noreturn]] __attribute__((noinline, cold)) inline void trap(const char* what) {
  throw Trap{what};
}
#endif

template <typename T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp shuffles take values of at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <typename T>
inline T from_bits(uint64_t bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

// Runs linear blocks [first_block, end_block) of a launch on this OS thread.
template <typename K>
inline int run_launch(const lizard_cpu_launch* launch, char* err, size_t err_len, K&& kernel) {
  if (launch->shared_bytes > kMaxDynamicShared) {
    snprintf(err, err_len, "shared_bytes %llu exceeds the CPU backend's limit of %llu bytes",
             static_cast<unsigned long long>(launch->shared_bytes),
             static_cast<unsigned long long>(kMaxDynamicShared));
    return 1;
  }
  lizard_cpu_thread_state& t = lizard_cpu_thread;
  set_shared_memory(launch->shared_bytes);
  t.grid_dim = dim3(launch->grid[0], launch->grid[1], launch->grid[2]);
  t.block_dim = dim3(launch->block[0], launch->block[1], launch->block[2]);
#if LIZARD_CPU_FIBERS
  t.fibers = &fiber_block;
  try {
    prepare_lanes(fiber_block);
  } catch (const std::bad_alloc&) {
    set_error(err, err_len, "out of memory for the block's fiber stacks");
    return 1;
  }
#endif
  const uint64_t gx = t.grid_dim.x, gy = t.grid_dim.y, gxy = gx * gy;
  for (uint64_t b = launch->first_block; b < launch->end_block; ++b) {
    t.block_idx = uint3{static_cast<unsigned>(b % gx), static_cast<unsigned>(b / gx % gy),
                        static_cast<unsigned>(b / gxy)};
    if (!run_block(kernel, err, err_len)) return 1;
  }
  return 0;
}

}  // namespace lizard_cpu

#define __syncthreads() ::lizard_cpu::barrier(__COUNTER__, ::lizard_cpu::BarrierOp::kSync, 0)
#define __syncthreads_count(p) \
  ::lizard_cpu::barrier(__COUNTER__, ::lizard_cpu::BarrierOp::kCount, (p) ? 1 : 0)
#define __syncthreads_and(p) \
  ::lizard_cpu::barrier(__COUNTER__, ::lizard_cpu::BarrierOp::kAnd, (p) ? 1 : 0)
#define __syncthreads_or(p) \
  ::lizard_cpu::barrier(__COUNTER__, ::lizard_cpu::BarrierOp::kOr, (p) ? 1 : 0)

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  using namespace lizard_cpu;
  return from_bits<T>(warp_op(WarpOp::kShfl, mask, to_bits(var), src_lane, width));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  using namespace lizard_cpu;
  return from_bits<T>(warp_op(WarpOp::kShflUp, mask, to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize) {
  using namespace lizard_cpu;
  return from_bits<T>(
      warp_op(WarpOp::kShflDown, mask, to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  using namespace lizard_cpu;
  return from_bits<T>(warp_op(WarpOp::kShflXor, mask, to_bits(var), lane_mask, width));
}
inline unsigned int __ballot_sync(unsigned mask, int pred) {
  using namespace lizard_cpu;
  return static_cast<unsigned int>(warp_op(WarpOp::kBallot, mask, pred != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int pred) {
  using namespace lizard_cpu;
  return static_cast<int>(warp_op(WarpOp::kAny, mask, pred != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int pred) {
  using namespace lizard_cpu;
  return static_cast<int>(warp_op(WarpOp::kAll, mask, pred != 0, 0, 32));
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  using namespace lizard_cpu;
  warp_op(WarpOp::kSync, mask, 0, 0, 32);
}
// The lanes of the calling warp that have not exited.
inline unsigned int __activemask() {
  const size_t tid =
      threadIdx.x + size_t{blockDim.x} * (threadIdx.y + size_t{blockDim.y} * threadIdx.z);
  const size_t n = size_t{blockDim.x} * blockDim.y * blockDim.z;
  const size_t first = tid - tid % 32;
  return lizard_cpu::active_lanes_of_warp(first, std::min(n, first + 32));
}

#endif  // LIZARD_CUDA_CPU_H
