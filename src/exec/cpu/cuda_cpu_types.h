// cuda_cpu_types.h: part of cuda_cpu.h (the CPU backend's CUDA layer): the
// execution-space qualifiers and the vector types (dim3, uint3, float4, ...).
#ifndef LIZARD_CUDA_CPU_TYPES_H
#define LIZARD_CUDA_CPU_TYPES_H

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

#endif  // LIZARD_CUDA_CPU_TYPES_H
