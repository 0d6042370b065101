// lizard_device_aggregate.h: part of lizard_device.h: block-private copies of
// aggregate fields, for kernels that add into the aggregate from one thread
// per row without serialising on a few hot addresses.
//
//   lizard::BlockSum<&agg_res_t::sums, K, D> sums(result);   // a [K, D] field
//   lizard::BlockSum<&agg_res_t::counts, K> counts(result);  // a [K] field
//   lizard::BlockMax<&agg_res_t::largest> largest(result);   // a scalar field
//   lizard::BlockSum<&agg_res_t::grad, lizard::kRunTimeSize> grad(result, params.dims);
//   ... sums.add_row(best, x);  counts.add(best, 1);  largest.add(0, v);
//
// `add` folds a value into one element with the object's reducer (a sum
// adds, a min keeps the smaller); `add_row` folds a Row<T, C> into row r of
// an [R, C] field.  The reducer must be the field's own (`reduce:` in the
// manifest).  Element types: float, double, and 32- and 64-bit integers.
//
// How it runs.  On a GPU, a field of at most 8 KiB whose size is a
// compile-time constant gets a copy in shared memory, filled with the
// reducer's identity when the object is made; a warp whose threads all fold
// into one element combines their values with shuffles first and folds once.
// add_row from a whole warp goes through a staging tile (the first warps of a
// block have one): into a private copy of the warp's (for the first warps, as
// many as fit in what the block's copy and the staging tiles leave of
// 40 KiB), in which every thread folds its own columns without atomics; else
// from the tile, each column combined across the warp and folded once when
// all its threads fold into one row, one atomic per value otherwise.  That
// fold is one out-of-line function per field type, so a kernel that adds
// several rows per thread compiles it once.  Warps without a tile fold each
// value with an atomic (a field of one row combines within the warp first).
// The rows of an [R, C] copy are skewed across the memory banks so that
// threads of a warp folding rows into different elements do not wait on one
// bank.  When the object goes out of scope the block waits for all its
// threads and adds each element that changed into the field, one global
// atomic per element and block.  Larger fields, and sizes known only at run
// time, are folded into the field directly.  On the CPU backend every field
// gets a private copy per OS thread, folded into the field once after the
// thread's last block of the launch.
#ifndef LIZARD_DEVICE_AGGREGATE_H
#define LIZARD_DEVICE_AGGREGATE_H

