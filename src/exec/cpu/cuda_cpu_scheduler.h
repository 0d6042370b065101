// cuda_cpu_scheduler.h: part of cuda_cpu.h (the CPU backend's CUDA layer):
// the block scheduler: which lane runs next, warp collectives and barriers,
// running a block (on fibers, or in a plain loop without them) and a launch's
// range of blocks (run_launch, called by the generated entry points).
#ifndef LIZARD_CUDA_CPU_SCHEDULER_H
#define LIZARD_CUDA_CPU_SCHEDULER_H

#include <new>

#include "cuda_cpu_fibers.h"
#include "cuda_cpu_launch_abi.h"
#include "cuda_cpu_private.h"

namespace lizard_cpu {

#if LIZARD_CPU_FIBERS

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
  t.solo = (launch->flags & LIZARD_CPU_LAUNCH_SOLO) ? 1 : 0;
  struct EndSolo {  // this OS thread's next launch may not be solo
    lizard_cpu_thread_state& t;
    ~EndSolo() { t.solo = 0; }
  } end_solo{t};
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
  begin_private_copies();
  for (uint64_t b = launch->first_block; b < launch->end_block; ++b) {
    t.block_idx = uint3{static_cast<unsigned>(b % gx), static_cast<unsigned>(b / gx % gy),
                        static_cast<unsigned>(b / gxy)};
    if (!run_block(kernel, err, err_len)) {
      drop_private_copies();
      return 1;
    }
  }
  flush_private_copies();
  return 0;
}

}  // namespace lizard_cpu

#endif  // LIZARD_CUDA_CPU_SCHEDULER_H
