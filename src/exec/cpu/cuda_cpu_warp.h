// cuda_cpu_warp.h: part of cuda_cpu.h (the CPU backend's CUDA layer): the
// barriers and warp operations kernels call (__syncthreads, __shfl_sync,
// __ballot_sync, __syncwarp, __activemask, ...).
#ifndef LIZARD_CUDA_CPU_WARP_H
#define LIZARD_CUDA_CPU_WARP_H

#include <algorithm>

#include "cuda_cpu_scheduler.h"

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

#endif  // LIZARD_CUDA_CPU_WARP_H
