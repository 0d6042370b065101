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
// Static `__shared__` variables are thread_local, so blocks running on
// different OS threads do not share them.  `extern __shared__ T name[];` is
// rewritten by the builder into a pointer to this OS thread's dynamic shared
// buffer (lizard_cpu::dynamic_shared()).
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
namespace lizard_cpu {

struct Ranges {
  uintptr_t lo[2] = {0, 0};  // dynamic shared buffer; this module's TLS block
  uintptr_t len[2] = {0, 0};
};

// The dynamic shared buffer: reserved once per OS thread, at a fixed address
// for the thread's life, so rewritten `extern __shared__` pointers stay valid.
constexpr uint64_t kMaxDynamicShared = uint64_t{16} << 20;

struct DynamicShared {
  char* base = nullptr;
  ~DynamicShared() {
    if (base) munmap(base, kMaxDynamicShared);
  }
};

}  // namespace lizard_cpu

static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static thread_local dim3 blockDim;
static thread_local dim3 gridDim;
static constexpr int warpSize = 32;

namespace lizard_cpu {

static thread_local Ranges block_local_ranges;
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
  const Ranges& r = block_local_ranges;
  return a - r.lo[0] < r.len[0] || a - r.lo[1] < r.len[1];
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

// Records where this OS thread's shared memory lies for `shared_bytes`.
inline void set_block_local_ranges(uint64_t shared_bytes) {
  Ranges& r = block_local_ranges;
  r.lo[0] = reinterpret_cast<uintptr_t>(dynamic_shared());
  r.len[0] = shared_bytes;
  if (r.len[1] == 0) {
    TlsQuery q;
    q.code = reinterpret_cast<uintptr_t>(&find_module_tls);
    dl_iterate_phdr(&find_module_tls, &q);
    r.lo[1] = q.lo;
    r.len[1] = q.len;
  }
}

// A failure inside a kernel (__trap, a divergent barrier): unwinds the block.
struct Trap {
  const char* what;
};

inline void set_error(char* err, size_t err_len, const char* text) {
  if (err && err_len) snprintf(err, err_len, "%s", text);
}

}  // namespace lizard_cpu

[[noreturn]] inline void __trap() {
  throw lizard_cpu::Trap{"__trap() called"};
}
[[noreturn]] inline void __brkpt() {
  throw lizard_cpu::Trap{"__brkpt() called"};
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
// between a thread and the block's scheduler with a context switch.  On
// x86-64 the switch is a few instructions (callee-saved registers, the SSE and
// x87 control words, the stack pointer); elsewhere it is ucontext.
#if defined(__x86_64__)
extern "C" void lizard_cpu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .weak lizard_cpu_switch
  .hidden lizard_cpu_switch
  .type lizard_cpu_switch,@function
lizard_cpu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size lizard_cpu_switch,.-lizard_cpu_switch
)");