namespace lizard {

enum class Reduce { kSum, kMin, kMax };

// The size argument of a field whose element count is given at run time.
constexpr int kRunTimeSize = -1;

namespace detail {

// The largest value of T (the identity of a min), and the smallest (of a max).
template <typename T>
__device__ __forceinline__ T largest_value() {
  if constexpr ((T)0.5 != 0) {  // a floating type: infinity
#if LIZARD_DEVICE_CPU
    return (T)__builtin_huge_val();
#else
    if constexpr (sizeof(T) == 4) return __int_as_float(0x7f800000);
    return __longlong_as_double(0x7ff0000000000000ll);
#endif
  } else if constexpr ((T)-1 < (T)0) {
    return (T)(((unsigned long long)1 << (8 * sizeof(T) - 1)) - 1);
  } else {
    return (T) ~(T)0;
  }
}
template <typename T>
__device__ __forceinline__ T smallest_value() {
  if constexpr ((T)0.5 != 0) return -largest_value<T>();
  if constexpr ((T)-1 < (T)0) return (T)(-largest_value<T>() - 1);
  return (T)0;
}

template <Reduce O, typename T>
__device__ __forceinline__ T identity() {
  if constexpr (O == Reduce::kSum) return (T)0;
  if constexpr (O == Reduce::kMin) return largest_value<T>();
  return smallest_value<T>();
}

template <Reduce O, typename T>
__device__ __forceinline__ T combine(T a, T b) {
  if constexpr (O == Reduce::kSum) return a + b;
  if constexpr (O == Reduce::kMin) return b < a ? b : a;
  return b > a ? b : a;
}

// Folds v into *p atomically (global or shared memory).
template <Reduce O, typename T>
__device__ __forceinline__ void atomic_fold(T* p, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                "lizard aggregate helpers take float, double and 32- or 64-bit integers");
#if LIZARD_DEVICE_CPU
  if constexpr (O == Reduce::kSum) atomicAdd(p, v);
  if constexpr (O == Reduce::kMin) atomicMin(p, v);
  if constexpr (O == Reduce::kMax) atomicMax(p, v);
#else
  constexpr bool kFloat = (T)0.5 != 0, kSigned = (T)-1 < (T)0;
  using U = typename pick<sizeof(T) == 4, unsigned, unsigned long long>::type;
  using S = typename pick<sizeof(T) == 4, int, long long>::type;
  if constexpr (O == Reduce::kSum) {
    if constexpr (kFloat)
      atomicAdd(p, v);
    else
      atomicAdd(reinterpret_cast<U*>(p), (U)v);
  } else if constexpr (kFloat) {
    // Non-negative floats order as signed integers, negative ones in reverse
    // as unsigned integers.
    S s;
    if constexpr (sizeof(T) == 4)
      s = __float_as_int(v);
    else
      s = __double_as_longlong(v);
    const U u = (U)s;
    if ((O == Reduce::kMin) == (s >= 0)) {
      if (O == Reduce::kMin)
        atomicMin(reinterpret_cast<S*>(p), s);
      else
        atomicMin(reinterpret_cast<U*>(p), u);
    } else {
      if (O == Reduce::kMin)
        atomicMax(reinterpret_cast<U*>(p), u);
      else
        atomicMax(reinterpret_cast<S*>(p), s);
    }
  } else if constexpr (kSigned) {
    if constexpr (O == Reduce::kMin)
      atomicMin(reinterpret_cast<S*>(p), (S)v);
    else
      atomicMax(reinterpret_cast<S*>(p), (S)v);
  } else {
    if constexpr (O == Reduce::kMin)
      atomicMin(reinterpret_cast<U*>(p), (U)v);
    else
      atomicMax(reinterpret_cast<U*>(p), (U)v);
  }
#endif
}

#if LIZARD_DEVICE_CPU
// Folds a private copy into its field (see cuda_cpu_private.h).
template <Reduce O, typename T>
void fold_copy(void* field, const void* copy, size_t count) {
  T* f = static_cast<T*>(field);
  const T* c = static_cast<const T*>(copy);
  const T id = identity<O, T>();
  for (size_t i = 0; i < count; ++i)
    if (c[i] != id) atomic_fold<O>(f + i, c[i]);
}
#else
template <Reduce O, typename T>
__device__ __forceinline__ T warp_fold(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine<O>(v, __shfl_xor_sync(kFullWarp, v, o));
  return v;
}

// True when all 32 threads of the warp run this call together with the same `key`.
template <typename K>
__device__ __forceinline__ bool warp_agrees(K key) {
  if (__activemask() != kFullWarp) return false;
  return __all_sync(kFullWarp, key == __shfl_sync(kFullWarp, key, 0));
}
#endif

}  // namespace detail

template <Reduce O, auto Field, int R = 1, int C = 1>
class BlockAggregate {
 public:
  using owner = typename detail::field_traits<decltype(Field)>::owner;
  using T = typename detail::field_traits<decltype(Field)>::value;
  static constexpr bool kRunTime = R < 0;
  static constexpr unsigned long long kCount = kRunTime ? 0 : (unsigned long long)R * C;
  static constexpr bool kShared =
      !LIZARD_DEVICE_CPU && !kRunTime && kCount * sizeof(T) <= detail::kMaxSharedCopyBytes;
  static_assert(C >= 1, "the row width of an aggregate helper must be at least 1");

