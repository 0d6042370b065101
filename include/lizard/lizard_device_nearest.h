// lizard_device_nearest.h: the nearest row of a small table for each row of
// the data, the inner step of k-means, vector quantisation and labelling by
// nearest neighbour.  Included by lizard_device.h.
//
//   constexpr int K = params.k, D = params.dims;
//   const lizard::NearestRow<&global_state_t::centroids, K, D> nearest(state);
//
//   // One thread, one row (CUDA cores; any D):
//   for (const long long row : lizard::rows(data)) {
//     const lizard::Row<float, D> x = lizard::load_row<D>(data.points, row);
//     const int best = nearest(x);
//   }
//
//   // A warp, 32 rows at a time (tensor cores on sm_80 and later; D a
//   // multiple of 8).  Every lane of the warp runs every step of the loop:
//   for (const lizard::WarpRow r : lizard::warp_rows(data)) {
//     const lizard::Row<float, D> x = lizard::load_row<D>(data.points, r.row);
//     const int best = nearest.of_warp(x);
//     if (!r.valid) continue;
//     ...
//   }
//
// The answer is what a loop over the table with lizard::distance2 and `<`
// gives: the index of the row at the least distance, the lowest index on a
// tie, on either backend.  How: each table row c is scored |c|^2 - 2 x.c, one
// multiply-add per value where |x - c|^2 takes two.  Where the best two
// scores are closer than the scores' error bound allows to tell apart, the
// rows within that bound are decided with distance2 itself, which happens
// only for points almost equally far from two rows.
//
// Precision of the scores (the answer is exact unless kTF32 is chosen):
//   Precision::kExact  fp32 multiply-adds (operator()), or on the tensor
//                      cores each value split into two TF32 parts whose three
//                      leading products are summed (3xTF32, of_warp).
//   Precision::kTF32   of_warp scores with one TF32 product and no check: about
//                      three times faster, and the row it picks may be farther
//                      than the best by up to about 2^-9 (|x| + |c|)^2.
//
// Memory: the table and its rows' squared norms are copied into shared memory
// once per block, like lizard::BlockTable: into static shared memory when
// they take at most kStaticBytes (4 KiB), else into the kernel's dynamic shared
// memory when the step's `shared_bytes` gives at least kSharedBytes (the
// kernel must then not use its dynamic shared memory for anything else);
// otherwise they are read from the state.  Make the object at the top of the
// kernel, where every thread of the block passes.
#ifndef LIZARD_DEVICE_NEAREST_H
#define LIZARD_DEVICE_NEAREST_H

namespace lizard {

enum class Precision { kExact, kTF32 };

// One step of a warp-uniform loop over the partition's rows: lane i of a warp
// gets row `row` = the warp's first row + i; `valid` is false past the end
// (then `row` is the last row, so that loads stay in bounds).
struct WarpRow {
  long long row;
  bool valid;
};

struct WarpRowRange {
  long long first, count, step;  // this lane's first row, the rows, the stride
  struct iterator {
    long long row, count, step;
    __device__ __forceinline__ WarpRow operator*() const {
      return WarpRow{row < count ? row : count - 1, row < count};
    }
    __device__ __forceinline__ iterator& operator++() {
      row += step;
      return *this;
    }
    // The warp's first lane decides, so that all lanes take the same steps.
    __device__ __forceinline__ bool operator!=(const iterator& end) const {
      return row - (row & 31) < end.count;
    }
  };
  __device__ __forceinline__ iterator begin() const { return iterator{first, count, step}; }
  __device__ __forceinline__ iterator end() const { return iterator{count, count, step}; }
};

// The partition's rows, 32 consecutive ones per warp and step; every lane of
// a warp runs the same number of steps (a block's threads must be a multiple
// of 32).  On the CPU backend each thread takes a contiguous range, as in
// lizard::rows.
template <typename Data>
__device__ __forceinline__ WarpRowRange warp_rows(const Data& data) {
  const long long count = (long long)data.rows;
#if LIZARD_DEVICE_CPU
  const RowRange mine = rows(data);
  // A "warp" of one thread: steps of one row, none past the range.
  (void)count;
  return WarpRowRange{mine.first, mine.last, 1};
#else
  const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)gridDim.x * blockDim.x;
  return WarpRowRange{thread, count, threads};
#endif
}

