// lizard_device.h: the device library that every kernel gets through
// lizard_program.h, the same on the CUDA backend (NVRTC) and the CPU backend.
// It holds the pieces a one-thread-per-row kernel is written from, each
// made to run at the speed of the memory:
//
//   lizard::rows(data)              the partition's rows, a grid-stride loop
//   lizard::row_groups<R>(data)     the same, R rows at a time per thread
//   lizard::Row<T, D>               one row's D values, in registers
//   lizard::load_row<D>(p, row)     row `row` of a [rows, D] field (16-byte loads when aligned)
//   lizard::store_row(p, row, x)    and back
//   lizard::dot, lizard::distance2  arithmetic on rows
//   lizard::BlockTable<&global_state_t::f, R, C>
//                                   a read-only copy of a state array, in shared memory
//   lizard::BlockSum / BlockMin / BlockMax<&agg_res_t::f, R, C>
//                                   a block-private copy of an aggregate field
//                                   (lizard_device_aggregate.h)
//   lizard::NearestRow<&global_state_t::f, K, D>
//                                   the nearest row of a state table, exact, on
//                                   tensor cores where a warp asks together
//                                   (lizard_device_nearest.h)
//
// Sizes given as template arguments are compile-time constants: specialised
// params (`specialize: true` in the manifest) are, so `params.dims` can be
// one.  A kernel:
//
//   constexpr int K = params.k, D = params.dims;
//   const lizard::BlockTable<&global_state_t::centroids, K, D> centroids(state);
//   lizard::BlockSum<&agg_res_t::sums, K, D> sums(result);
//   for (const long long row : lizard::rows(data)) {
//     const lizard::Row<float, D> x = lizard::load_row<D>(data.points, row);
//     ... sums.add_row(best, x);
//   }
//
// Objects that copy or accumulate in shared memory synchronise the block when
// they are made and when they go out of scope: make them at the top of the
// kernel, where every thread of the block passes, and do not return from the
// kernel before their scope ends.  The generated header includes this file
// only for kernels (C++ on a backend), never for host.cpp.
#ifndef LIZARD_DEVICE_H
#define LIZARD_DEVICE_H

#if defined(LIZARD_CPU_BACKEND)
#define LIZARD_DEVICE_CPU 1
#else
#define LIZARD_DEVICE_CPU 0
#endif

namespace lizard {

// ---------------------------------------------------------------------------
// Small pieces of <type_traits>: NVRTC has no standard library.
namespace detail {

template <typename M>
struct field_traits;
template <typename S, typename T>
struct field_traits<T * S::*> {
  using owner = S;
  using value = T;
};
template <typename T>
struct remove_const {
  using type = T;
};
template <typename T>
struct remove_const<const T> {
  using type = T;
};
template <bool B, typename A, typename Z>
struct pick {
  using type = A;
};
template <typename A, typename Z>
struct pick<false, A, Z> {
  using type = Z;
};
template <auto F>
struct FieldKey {};

// A block has 48 KiB of static shared memory in all, and a kernel combines
// the building blocks that use it, so each keeps to a share: a table
// (BlockTable; NearestRow at most 4 KiB) or an aggregate's block copy takes
// at most kMaxSharedCopyBytes (larger ones work on the global array, or a
// table on the kernel's dynamic shared memory); an aggregate's copies
// together (its block copy, the staging tiles of add_row and the warps'
// private copies) at most kAggregateSharedBytes.  A table, a [k, d] aggregate and a [k]
// aggregate then fit: the larger the [k, d] copy, the fewer warp copies
// beside it.
constexpr unsigned long long kMaxSharedCopyBytes = 8192;
constexpr unsigned long long kAggregateSharedBytes = 40960;

__device__ __forceinline__ unsigned linear_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_threads() {
  return blockDim.x * blockDim.y * blockDim.z;
}

#if !LIZARD_DEVICE_CPU
// A block's copy of an array of N values of T in static shared memory, one
// per Key (a field) and kernel.
template <typename T, unsigned long long N, typename Key>
__device__ __forceinline__ T* shared_copy() {
  __shared__ __align__(16) T copy[N];
  return copy;
}

constexpr unsigned kFullWarp = 0xffffffffu;

// Staging space for 32 rows of kRowBytes per warp, in shared memory, through
// which a warp turns 32 rows read with coalesced 16-byte loads into one row
// per thread (load_row), or rows held one per thread into columns that each
// thread folds on its own (BlockSum::add_row).  Rows are padded by 16 bytes
// so that neither side waits on a memory bank.  Rows of 16 to 256 bytes; the
// first warps of a block have one (at most 4, and 20 KiB in all).
template <int kRowBytes>
struct RowTile {
  static constexpr bool kUsed = kRowBytes % 16 == 0 && kRowBytes >= 16 && kRowBytes <= 256;
  static constexpr int kVecs = kRowBytes / 16;  // 16-byte vectors per row
  static constexpr int kStride = kVecs + 1;     // vectors per padded row
  static constexpr int kWarpVecs = 32 * kStride;
  static constexpr int kFit = 20480 / (kWarpVecs * 16);
  static constexpr int kWarps = kUsed ? (kFit < 4 ? kFit : 4) : 1;

