// cuda_cpu_launch_abi.h: the launch of a range of blocks, as the CPU
// executor passes it to a kernel library's lizard_cpu_kernel_NAME entry point.
// Plain C with a fixed layout; the one declaration both sides compile
// (cpu_executor.h, and kernel builds through cuda_cpu.h).
#ifndef LIZARD_CUDA_CPU_LAUNCH_ABI_H
#define LIZARD_CUDA_CPU_LAUNCH_ABI_H

#include <stdint.h>

extern "C" {
typedef struct {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;
  uint64_t first_block;  // linear blocks [first_block, end_block) run on the calling thread
  uint64_t end_block;
  uint64_t flags;  // LIZARD_CPU_LAUNCH_* bits
} lizard_cpu_launch;
}
static_assert(sizeof(lizard_cpu_launch) == 56, "lizard_cpu_launch layout");

// Every block of the launch runs on the calling OS thread, one after another:
// no other thread touches the launch's memory meanwhile, so its atomics need
// no atomic instruction.
#define LIZARD_CPU_LAUNCH_SOLO 1u

#endif  // LIZARD_CUDA_CPU_LAUNCH_ABI_H
