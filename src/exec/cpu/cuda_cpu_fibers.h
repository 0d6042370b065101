// cuda_cpu_fibers.h: part of cuda_cpu.h (the CPU backend's CUDA layer): the
// fibers that run the threads of a block when LIZARD_CPU_FIBERS is 1 (the
// kernel uses a barrier or a warp collective): context switch, lanes, and the
// per-OS-thread block of lanes.
#ifndef LIZARD_CUDA_CPU_FIBERS_H
#define LIZARD_CUDA_CPU_FIBERS_H

#ifndef LIZARD_CPU_FIBERS
#define LIZARD_CPU_FIBERS 1
#endif
#if LIZARD_CPU_FIBERS
#include <vector>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif
#endif

#include "cuda_cpu_thread.h"

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

#endif  // LIZARD_CPU_FIBERS

}  // namespace lizard_cpu

#endif  // LIZARD_CUDA_CPU_FIBERS_H
