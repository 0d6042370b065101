// cuda_cpu_atomics.h: part of cuda_cpu.h (the CPU backend's CUDA layer):
// memory fences and atomics.
#ifndef LIZARD_CUDA_CPU_ATOMICS_H
#define LIZARD_CUDA_CPU_ATOMICS_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_cpu_thread.h"

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
// only at barriers, so atomics on it are plain read-modify-writes, and so are
// atomics on any memory in a launch that runs on one OS thread (the CPU
// executor runs a small launch on the calling thread alone); otherwise they
// are atomic instructions (compare-and-swap loops for floats).
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

#endif  // LIZARD_CUDA_CPU_ATOMICS_H