  // This warp's tile, or null when the block has more warps than tiles.
  static __device__ __forceinline__ float4* of_this_warp() {
    __shared__ float4 tiles[kWarps * kWarpVecs];
    const unsigned warp = linear_thread() >> 5;
    return warp < (unsigned)kWarps ? tiles + warp * kWarpVecs : nullptr;
  }
};

// True when the 32 threads of the warp run this call together, each with
// row `row` == the first thread's row + its lane, and `base` is 16-byte
// aligned: then the warp's rows are one contiguous, aligned block.
__device__ __forceinline__ bool warp_rows_contiguous(const void* base, long long row) {
  if (__activemask() != kFullWarp) return false;
  const long long first = __shfl_sync(kFullWarp, row, 0);
  const bool mine =
      row == first + (long long)(linear_thread() & 31) && ((unsigned long long)base & 15) == 0;
  return __all_sync(kFullWarp, mine);
}
#endif

}  // namespace detail

// ---------------------------------------------------------------------------
// Rows.

// The rows [0, count) that the calling thread handles: on a GPU every
// gridDim*blockDim-th row from its global index, so that neighbouring threads
// take neighbouring rows; on the CPU backend a contiguous range, so that the
// one OS thread running a block walks through memory in order.  Every row is
// handled by exactly one thread, whatever the launch's grid.
struct RowRange {
  long long first, last, step;  // rows first, first + step, ... below last
  struct iterator {
    long long row, step;
    __device__ __forceinline__ long long operator*() const { return row; }
    __device__ __forceinline__ iterator& operator++() {
      row += step;
      return *this;
    }
    __device__ __forceinline__ bool operator!=(const iterator& end) const { return row < end.row; }
  };
  __device__ __forceinline__ iterator begin() const { return iterator{first, step}; }
  __device__ __forceinline__ iterator end() const { return iterator{last, step}; }
};

__device__ __forceinline__ RowRange rows(long long count) {
  const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)gridDim.x * blockDim.x;
#if LIZARD_DEVICE_CPU
  const long long chunk = (count + threads - 1) / threads;
  const long long first = thread * chunk < count ? thread * chunk : count;
  const long long end = first + chunk < count ? first + chunk : count;
  return RowRange{first, end, 1};
#else
  return RowRange{thread, count, threads};
#endif
}

// The rows of the partition: `for (const long long row : lizard::rows(data))`.
template <typename Data>
__device__ __forceinline__ RowRange rows(const Data& data) {
  return rows((long long)data.rows);
}

// Rows in groups of R per thread, for kernels in which each thread works on
// several rows at once (so that a value read from a table serves R rows):
//
//   for (const auto rows : lizard::row_groups<4>(data))
//     for (int i = 0; i < 4; ++i) if (rows.valid(i)) ... rows[i] ...
//
// Row i of every thread's group lies next to row i of its neighbours', as in
// lizard::rows.  In the last groups some rows may lie past the end: valid(i)
// is false for them and rows[i] is the partition's last row, so that loads
// stay in bounds; a kernel must not write or fold anything for them.
template <int R>
struct RowGroup {
  long long first, step, last;  // rows first + i * step, those below last
  __device__ __forceinline__ bool valid(int i) const { return first + i * step < last; }
  __device__ __forceinline__ long long operator[](int i) const {
    return valid(i) ? first + i * step : last - 1;
  }
};

template <int R>
struct RowGroupRange {
  long long first, last, step, advance;
  struct iterator {
    long long first, step, last, advance;
    __device__ __forceinline__ RowGroup<R> operator*() const {
      return RowGroup<R>{first, step, last};
    }
    __device__ __forceinline__ iterator& operator++() {
      first += advance;
      return *this;
    }
    __device__ __forceinline__ bool operator!=(const iterator& end) const {
      return first < end.first;
    }
  };
  __device__ __forceinline__ iterator begin() const { return iterator{first, step, last, advance}; }
  __device__ __forceinline__ iterator end() const { return iterator{last, step, last, advance}; }
};