struct Context {
  void* sp = nullptr;
};
inline void switch_context(Context* save, Context* load) {
  lizard_cpu_switch(&save->sp, load->sp);
}
// Prepares `c` so that switching to it calls entry() on the stack [base, base + size).
inline void make_context(Context* c, char* base, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t{15};
  uint64_t* ret = reinterpret_cast<uint64_t*>(top - 16);  // 16-aligned: entry sees a call frame
  *ret = reinterpret_cast<uint64_t>(entry);
  uint64_t* sp = ret - 8;  // rbp rbx r12 r13 r14 r15 (zero), then the control words
  for (int i = 0; i < 8; ++i) sp[i] = 0;
  sp[0] = 0x037F;  // x87 control word: default
  sp[1] = 0x1F80;  // MXCSR: default
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

// Fiber stacks with a guard page, reused across blocks: one pool per OS thread.
class StackPool {
 public:
  static constexpr size_t kStackBytes = 256 * 1024;
  ~StackPool() {
    for (char* p : free_) munmap(p - kGuard, kStackBytes + kGuard);
  }
  char* allocate() {
    if (!free_.empty()) {
      char* base = free_.back();
      free_.pop_back();
      return base;
    }
    void* m = mmap(nullptr, kStackBytes + kGuard, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mprotect(m, kGuard, PROT_NONE);
    return static_cast<char*>(m) + kGuard;
  }
  void release(char* base) { free_.push_back(base); }

 private:
  static constexpr size_t kGuard = 4096;
  std::vector<char*> free_;
};

enum class Wait : uint8_t { kRun, kBarrier, kWarp, kDone };

struct Lane {
  Context fiber;  // the thread, while it is suspended
  Context sink;   // the scheduler, while the thread runs
  char* stack = nullptr;
  uint3 tid;
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

// The threads of the block now running on this OS thread.
struct Block {
  std::vector<Lane> lanes;
  Lane* current = nullptr;
  const char* trap = nullptr;
  void (*kernel)(void*) = nullptr;  // runs one GPU thread's body
  void* kernel_arg = nullptr;
};

static thread_local Block block;
static thread_local StackPool stack_pool;

inline Lane& current_lane() {
  if (!block.current) throw Trap{"barrier or warp collective outside a kernel"};
  return *block.current;
}

inline void suspend(Lane& l) {
  switch_context(&l.fiber, &l.sink);
}

// First frame of every fiber: runs the thread's body, then hands control back
// to the scheduler for good.
inline void fiber_main() {
  Lane& l = *block.current;
  try {
    block.kernel(block.kernel_arg);
  } catch (const Trap& t) {
    block.trap = t.what;
  }
  l.wait = Wait::kDone;
  switch_context(&l.fiber, &l.sink);
  __builtin_trap();  // a finished fiber is never resumed
}

inline uint64_t warp_op(WarpOp op, uint32_t mask, uint64_t value, int arg, int width) {
  Lane& l = current_lane();
  l.op = op;
  l.mask = mask;
  l.value = value;
  l.arg = arg;
  l.width = width;
  l.wait = Wait::kWarp;
  suspend(l);
  return l.result;
}

inline int barrier(int site, BarrierOp op, int pred) {
  Lane& l = current_lane();
  l.site = site;
  l.barrier_op = op;
  l.value = pred != 0;
  l.wait = Wait::kBarrier;
  suspend(l);
  return static_cast<int>(l.result);
}

inline unsigned int active_lanes_of_warp(size_t first, size_t end) {
  unsigned int m = 0;
  for (size_t i = first; i < end; ++i)
    if (block.lanes[i].wait != Wait::kDone) m |= 1u << (i - first);
  return m;
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
inline void resolve_warp(size_t first, size_t end) {
  uint32_t waiting = 0;
  for (size_t i = first; i < end; ++i)
    if (block.lanes[i].wait == Wait::kWarp) waiting |= 1u << (i - first);
  for (size_t i = first; i < end; ++i) {
    Lane& l = block.lanes[i];
    if (l.wait != Wait::kWarp) continue;
    const int lane = static_cast<int>(i - first);
    const uint32_t part = waiting & l.mask;
    uint32_t votes = 0;
    for (size_t j = first; j < end; ++j)
      if ((part >> (j - first) & 1) && block.lanes[j].value) votes |= 1u << (j - first);
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
        l.result = ok ? block.lanes[first + src].value : l.value;
      }
    }
  }
  for (size_t i = first; i < end; ++i)
    if (block.lanes[i].wait == Wait::kWarp) block.lanes[i].wait = Wait::kRun;
}

inline void run_lane(Lane& l) {
  block.current = &l;
  threadIdx = l.tid;
  switch_context(&l.sink, &l.fiber);
  block.current = nullptr;
}

// Runs the lanes of one warp until each waits at a barrier or has exited.
inline void run_warp(size_t first, size_t end) {
  for (;;) {
    bool warp_waits = false;
    for (size_t i = first; i < end; ++i) {
      Lane& l = block.lanes[i];
      if (l.wait == Wait::kRun) run_lane(l);
      if (block.trap) return;
      warp_waits |= l.wait == Wait::kWarp;
    }
    if (!warp_waits) return;
    resolve_warp(first, end);
  }
}

// Releases a barrier that every live thread waits at; false when they wait
// at different barriers (the error is written to `err`).
inline bool release_barrier(size_t live, char* err, size_t err_len) {
  const Lane* first = nullptr;
  size_t at_site = 0, votes = 0;
  for (const Lane& l : block.lanes) {
    if (l.wait != Wait::kBarrier) continue;
    if (!first) first = &l;
    if (l.site == first->site) ++at_site;
    votes += l.value;
  }
  if (at_site != live) {
    snprintf(err, err_len, "__syncthreads reached by %zu of %zu threads of block (%u,%u,%u)",
             at_site, live, blockIdx.x, blockIdx.y, blockIdx.z);
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
      r = votes == live;
      break;
    case BarrierOp::kOr:
      r = votes != 0;
      break;
  }
  for (Lane& l : block.lanes) {
    if (l.wait != Wait::kBarrier) continue;
    l.result = r;
    l.wait = Wait::kRun;
  }
  return true;
}

template <typename K>
inline void start_lanes(size_t n, K& kernel) {
  block.kernel = [](void* k) { (*static_cast<K*>(k))(); };
  block.kernel_arg = &kernel;
  block.lanes.resize(n);
  block.trap = nullptr;
  size_t i = 0;
  for (unsigned z = 0; z < blockDim.z; ++z)
    for (unsigned y = 0; y < blockDim.y; ++y)
      for (unsigned x = 0; x < blockDim.x; ++x, ++i) {
        Lane& l = block.lanes[i];
        l.tid = uint3{x, y, z};
        l.wait = Wait::kRun;
        if (!l.stack) l.stack = stack_pool.allocate();
        make_context(&l.fiber, l.stack, StackPool::kStackBytes, &fiber_main);
      }
}

// Runs all threads of the current block; false on error (written to `err`).
template <typename K>
inline bool run_block(K& kernel, char* err, size_t err_len) {
  const size_t n = size_t{blockDim.x} * blockDim.y * blockDim.z;
  start_lanes(n, kernel);
  bool ok = true;
  for (;;) {
    for (size_t w = 0; w < n && !block.trap; w += 32) run_warp(w, std::min(n, w + 32));
    if (block.trap) {
      set_error(err, err_len, block.trap);
      ok = false;
      break;
    }
    size_t live = 0;
    for (const Lane& l : block.lanes) live += l.wait != Wait::kDone;
    if (live == 0) break;
    if (!release_barrier(live, err, err_len)) {
      ok = false;
      break;
    }
  }
  // Threads left waiting after an error are abandoned with their stacks.
  for (Lane& l : block.lanes) {
    if (l.stack) stack_pool.release(l.stack);
    l.stack = nullptr;
  }
  block.lanes.clear();
  return ok;
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
          threadIdx = uint3{x, y, z};
          kernel();
        }
  } catch (const Trap& t) {
    set_error(err, err_len, t.what);
    return false;
  }
  return true;
}

#endif  // LIZARD_CPU_FIBERS

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
  set_block_local_ranges(launch->shared_bytes);
  gridDim = dim3(launch->grid[0], launch->grid[1], launch->grid[2]);
  blockDim = dim3(launch->block[0], launch->block[1], launch->block[2]);
  const uint64_t gx = gridDim.x, gxy = uint64_t{gridDim.x} * gridDim.y;
  for (uint64_t b = launch->first_block; b < launch->end_block; ++b) {
    blockIdx = uint3{static_cast<unsigned>(b % gx), static_cast<unsigned>(b / gx % gridDim.y),
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
