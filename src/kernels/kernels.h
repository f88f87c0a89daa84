// L2: compute kernels and their launchers. No torch headers: tensors are described by device
// addresses, dtype codes and element strides. Every launcher only records work on a stream.
//
// Geometry convention (the same as at::TensorIterator): dimension 0 is the fastest-varying;
// strides are in elements (not bytes) and may be 0 (broadcast) or negative. Operand 0 is the
// output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// Storage dtypes. The numeric codes are part of the shader ABI (shaders/common.glsl).
enum class DType : int32_t {
  Bool = 0,      // stored as one byte, 0 or 1
  UInt8 = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Float16 = 6,
  BFloat16 = 7,  // stored as 16 bits, computed in fp32
  Float32 = 8,
  Float64 = 9,   // only on devices with shaderFloat64
};
uint32_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// The type an element-wise kernel computes in. Loads convert from each operand's storage
// dtype, stores convert to the output's dtype (C-style casts, like PyTorch's CUDA kernels).
enum class ComputeKind : int32_t {
  Float32 = 0,  // for float16 / bfloat16 / float32 math (fp32 "opmath")
  Int32 = 1,    // for bool / uint8 / int8 / int16 / int32 math
  Int64 = 2,
  Float64 = 3,
};
const char* compute_kind_name(ComputeKind kind);

constexpr int kMaxDims = 8;
constexpr int kMaxOperands = 4;

struct Operand {
  uint64_t address = 0;  // device address of the element at index 0 (storage offset applied),
                         // aligned to dtype_size(dtype)
  DType dtype = DType::Float32;
};

struct Geometry {
  int32_t ndim = 0;                              // 0: a single element
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // element strides per operand
};

// Scalar arguments of an element-wise op (alpha of add, fill value, ...): s0 and s1 of the op
// table. The kernel reads `f` (rounded to float) in Float32 kernels, `f` in Float64 kernels
// and `i` in integer kernels; callers fill both.
struct Scalars {
  double f[2] = {0, 0};
  int64_t i[2] = {0, 0};
};

// ---- element-wise ----
// TensorIterator's type promotion inside an element-wise kernel. An op computes on values of
// one dtype, `value` (the common dtype of PyTorch's iterator: the CPU kernel's scalar_t):
// every input is converted to it before the op and the result is one of its values, which the
// store then converts to the output's dtype. Loads convert each operand's storage dtype to the
// compute type (fp32 for float16, int32 for uint8, ...), so a converted value is rounded to
// `value` only where that changes it: bit k of `round_inputs` (k = 1..3) for input k (e.g. a
// 0-dim int32 operand of a uint8 op, a float32 one of a float16 op), `round_result` for an
// output of another dtype when the compute type holds more values than `value` (the sum of
// two uint8 values wraps to uint8 before an int32 out= store; two bfloat16 values add to a
// bfloat16 before a float32 store). The expressions' dt0 is `value`, not the output's storage
// dtype (shift widths, the float16 steps of rounded divisions).
struct ValueCasts {
  bool defined = false;  // false: the output's storage dtype is the value dtype, no rounding
  DType value = DType::Float32;
  uint32_t round_inputs = 0;
  bool round_result = false;
  // The dtype the expressions see as dt0 when it is not `value`: the CPU's float16 / bfloat16
  // kernels that compute in fp32 "opmath" and round only their result (mul / div by a scalar).
  bool opmath_expression = false;
  DType expression = DType::Float32;
};

// One entry per row of shaders/elementwise_ops.toml.
struct ElementwiseOpInfo {
  const char* name;
  int arity;              // number of tensor inputs (0 for fill)
  bool bool_result;       // the expression yields a truth value (comparisons)
  uint32_t compute_kinds; // bit (1 << ComputeKind) set for every kind the op is compiled for
};
const ElementwiseOpInfo* find_elementwise_op(std::string_view name);
const std::vector<ElementwiseOpInfo>& elementwise_ops();
// The op table's GLSL expression of `op` (an entry of elementwise_ops()) for `kind`, or
// nullptr when the op is not built for that kind. For run-time generated (fused) kernels.
const char* elementwise_expression(const ElementwiseOpInfo& op, ComputeKind kind);
// Text of a shader header embedded at build time ("common.glsl", "math.glsl", "ops.glsl"), or
// of "gemm.comp"; empty when unknown. For run-time generated kernels, which #include the
// headers (and GEMM epilogues, which extend gemm.comp).
std::string_view shader_source(std::string_view file_name);

// Records out = op(inputs...) over `numel` elements. operands[0] is the output,
// operands[1..arity] the inputs. Each input is converted from its dtype to the compute type,
// the result is converted to the output dtype (C-style; see shaders/common.glsl). Operands of
// any dtype may be mixed, except that float64 operands need the Float64 kind. numel == 0
// records nothing. Throws std::invalid_argument for an unknown op, an op not compiled for
// `kind`, the Float64 kind on a device without shaderFloat64 ("float64 is not supported on this
// device (no shaderFloat64)"), more than kMaxDims dims, sizes that do not multiply to numel,
// numel >= 2^31, or element offsets beyond the 32-bit index range (sum over dims of
// (size - 1) * |stride| >= 2^31).
// `casts` applies TensorIterator's conversions (see ValueCasts).
void elementwise(Stream& stream, std::string_view op, ComputeKind kind, int64_t numel,
                 const Geometry& geometry, const Operand* operands, int num_operands,
                 const Scalars& scalars = {}, const ValueCasts& casts = {});