template <int R, typename Data>
__device__ __forceinline__ RowGroupRange<R> row_groups(const Data& data) {
  const RowRange mine = rows(data);
#if LIZARD_DEVICE_CPU
  return RowGroupRange<R>{mine.first, mine.last, 1, R};
#else
  return RowGroupRange<R>{mine.first, mine.last, mine.step, mine.step * R};
#endif
}

// One row of D values of T, held in registers (D a compile-time constant).
template <typename T, int D>
struct alignas((D * sizeof(T)) % 16 == 0 ? 16 : alignof(T)) Row {
  T v[D];
  __device__ __forceinline__ T& operator[](int j) { return v[j]; }
  __device__ __forceinline__ const T& operator[](int j) const { return v[j]; }
  static constexpr int size = D;
};

namespace detail {

// Copies D values from `p` into `out` with the widest loads the alignment of
// `p` allows (16, 8 or 4 bytes).
template <typename T, int D, typename Src>
__device__ __forceinline__ void load_values(T (&out)[D], const Src* p) {
#if LIZARD_DEVICE_CPU
  // The host compiler vectorises the plain loop itself.
#pragma GCC unroll 64
  for (int j = 0; j < D; ++j) out[j] = p[j];
  return;
#endif
  constexpr int kBytes = D * (int)sizeof(T);
  const unsigned long long a = (unsigned long long)p;
  if constexpr (kBytes % 16 == 0) {
    if ((a & 15) == 0) {
      const float4* q = reinterpret_cast<const float4*>(p);
#pragma unroll
      for (int i = 0; i < kBytes / 16; ++i) {
        const float4 w = q[i];
        const T* t = reinterpret_cast<const T*>(&w);
#pragma unroll
        for (int k = 0; k < 16 / (int)sizeof(T); ++k) out[i * (16 / sizeof(T)) + k] = t[k];
      }
      return;
    }
  }
  if constexpr (kBytes % 8 == 0 && sizeof(T) <= 8) {
    if ((a & 7) == 0) {
      const float2* q = reinterpret_cast<const float2*>(p);
#pragma unroll
      for (int i = 0; i < kBytes / 8; ++i) {
        const float2 w = q[i];
        const T* t = reinterpret_cast<const T*>(&w);
#pragma unroll
        for (int k = 0; k < 8 / (int)sizeof(T); ++k) out[i * (8 / sizeof(T)) + k] = t[k];
      }
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < D; ++j) out[j] = p[j];
}

}  // namespace detail

// Row `row` of a [rows, D] field: `lizard::load_row<D>(data.points, row)`.
// On a GPU, when the 32 threads of a warp load 32 consecutive rows of 64 to
// 256 bytes together (as in a loop over lizard::rows), the warp reads them
// as one contiguous block with coalesced 16-byte loads and hands each thread
// its row through shared memory: reading a row per thread directly would
// touch 32 cache lines with every load instruction.
template <int D, typename T>
__device__ __forceinline__ Row<typename detail::remove_const<T>::type, D> load_row(T* base,
                                                                                   long long row) {
  using V = typename detail::remove_const<T>::type;
  Row<V, D> out;
#if !LIZARD_DEVICE_CPU && !defined(LIZARD_NO_ROW_STAGING)
  using Tile = detail::RowTile<D*(int)sizeof(V)>;
  if constexpr (Tile::kUsed && D * sizeof(V) >= 64) {  // narrower rows gain little
    float4* tile = Tile::of_this_warp();
    if (tile && detail::warp_rows_contiguous(base, row)) {
      const unsigned lane = detail::linear_thread() & 31;
      const float4* src = reinterpret_cast<const float4*>(base + (row - lane) * D);
      float4 v[Tile::kVecs];
#pragma unroll
      for (int i = 0; i < Tile::kVecs; ++i) v[i] = src[i * 32 + lane];
#pragma unroll
      for (int i = 0; i < Tile::kVecs; ++i) {
        const int f = i * 32 + (int)lane;  // vector f of the warp's rows: row f / kVecs
        tile[(f / Tile::kVecs) * Tile::kStride + f % Tile::kVecs] = v[i];
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < Tile::kVecs; ++q)
        reinterpret_cast<float4*>(out.v)[q] = tile[lane * Tile::kStride + q];
      __syncwarp();
      return out;
    }
  }
#endif
  detail::load_values(out.v, base + row * D);
  return out;
}

// Writes `x` into row `row` of a [rows, D] field.
template <typename T, int D>
__device__ __forceinline__ void store_row(T* base, long long row, const Row<T, D>& x) {
  T* p = base + row * D;
  constexpr int kBytes = D * (int)sizeof(T);
  if constexpr (kBytes % 16 == 0) {
    if (((unsigned long long)p & 15) == 0) {
      float4* q = reinterpret_cast<float4*>(p);
#pragma unroll
      for (int i = 0; i < kBytes / 16; ++i) q[i] = reinterpret_cast<const float4*>(x.v)[i];
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < D; ++j) p[j] = x.v[j];
}

// The dot product of two rows (in four partial sums when D is a multiple of
// four, so that the additions do not wait on each other).
template <typename T, int D>
__device__ __forceinline__ T dot(const Row<T, D>& a, const Row<T, D>& b) {
  if constexpr (D % 4 == 0 && D >= 8) {
    T s[4] = {0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < D; j += 4) {
#pragma unroll
      for (int k = 0; k < 4; ++k) s[k] += a.v[j + k] * b.v[j + k];
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
  } else {
    T s = 0;
#pragma unroll
    for (int j = 0; j < D; ++j) s += a.v[j] * b.v[j];
    return s;
  }
}

// The squared Euclidean distance of two rows.
template <typename T, int D>
__device__ __forceinline__ T distance2(const Row<T, D>& a, const Row<T, D>& b) {
  T s = 0;
#pragma unroll
  for (int j = 0; j < D; ++j) {
    const T d = a.v[j] - b.v[j];
    s += d * d;
  }
  return s;
}

template <typename T, int D>
__device__ __forceinline__ Row<T, D> operator*(T s, const Row<T, D>& a) {
  Row<T, D> out;
#pragma unroll
  for (int j = 0; j < D; ++j) out.v[j] = s * a.v[j];
  return out;
}

// ---------------------------------------------------------------------------
// A read-only state array of R rows of C values (R*C values of the field
// `Field`, a member of global_state_t), copied once per block into shared
// memory when it fits (8 KiB), else read from the state itself.  Each
// thread then reads it without going to device memory:
//
//   const lizard::BlockTable<&global_state_t::centroids, K, D> centroids(state);
//   lizard::Row<float, D> c = centroids.row(k);   float v = centroids(k, j);
//
// On the CPU backend the state is already in the cache: no copy is made.
template <auto Field, int R, int C = 1>
class BlockTable {
 public:
  using owner = typename detail::field_traits<decltype(Field)>::owner;
  using T =
      typename detail::remove_const<typename detail::field_traits<decltype(Field)>::value>::type;
  static constexpr unsigned long long kCount = (unsigned long long)R * C;
  static constexpr bool kShared =
      !LIZARD_DEVICE_CPU && kCount * sizeof(T) <= detail::kMaxSharedCopyBytes;

  __device__ explicit BlockTable(const owner& state) {
    const T* src = state.*Field;
#if !LIZARD_DEVICE_CPU
    if constexpr (kShared) {
      T* dst = detail::shared_copy<T, kCount, detail::FieldKey<Field>>();
      const unsigned t = detail::linear_thread(), n = detail::block_threads();
      if constexpr ((kCount * sizeof(T)) % 16 == 0) {
        if (((unsigned long long)src & 15) == 0) {
          const float4* s4 = reinterpret_cast<const float4*>(src);
          float4* d4 = reinterpret_cast<float4*>(dst);
          for (unsigned i = t; i < kCount * sizeof(T) / 16; i += n) d4[i] = s4[i];
        } else {
          for (unsigned i = t; i < kCount; i += n) dst[i] = src[i];
        }
      } else {
        for (unsigned i = t; i < kCount; i += n) dst[i] = src[i];
      }
      __syncthreads();
      data_ = dst;
      return;
    }
#endif
    data_ = src;
  }
  // Shared memory must outlive no thread that reads it: wait for all before
  // another copy may reuse it.
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  __device__ __forceinline__ T operator()(int r, int c) const {
    return data_[r * C + c];
  }
  __device__ __forceinline__ T operator[](int i) const {
    return data_[i];
  }
  __device__ __forceinline__ Row<T, C> row(int r) const {
    Row<T, C> out;
    detail::load_values(out.v, data_ + r * C);
    return out;
  }
  __device__ __forceinline__ const T* data() const {
    return data_;
  }

 private:
  const T* data_;
};

}  // namespace lizard

#include "lizard_device_aggregate.h"
#include "lizard_device_nearest.h"

#endif  // LIZARD_DEVICE_H