namespace detail {

// The best and second-best scores seen, and the index of the best.
struct BestTwo {
  float first, second;
  int index;
  __device__ __forceinline__ void add(float s, int c) {  // in increasing c
    const bool better = s < first;
    second = better ? first : (s < second ? s : second);
    index = better ? c : index;
    first = better ? s : first;
  }
};

// How far above the best score the answer's score may lie: twice the error
// of a score |c|^2 - 2 x.c over D values plus twice that of distance2, and
// that doubled again for safety.  `bound` is (|x| + max |c|)^2; `product` the
// relative error of one product (2^-24 in fp32, about 3 * 2^-22 in 3xTF32).
// The sum's error is taken at twice fp32's, as tensor cores may truncate as
// they add.
template <int D>
__device__ __forceinline__ float nearest_margin(float bound, float product) {
  constexpr float kUnit = 5.9604645e-8f;  // 2^-24
  const float score = (product + 2.0f * (D + 2) * kUnit) * bound;
  const float distance = (D + 2) * kUnit * bound;
  return 4.0f * (score + distance);
}

#if !LIZARD_DEVICE_CPU && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LIZARD_NEAREST_TENSOR_CORES 1
__device__ __forceinline__ unsigned tf32_of(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
// d += a * b for a 16x8 tile, a 16x8 row-major, b 8x8 column-major.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#else
#define LIZARD_NEAREST_TENSOR_CORES 0
#endif

#if !LIZARD_DEVICE_CPU
__device__ __forceinline__ unsigned dynamic_shared_bytes() {
  unsigned r;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}
extern __shared__ __align__(16) float4 nearest_dynamic_shared[];
#endif

}  // namespace detail

template <auto Field, int K, int D, Precision P = Precision::kExact>
class NearestRow {
 public:
  using owner = typename detail::field_traits<decltype(Field)>::owner;
  static_assert(K >= 1 && K <= 4096, "NearestRow: a table of 1 to 4096 rows");
  // Table rows are padded by four values so that a warp's tensor-core loads
  // meet no bank twice.
  static constexpr int kStride = D % 8 == 0 ? D + 4 : D;
  static constexpr unsigned long long kSharedBytes =
      ((unsigned long long)K * kStride + K + 4) * sizeof(float);
  // Larger tables go to dynamic shared memory, which leaves the static 48
  // KiB to the kernel's aggregates (lizard_device.h, kAggregateSharedBytes).
  static constexpr unsigned long long kStaticBytes = 4096;
  static constexpr bool kStatic = !LIZARD_DEVICE_CPU && kSharedBytes <= kStaticBytes;
  // of_warp uses the tensor cores (else it is operator() on each lane).
  static constexpr bool kTensorCores = LIZARD_NEAREST_TENSOR_CORES && D % 8 == 0;

  __device__ explicit NearestRow(const owner& state) {
    const float* src = state.*Field;
#if LIZARD_DEVICE_CPU
    table_ = src;
    padded_ = false;
    norms_ = cpu_norms_;
    float largest = 0;
    for (int c = 0; c < K; ++c) {
      cpu_norms_[c] = norm_of(src + c * D);
      largest = cpu_norms_[c] > largest ? cpu_norms_[c] : largest;
    }
    largest_norm_ = largest;
#else
    float* dst = nullptr;
    if constexpr (kStatic) {
      dst = detail::shared_copy<float, kSharedBytes / sizeof(float), TableKey>();
    } else if (detail::dynamic_shared_bytes() >= kSharedBytes) {
      dst = reinterpret_cast<float*>(detail::nearest_dynamic_shared);
    }
    const unsigned t = detail::linear_thread(), n = detail::block_threads();
    if (dst) {
      for (unsigned i = t; i < (unsigned)(K * D); i += n) dst[(i / D) * kStride + i % D] = src[i];
      __syncthreads();
      table_ = dst;
      padded_ = true;
    } else {
      table_ = src;
      padded_ = false;
    }
    float* norms = dst ? dst + K * kStride : detail::shared_copy<float, K + 4, NormsKey>();
    for (unsigned c = t; c < (unsigned)K; c += n)
      norms[c] = norm_of(table_ + c * (padded_ ? kStride : D));
    __syncthreads();
    if (t == 0) {
      float largest = 0;
      for (int c = 0; c < K; ++c) largest = norms[c] > largest ? norms[c] : largest;
      norms[K] = largest;
    }
    __syncthreads();
    norms_ = norms;
    largest_norm_ = norms[K];
#endif
  }
  NearestRow(const NearestRow&) = delete;
  NearestRow& operator=(const NearestRow&) = delete;

  // The nearest table row to x, by one thread.
  __device__ __forceinline__ int operator()(const Row<float, D>& x) const {
    const Row<float, D> xs[1] = {x};
    int best[1];
    nearest(xs, best);
    return best[0];
  }