// One entry of elementwise_list: a flat tensor of `numel` elements per operand slot (output
// first), or a scalar operand (stride 0: every element reads element 0).
struct ElementwiseListEntry {
  uint64_t address[kMaxOperands] = {};
  int32_t stride[kMaxOperands] = {};  // 1 (dense, read as flat) or 0 (a scalar operand)
  int64_t numel = 0;
  Scalars s0;  // the entry's own s0 (f[0] / i[0]) when elementwise_list gets per_entry_s0
};

// Records out = op(inputs...) for every entry in as few dispatches as the parameter block
// allows (the multi-tensor _foreach ops). `dtypes` are the operands' dtypes, shared by all
// entries; `scalars` are the op's s0 / s1, or with `per_entry_s0` each entry's s0 replaces s0.
// Entries with numel 0 are skipped. Only ops marked `list = true` in the op table have the
// tensor-list variant this needs. Throws std::invalid_argument like elementwise,
// and for a stride other than 0 / 1 or an entry with numel >= 2^31.
void elementwise_list(Stream& stream, std::string_view op, ComputeKind kind,
                      const ElementwiseListEntry* entries, int num_entries, const DType* dtypes,
                      int num_operands, const Scalars& scalars = {},
                      bool per_entry_s0 = false);

// ---- reductions ----
enum class ReduceOp : int32_t { Sum = 0, Prod = 1, Max = 2, Min = 3 };

// Element transform applied to every loaded value before it is combined. The float-only ones
// (AbsPow, SquaredDeviation, ExpDeviation) need a Float32 / Float64 accumulator.
enum class ReducePre : int32_t {
  None = 0,
  Abs = 1,               // |x|
  Square = 2,            // x * x
  AbsPow = 3,            // |x|^p
  SquaredDeviation = 4,  // (x - c)^2
  ExpDeviation = 5,      // exp(x - c'), c' = c when finite, else 0 (logsumexp)
  NonZero = 6,           // x != 0 ? 1 : 0 (NaN counts as non-zero)
};
// Transform of the scaled result, before it is stored.
enum class ReducePost : int32_t {
  None = 0,
  Sqrt = 1,          // sqrt(v)            (float kinds)
  Root = 2,          // v^(1/p)            (float kinds)
  LogPlusCenter = 3, // log(v) + c'        (float kinds; c' as for ExpDeviation)
  Truth = 4,         // v > 0 ? 1 : 0      (all / any over NonZero values)
};
// Optional parts of a reduction: out[o] = post(scale * op_r pre(in[o, r])).
// `center` (SquaredDeviation, ExpDeviation, LogPlusCenter) is the device address of an array
// of the accumulator's dtype (float32 / float64) laid out like the output: c for output o is
// at the output's element offset (geometry.out.strides[0]).
struct ReduceExtra {
  ReducePre pre = ReducePre::None;
  ReducePost post = ReducePost::None;
  double p = 2.0;        // AbsPow and Root
  uint64_t center = 0;
};

// out[o] = scale * reduce_op over r of in[o, r], accumulated in `acc` (Float32 for
// float16/bfloat16/float32, Float64, or Int64 for integer inputs; Int32 is accepted and also
// accumulates in int64). `scale` must be 1 for integer accumulators (mean is for float kinds).
// An empty reduced space gives the identity (0 for sum, 1 for prod, -inf / +inf or the int64
// limits for max / min) times scale; max/min of an empty space is the caller's error to
// report. NaN propagates through max/min. `extra` adds a pre- and a post-transform (see
// ReduceExtra). Float accumulators may read integer inputs (converted to float).
// `out_geometry` describes the output index space: strides[0] = output element strides,
// strides[1] = input element strides for those dims. `reduce_geometry` describes the reduced
// index space: strides[1] = input element strides (strides[0] unused).
struct ReduceGeometry {
  Geometry out;
  Geometry reduced;
};
void reduce(Stream& stream, ReduceOp op, ComputeKind acc, int64_t out_numel,
            int64_t reduced_numel, const ReduceGeometry& geometry, Operand out, Operand in,
            double scale = 1.0, const ReduceExtra& extra = {});

// Arg reduction (op Max or Min): for every output, the extreme value and the index of its
// first occurrence: the linear index in the reduced index space (dim 0 fastest, so a
// row-major flat index when the caller lists dims fastest first). Ties keep the smaller
// index; NaN is larger / smaller than every number and the first NaN wins (PyTorch's CPU).
// `values` (address 0: not written) uses geometry.out.strides[0], `indices` (dtype Int64)
// geometry.out.strides[2]. reduced_numel must be > 0 when out_numel > 0.
void arg_reduce(Stream& stream, ReduceOp op, ComputeKind acc, int64_t out_numel,
                int64_t reduced_numel, const ReduceGeometry& geometry, Operand values,
                Operand indices, Operand in);

}  // namespace tvk::kernels
