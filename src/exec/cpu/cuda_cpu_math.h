// cuda_cpu_math.h: part of cuda_cpu.h (the CPU backend's CUDA layer): integer
// and bit intrinsics, cache-hinted loads and stores, and device math.
#ifndef LIZARD_CUDA_CPU_MATH_H
#define LIZARD_CUDA_CPU_MATH_H

#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_cpu_types.h"

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

#endif  // LIZARD_CUDA_CPU_MATH_H