  // The nearest table rows to R rows, by one thread: each table value read
  // serves all R of them.
  template <int R>
  __device__ __forceinline__ void nearest(const Row<float, D> (&x)[R], int (&best)[R]) const {
    detail::BestTwo b[R];
#pragma unroll
    for (int i = 0; i < R; ++i) b[i] = detail::BestTwo{3.402823466e38f, 3.402823466e38f, 0};
    for (int c = 0; c < K; ++c) {
      const Row<float, D> tc = row(c);
      const float n = norms_[c];
#pragma unroll
      for (int i = 0; i < R; ++i) b[i].add(fmaf(-2.0f, dot(x[i], tc), n), c);
    }
#pragma unroll
    for (int i = 0; i < R; ++i) best[i] = decide(x[i], b[i], kFp32Product);
  }

  // The nearest table row to each lane's x, by the whole warp together (every
  // lane must call it, with a row to load even when it has none: see
  // warp_rows).  On the CPU backend, and for D not a multiple of 8 or before
  // sm_80, it is operator().
  __device__ __forceinline__ int of_warp(const Row<float, D>& x) const {
#if LIZARD_NEAREST_TENSOR_CORES
    if constexpr (kTensorCores) return of_warp_mma(x);
#endif
    return (*this)(x);
  }

  // The table's row c.
  __device__ __forceinline__ Row<float, D> row(int c) const {
    Row<float, D> out;
    if (padded_) {
      detail::load_values(out.v, table_ + c * kStride);
    } else {
#pragma unroll
      for (int j = 0; j < D; ++j) out.v[j] = table_[c * D + j];
    }
    return out;
  }

 private:
  struct TableKey {};
  struct NormsKey {};

  static __device__ __forceinline__ float norm_of(const float* c) {
    float s = 0;
    for (int j = 0; j < D; ++j) s = fmaf(c[j], c[j], s);
    return s;
  }

  static constexpr float kFp32Product = 5.9604645e-8f;  // 2^-24
  // Three TF32 products drop about 3 * 2^-22 of each product.
  static constexpr float kSplitTf32Product = 1.0e-6f;

  __device__ __forceinline__ float score(const Row<float, D>& x, int c) const {
    return fmaf(-2.0f, dot(x, row(c)), norms_[c]);
  }

  // The answer from the best two scores: the best, unless others lie within
  // the error bound of it; then distance2 decides among those.
  __device__ __forceinline__ int decide(const Row<float, D>& x, const detail::BestTwo& b,
                                        float product_error) const {
    const float reach = sqrtf(dot(x, x)) + sqrtf(largest_norm_);
    const float margin = detail::nearest_margin<D>(reach * reach, product_error);
    if (b.second - b.first > margin) return b.index;
    return exact_among(x, b.first + margin);
  }

