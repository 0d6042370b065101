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
// the executable exports (lizard_cpu_thread, in cuda_cpu_thread.h).  Static `__shared__`
// variables are thread_local, so blocks running on different OS threads do
// not share them.  `extern __shared__ T name[];` is rewritten by the builder
// into a pointer to this OS thread's dynamic shared buffer.
#ifndef LIZARD_CUDA_CPU_H
#define LIZARD_CUDA_CPU_H

#ifndef LIZARD_CPU_FIBERS
#define LIZARD_CPU_FIBERS 1
#endif

#define LIZARD_CPU_BACKEND 1

// The parts, in the order they build on each other; each includes what it
// needs and says at its top what it holds.
// clang-format off
#include "cuda_cpu_launch_abi.h"  // the launch ABI shared with the executor
#include "cuda_cpu_types.h"       // qualifiers and vector types
#include "cuda_cpu_thread.h"      // per-OS-thread state, shared memory, __trap
#include "cuda_cpu_atomics.h"     // memory fences and atomics
#include "cuda_cpu_math.h"        // integer and bit intrinsics, device math
#include "cuda_cpu_fibers.h"      // fibers (LIZARD_CPU_FIBERS)
#include "cuda_cpu_private.h"     // private copies of aggregate fields (lizard_device.h)
#include "cuda_cpu_scheduler.h"   // the block scheduler and run_launch
#include "cuda_cpu_warp.h"        // barriers and warp operations
// clang-format on

#endif  // LIZARD_CUDA_CPU_H