 private:
  // add_row's fast path keeps, for each of the first warps of a block, a
  // private copy of the field (one per group of threads that folds rows side
  // by side: 32 / C of them for C < 32) in which every thread folds its own
  // columns with plain loads and stores, no atomics.
#if LIZARD_DEVICE_CPU
  static constexpr int kWarpCopies = 0;
#else
  using Tile = detail::RowTile<C*(int)sizeof(T)>;
  static constexpr int kSubCopies = C >= 32 ? 1 : (32 % C == 0 ? 32 / C : 0);
  static constexpr unsigned long long kWarpCopyElems = kCount * kSubCopies;
  // The warp copies take what the block copy and the staging tiles leave of
  // detail::kAggregateSharedBytes.
  static constexpr unsigned long long kBlockCopyBytes = kShared ? kCount * sizeof(T) : 0;
  static constexpr unsigned long long kTileBytes =
      Tile::kUsed ? (unsigned long long)Tile::kWarps * Tile::kWarpVecs * 16 : 0;
  static constexpr unsigned long long kWarpCopyRoom =
      detail::kAggregateSharedBytes > kBlockCopyBytes + kTileBytes
          ? detail::kAggregateSharedBytes - kBlockCopyBytes - kTileBytes
          : 0;
  static constexpr unsigned long long kWarpCopyFit =
      kWarpCopyElems == 0 ? 0 : kWarpCopyRoom / (kWarpCopyElems * sizeof(T));
#if defined(LIZARD_NO_WARP_COPIES)
  static constexpr int kWarpCopies = 0;
#else
  static constexpr int kWarpCopies =
      (kShared && Tile::kUsed && C >= 4 && kSubCopies > 0)
          ? (int)(kWarpCopyFit < (unsigned long long)Tile::kWarps ? kWarpCopyFit : Tile::kWarps)
          : 0;
#endif
#endif

 public:
  // For a field of R*C elements (R and C compile-time constants).
  __device__ explicit BlockAggregate(const owner& result) : field_(result.*Field) {
    static_assert(!kRunTime,
                  "give the element count: BlockSum<&f, lizard::kRunTimeSize>(result, n)");
    start(kCount);
  }
  // For a field of `count` elements known at run time (R = kRunTimeSize).
  __device__ BlockAggregate(const owner& result, long long count) : field_(result.*Field) {
    static_assert(kRunTime, "the size is a template argument: drop the count");
    start((unsigned long long)count);
  }
  BlockAggregate(const BlockAggregate&) = delete;
  BlockAggregate& operator=(const BlockAggregate&) = delete;

  __device__ ~BlockAggregate() {
#if !LIZARD_DEVICE_CPU
    if constexpr (kShared) {
      __syncthreads();
      const T id = detail::identity<O, T>();
      for (unsigned i = detail::linear_thread(); i < kCount; i += detail::block_threads()) {
        T v = copy_[position(i / C, i % C)];
        if constexpr (kWarpCopies > 0) {
          for (int w = 0; w < kWarpCopies * kSubCopies; ++w)
            v = detail::combine<O>(v, warp_copies_[w * kCount + i]);
        }
        if (v != id) detail::atomic_fold<O>(field_ + i, v);
      }
    }
#endif
  }

  // Folds v into element i of the field (row-major index).
  __device__ __forceinline__ void add(long long i, T v) {
#if LIZARD_DEVICE_CPU
    copy_[i] = detail::combine<O>(copy_[i], v);
#else
    T* slot = kShared ? copy_ + position(i / C, i % C) : field_ + i;
    const unsigned lane = detail::linear_thread() & 31;
    if (__activemask() == detail::kFullWarp) {
      if (kCount == 1 || detail::warp_agrees(i)) {  // one element: combine, fold once
        v = detail::warp_fold<O>(v);
        if (lane == 0) detail::atomic_fold<O>(slot, v);
        return;
      }
      if constexpr ((T)0.5 == 0) {  // integers, all threads folding the same value (a count)
        if (__all_sync(detail::kFullWarp, v == __shfl_sync(detail::kFullWarp, v, 0))) {
          const unsigned peers = __match_any_sync(detail::kFullWarp, i);
          if (lane == (unsigned)__ffs(peers) - 1)
            detail::atomic_fold<O>(slot, O == Reduce::kSum ? (T)(v * __popc(peers)) : v);
          return;
        }
      }
    }
    detail::atomic_fold<O>(slot, v);
#endif
  }
  // Folds v into element (r, c) of an [R, C] field.
  __device__ __forceinline__ void add(int r, int c, T v) {
    add((long long)r * C + c, v);
  }