  // Among the rows scored at most `limit`, the one distance2 puts nearest.
  __device__ int exact_among(const Row<float, D>& x, float limit) const {
    float best = 3.402823466e38f;
    int index = 0;
    for (int c = 0; c < K; ++c) {
      if (score(x, c) > limit) continue;
      const float d = distance2(x, row(c));
      if (d < best) {
        best = d;
        index = c;
      }
    }
    return index;
  }

#if LIZARD_NEAREST_TENSOR_CORES
  // Lane l = 4g + t holds, of a 16-row tile, rows g and g + 8 at columns t and
  // t + 4 of each 8-column step (the mma's A fragment), and gets back the
  // scores of rows g and g + 8 against table rows 2t and 2t + 1 of each group
  // of 8.  The warp's 32 rows are two such tiles, done one after the other.
  __device__ int of_warp_mma(const Row<float, D>& x) const {
    constexpr int kSteps = D / 8;
    constexpr bool kSplit = P == Precision::kExact;
    const unsigned lane = detail::linear_thread() & 31, g = lane >> 2, t = lane & 3;
    int mine = 0;
    float mine_first = 0, mine_second = 0;
#pragma unroll 1
    for (int tile = 0; tile < 2; ++tile) {
      unsigned big[kSteps][4], small[kSplit ? kSteps : 1][4];
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          // A[r][k]: row r = g + 8 (q & 1) of the tile, column k = 8s + t + 4 (q >> 1).
          const int src = tile * 16 + (int)g + 8 * (q & 1);
          float v = 0;
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const float w = __shfl_sync(detail::kFullWarp, x.v[8 * s + u + 4 * (q >> 1)], src);
            v = (unsigned)u == t ? w : v;
          }
          big[s][q] = detail::tf32_of(v);
          if constexpr (kSplit) small[s][q] = detail::tf32_of(v - __uint_as_float(big[s][q]));
        }
      }
      detail::BestTwo lo{3.402823466e38f, 3.402823466e38f, 0};
      detail::BestTwo hi{3.402823466e38f, 3.402823466e38f, 0};
      // Two groups of 8 table rows at a time, the correction products in
      // accumulators of their own: four independent chains of mma.
#pragma unroll 1
      for (int n0 = 0; n0 < K; n0 += 16) {
        float acc[2][4] = {}, fix[2][4] = {};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int c = n0 + 8 * h + (int)g;  // B[k][n] = table[n0 + 8h + n][k]: this lane's n is g
          const float* tc = table_ + (c < K ? c : K - 1) * (padded_ ? kStride : D);
#pragma unroll
          for (int s = 0; s < kSteps; ++s) {
            const float b0 = tc[8 * s + t], b1 = tc[8 * s + t + 4];
            const unsigned b0b = detail::tf32_of(b0), b1b = detail::tf32_of(b1);
            detail::mma_tf32(acc[h], big[s], b0b, b1b);
            if constexpr (kSplit) {
              const unsigned b0s = detail::tf32_of(b0 - __uint_as_float(b0b));
              const unsigned b1s = detail::tf32_of(b1 - __uint_as_float(b1b));
              detail::mma_tf32(fix[h], small[s], b0b, b1b);
              detail::mma_tf32(fix[h], big[s], b0s, b1s);
            }
          }
        }
        // acc[h]: rows g (0, 1) and g + 8 (2, 3), table rows n0 + 8h + 2t (0, 2)
        // and n0 + 8h + 2t + 1 (1, 3).
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int c = n0 + 8 * h + 2 * (int)t + e;
            if (c >= K) continue;
            const float n = norms_[c];
            lo.add(fmaf(-2.0f, acc[h][e] + fix[h][e], n), c);
            hi.add(fmaf(-2.0f, acc[h][2 + e] + fix[h][2 + e], n), c);
          }
        }
      }
      merge_quad(&lo);
      merge_quad(&hi);
      // Row r of the tile is lane 16 tile + r's: its results are with lane 4 (r % 8).
      const int r = (int)lane - 16 * tile;
      const unsigned from = (unsigned)((r & 7) * 4);
      const bool upper = r >= 8;
      // (Both halves travel: the sending lane cannot know which one is asked.)
      const int index_lo = __shfl_sync(detail::kFullWarp, lo.index, from);
      const int index_hi = __shfl_sync(detail::kFullWarp, hi.index, from);
      const float first_lo = __shfl_sync(detail::kFullWarp, lo.first, from);
      const float first_hi = __shfl_sync(detail::kFullWarp, hi.first, from);
      const float second_lo = __shfl_sync(detail::kFullWarp, lo.second, from);
      const float second_hi = __shfl_sync(detail::kFullWarp, hi.second, from);
      if (r >= 0 && r < 16) {
        mine = upper ? index_hi : index_lo;
        mine_first = upper ? first_hi : first_lo;
        mine_second = upper ? second_hi : second_lo;
      }
    }
    if constexpr (P == Precision::kTF32) return mine;
    return decide(x, detail::BestTwo{mine_first, mine_second, mine}, kSplitTf32Product);
  }

  // Folds the best two of the four lanes that share a row (lanes 4g .. 4g+3).
  static __device__ __forceinline__ void merge_quad(detail::BestTwo* b) {
#pragma unroll
    for (int m = 1; m <= 2; m <<= 1) {
      const float f = __shfl_xor_sync(detail::kFullWarp, b->first, m);
      const float s = __shfl_xor_sync(detail::kFullWarp, b->second, m);
      const int i = __shfl_xor_sync(detail::kFullWarp, b->index, m);
      const bool other_wins = f < b->first || (f == b->first && i < b->index);
      const float loser = other_wins ? b->first : f;
      const float second = other_wins ? s : b->second;
      b->second = loser < second ? loser : second;
      if (other_wins) {
        b->first = f;
        b->index = i;
      }
    }
  }
#endif

  const float* table_;
  const float* norms_;
  bool padded_;  // rows kStride apart (in shared memory), else D
  float largest_norm_;
#if LIZARD_DEVICE_CPU
  float cpu_norms_[K];
#endif
};

}  // namespace lizard

#endif  // LIZARD_DEVICE_NEAREST_H
