// L2: the indexing family (shaders/index.comp). No torch headers.
//
// One index space (ndim <= kMaxDims dims, dim 0 fastest, like kernels.h) is walked; every
// operand (dst, src, and up to kMaxIndexTensors index tensors) has its own element strides
// over it (0 for broadcast). The index tensors pick, per element, an extra offset
// sum_k v_k * stride_k that is added on the src side (Gather) or on the dst side (Scatter,
// Accumulate). This covers gather, index_select, index.Tensor, take (Gather), scatter,
// index_copy_, index_fill_, index_put_, put_ (Scatter) and scatter_add / scatter_reduce /
// index_add_ / index_put_(accumulate) / embedding backward (Accumulate).
//
// Index checking: every index value is checked on the device against [0, size) (after
// wrapping negative values when wrap_negative). A bad value is never used for an access: the
// element is skipped (Gather writes 0 instead) and the first bad value is recorded in the
// stream's error record with `error_code` (runtime/error.h DeviceErrorCode) and the index
// tensor's error_dim; the host throws it at its next wait on the stream.
//
// Determinism: Gather is deterministic. Scatter with duplicate indices stores one of the
// candidates (unspecified which, as on CUDA). Accumulate is atomic: integer results are
// deterministic, floating-point sums / products depend on the order of the atomic updates
// (as on CUDA), max / min are deterministic.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

constexpr int kMaxIndexTensors = 8;

enum class IndexMode : int32_t {
  Gather = 0,      // dst[i] = src[i + idx]            (dst, src: same dtype)
  Scatter = 1,     // dst[i + idx] = src[i]            (dst, src: same dtype)
  Accumulate = 2,  // dst[i + idx] = op(dst[i + idx], src[i])   (src converted to `kind`)
};

enum class AccumulateOp : int32_t { Add = 0, Mul = 1, Max = 2, Min = 3 };

struct IndexTensor {
  Operand values;                   // DType::Int32 or DType::Int64
  int64_t strides[kMaxDims] = {};   // element strides over the index space
  int64_t size = 0;                 // valid values are [0, size) (after wrapping)
  int64_t stride = 0;               // element stride that one index step moves in the
                                    // indexed operand (src for Gather, dst otherwise)
  bool wrap_negative = false;       // v < 0 means v + size (PyTorch's advanced indexing)
  int32_t error_dim = 0;            // the dimension named in the error message
};

struct IndexProblem {
  IndexMode mode = IndexMode::Gather;
  // Accumulate only: the combine op and the compute kind, which must match dst's dtype
  // (Float32 for float16 / bfloat16 / float32, Int32 for bool / uint8 / int8 / int16 /
  // int32, Int64, Float64). Max / Min propagate NaN.
  AccumulateOp op = AccumulateOp::Add;
  ComputeKind kind = ComputeKind::Float32;
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  Operand dst;
  int64_t dst_strides[kMaxDims] = {};
  Operand src;  // a tensor, or a single value with all strides 0 (e.g. in parameter memory)
  int64_t src_strides[kMaxDims] = {};
  int32_t num_indices = 0;
  IndexTensor indices[kMaxIndexTensors];
  uint32_t error_code = 0;  // DeviceErrorCode reported for a bad index
};

// Records the problem on `stream` (nothing when the index space is empty). Throws
// std::invalid_argument for more than kMaxDims dims or kMaxIndexTensors index tensors,
// negative sizes, >= 2^31 elements or element offsets beyond the 32-bit range, dst / src
// dtypes of different sizes (Gather / Scatter), an index dtype other than int32 / int64, an
// Accumulate kind that does not match dst, and int64 / float64 accumulation on a device
// without shaderBufferInt64Atomics (float64 also needs shaderFloat64).
void index(Stream& stream, const IndexProblem& problem);

enum class CompactMode : int32_t {
  Nonzero = 0,        // dst (int64, [count, ndim]) row k = coordinates of the k-th selected element
  MaskedSelect = 1,   // dst[k] = src[element]
  MaskedScatter = 2,  // dst[element] = src[k] (src contiguous, src_numel elements)
};

// Compaction driven by `prefix`: the inclusive int32 prefix sum (contiguous, one per element
// of the index space in linear order, dim 0 fastest) of a 0/1 mask. For Nonzero, dim d of the
// index space is column ndim - 1 - d of dst (callers list PyTorch dims last-first) and
// dst_strides[0] / [1] are the row / column strides; for MaskedSelect dst_strides[0] is the
// stride of the 1-D output. MaskedScatter reports MaskedScatterSourceTooSmall when the mask
// selects more than src_numel elements (those elements are left unchanged).
struct CompactProblem {
  CompactMode mode = CompactMode::Nonzero;
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  Operand dst;
  int64_t dst_strides[kMaxDims] = {};
  Operand src;
  int64_t src_strides[kMaxDims] = {};
  int64_t src_numel = 0;
  uint64_t prefix = 0;  // device address of the int32 prefix sum
};
void compact(Stream& stream, const CompactProblem& problem);

}  // namespace tvk::kernels

namespace tvk::kernels {
// Knobs for tests (defaults are the production choices). Not synchronized.
struct IndexTuning {
  // Use atomicAdd(float) where the device has it (TORCH_VK_DISABLE_FLOAT_ATOMICS=1: off).
  bool float_atomics = true;
};
IndexTuning& index_tuning();
}  // namespace tvk::kernels