  // Folds the C values of `x` into row r of an [R, C] field.
  __device__ __forceinline__ void add_row(int r, const Row<T, C>& x) {
#if LIZARD_DEVICE_CPU
    T* row = copy_ + (long long)r * C;
#pragma unroll
    for (int j = 0; j < C; ++j) row[j] = detail::combine<O>(row[j], x.v[j]);
#else
    // A whole warp with a staging tile goes through it: into the warp's own
    // copy where it has one, else folded from the tile into the block's
    // copy.  Both are short loops, so a kernel that adds several rows per
    // thread stays small.  A field too large for shared memory takes its
    // values straight to global atomics (below): the tile would only add a
    // trip through shared memory before the same atomics.
    if constexpr (Tile::kUsed && kShared) {
      if (__activemask() == detail::kFullWarp) {
        float4* tile = Tile::of_this_warp();
        if (tile) {
          const unsigned lane = detail::linear_thread() & 31;
#pragma unroll
          for (int q = 0; q < Tile::kVecs; ++q)
            tile[lane * Tile::kStride + q] = reinterpret_cast<const float4*>(x.v)[q];
          __syncwarp();
          if constexpr (kWarpCopies > 0) {
            const unsigned warp = detail::linear_thread() >> 5;
            if (warp < (unsigned)kWarpCopies) {
              T* mine = warp_copies_ + warp * kWarpCopyElems;
              if constexpr (kShortRows)
                fold_into_warp_copy_out_of_line(tile, r, mine);
              else
                fold_into_warp_copy(tile, r, mine);
              return;
            }
          }
          fold_from_tile(tile, r, copy_);
          return;
        }
      }
    }
    // Without a tile: a warp that folds into one row combines each column
    // with shuffles first (only for fields of one row, or rows no tile takes:
    // in a field of many rows a warp rarely agrees), else one atomic per value.
    if constexpr (R == 1 || !Tile::kUsed) {
      if (detail::warp_agrees(r)) {
        const bool leader = (detail::linear_thread() & 31) == 0;
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const T v = detail::warp_fold<O>(x.v[j]);
          if (leader) detail::atomic_fold<O>(slot(r, j), v);
        }
        return;
      }
    }
#pragma unroll
    for (int j = 0; j < C; ++j) detail::atomic_fold<O>(slot(r, j), x.v[j]);
#endif
  }

  // The same, under names that read right for a min or a max.
  __device__ __forceinline__ void fold(long long i, T v) {
    add(i, v);
  }
  __device__ __forceinline__ void fold_row(int r, const Row<T, C>& x) {
    add_row(r, x);
  }

 private:
  __device__ __forceinline__ void start(unsigned long long count) {
#if LIZARD_DEVICE_CPU
    copy_ = lizard_cpu::private_copy<T>(field_, count, detail::identity<O, T>(),
                                        &detail::fold_copy<O, T>);
#else
    (void)count;
    if constexpr (kShared) {
      copy_ = detail::shared_copy<T, kCount, detail::FieldKey<Field> >();
      const T id = detail::identity<O, T>();
      for (unsigned i = detail::linear_thread(); i < kCount; i += detail::block_threads())
        copy_[i] = id;
      if constexpr (kWarpCopies > 0) {
        warp_copies_ = detail::shared_copy<T, kWarpCopies * kWarpCopyElems, WarpCopiesKey>();
        for (unsigned i = detail::linear_thread(); i < kWarpCopies * kWarpCopyElems;
             i += detail::block_threads())
          warp_copies_[i] = id;
      }
      __syncthreads();
    }
#endif
  }

#if !LIZARD_DEVICE_CPU
  // Where element (r, c) lives in the shared copy: each row is rotated by a
  // few places, so that rows that share their memory banks are rotated apart.
  static __device__ __forceinline__ unsigned position(long long r, int c) {
    constexpr int kRowsPerBankRound = (C < 32 && 32 % C == 0) ? 32 / C : 1;
    const int rotation = (int)((r / kRowsPerBankRound) % C);
    const int at = c + rotation < C ? c + rotation : c + rotation - C;
    return (unsigned)(r * C + at);
  }
  struct WarpCopiesKey {};

  // Folds the 32 rows staged in the warp's tile (each thread's into row r of
  // the field) into the warp's private copy `mine`: each thread folds its own
  // columns of every row, no atomics (for C < 32, each group of C threads
  // takes every (32 / C)-th row, into its own part of the copy).
  static __device__ __forceinline__ void fold_into_warp_copy(const float4* tile, int r, T* mine) {
    constexpr int kRowElems = Tile::kStride * 16 / (int)sizeof(T);
    const int lane = (int)(detail::linear_thread() & 31);
    const T* rows = reinterpret_cast<const T*>(tile);
    if constexpr (C >= 32) {
#pragma unroll 4
      for (int p = 0; p < 32; ++p) {
        const int rp = __shfl_sync(detail::kFullWarp, r, p);
        for (int c = lane; c < C; c += 32) {
          T& s = mine[rp * C + c];
          s = detail::combine<O>(s, rows[p * kRowElems + c]);
        }
      }
    } else {
      const int group = lane / C, c = lane % C;
      T* part = mine + group * kCount;
#pragma unroll 4
      for (int p0 = 0; p0 < 32; p0 += 32 / C) {
        const int p = p0 + group;
        const int rp = __shfl_sync(detail::kFullWarp, r, p);
        T& s = part[rp * C + c];
        s = detail::combine<O>(s, rows[p * kRowElems + c]);
      }
    }
    __syncwarp();
  }
  // Rows of at most 64 bytes fold out of line: kernels with short rows add
  // many per thread (examples/kmeans: 8), and a call costs them no
  // occupancy.  Longer rows fold inline, where the registers a call needs
  // would cost a block per multiprocessor (kmeans at (16, 32) ran 18% slower
  // out of line on an H200: 136 registers against 124).
  static constexpr bool kShortRows = C * sizeof(T) <= 64;
  static __device__ __noinline__ void fold_into_warp_copy_out_of_line(const float4* tile, int r,
                                                                      T* mine) {
    fold_into_warp_copy(tile, r, mine);
  }
  // The same into the block's shared copy (`target`), out of line: a
  // kernel that adds several rows per thread calls one copy of it rather
  // than inlining one per row, which keeps its compile short (its arguments
  // are pointers and the row index, so the caller's rows stay in
  // registers).  When every thread folds into one row, each column is
  // combined across the warp and folded once; otherwise each thread folds
  // its own row, one atomic per value, read back a vector at a time.
  static __device__ __noinline__ void fold_from_tile(const float4* tile, int r, T* target) {
    constexpr int kRowElems = Tile::kStride * 16 / (int)sizeof(T);
    constexpr int kPerVec = 16 / (int)sizeof(T);
    const int lane = (int)(detail::linear_thread() & 31);
    const T* rows = reinterpret_cast<const T*>(tile);
    if (detail::warp_agrees(r)) {
      if constexpr (C < 32 && 32 % C == 0) {
        // 32 / C groups of C threads, each combining every (32 / C)-th row.
        const int group = lane / C, c = lane % C;
        T v = detail::identity<O, T>();
#pragma unroll 4
        for (int p = group; p < 32; p += 32 / C) v = detail::combine<O>(v, rows[p * kRowElems + c]);
#pragma unroll
        for (int o = C; o < 32; o <<= 1)
          v = detail::combine<O>(v, __shfl_xor_sync(detail::kFullWarp, v, o));
        if (group == 0) detail::atomic_fold<O>(slot_of(target, r, c), v);
      } else {
        for (int c = lane; c < C; c += 32) {
          T v = rows[c];
#pragma unroll 4
          for (int p = 1; p < 32; ++p) v = detail::combine<O>(v, rows[p * kRowElems + c]);
          detail::atomic_fold<O>(slot_of(target, r, c), v);
        }
      }
    } else {
#pragma unroll 1
      for (int q = 0; q < Tile::kVecs; ++q) {
        const T* v = reinterpret_cast<const T*>(tile + lane * Tile::kStride + q);
#pragma unroll
        for (int e = 0; e < kPerVec; ++e)
          detail::atomic_fold<O>(slot_of(target, r, q * kPerVec + e), v[e]);
      }
    }
    __syncwarp();
  }
  // Element (r, c) of the shared copy or of the field, from its start.
  static __device__ __forceinline__ T* slot_of(T* target, int r, int c) {
    if constexpr (kShared) return target + position(r, c);
    return target + (long long)r * C + c;
  }
  __device__ __forceinline__ T* slot(int r, int c) const {
    return slot_of(kShared ? copy_ : field_, r, c);
  }
#endif

  T* field_;
  T* copy_ = nullptr;
  T* warp_copies_ = nullptr;
};

template <auto Field, int R = 1, int C = 1>
using BlockSum = BlockAggregate<Reduce::kSum, Field, R, C>;
template <auto Field, int R = 1, int C = 1>
using BlockMin = BlockAggregate<Reduce::kMin, Field, R, C>;
template <auto Field, int R = 1, int C = 1>
using BlockMax = BlockAggregate<Reduce::kMax, Field, R, C>;

}  // namespace lizard

#endif  // LIZARD_DEVICE_AGGREGATE_H
