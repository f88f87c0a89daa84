// L2: random numbers on the device (shaders/random.comp). No torch headers.
//
// Every random kernel draws from Philox4x32-10 keyed by the generator's seed. The numbers of
// the element with logical index e (row-major over the tensor's sizes, whatever its strides)
// are a function of (seed, offset, e) only, so results do not depend on the layout, the
// workgroup size or the grid. One launch consumes at most 4 counter values per element
// (kRandomCountersPerElement): callers reserve that many from the generator.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// Counter values (32-bit numbers) one element of one launch may consume.
constexpr uint64_t kRandomCountersPerElement = 4;

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // a multiple of 4 (the generator's offset for this launch)
  // Non-zero (in a captured graph, CapturedGraph::philox_address): the device address of a
  // 16-byte block {seed lo, seed hi, counter block lo, hi} that the kernel reads the seed and
  // the counter base from; `offset` is then relative to that base and `seed` is unused.
  uint64_t state_address = 0;
};

enum class RandomOp : int32_t {
  Uniform = 0,      // from + u * (to - from), u in [0, 1); never `to` after rounding   p = {from, to}
  Normal = 1,       // mean + std * N(0, 1) (Box-Muller)                                  p = {mean, std}
  Bernoulli = 2,    // u < prob ? 1 : 0; prob = p[0], or in0 (broadcast) with tensor_p     p = {prob}
                    // tensor prob outside [0, 1] or NaN: reported as a device error
                    // (BernoulliProbabilityOutOfRange, thrown at the stream's next wait)
  RandomInt = 3,    // from + r mod range (r: 32-bit when range < 2^32, else 64-bit);
                    // range 0 means 2^64 (raw 64-bit values)                              i = {from, range}
  Exponential = 4,  // -log(u) / lambda, u in (0, 1)                                       p = {lambda}
  Geometric = 5,    // ceil(log(u) / log1p(-prob)) >= 1                                    p = {prob}
  LogNormal = 6,    // exp(mean + std * N(0, 1))                                           p = {mean, std}
  Cauchy = 7,       // median + sigma * tan(pi * (u - 1/2))                                p = {median, sigma}
  Dropout = 8,      // keep = u < p[0]; out = in0 * keep * p[1]; in1 (mask) = keep        p = {1 - drop, scale}
  MaskedScale = 9,  // out = in0 * in1 * p[1] (no random numbers)                          p = {_, scale}
};

struct RandomElementwise {
  RandomOp op = RandomOp::Uniform;
  // Float32 (float16 / bfloat16 / float32 math; integer and bool outputs too), Float64
  // (needed when an operand is float64; shaderFloat64 devices). RandomInt: Int64, or Float64
  // when the output is float64.
  ComputeKind kind = ComputeKind::Float32;
  int64_t numel = 0;
  // Dimension 0 fastest, in the LOGICAL order of the tensor (dim 0 = its last dim), so that the
  // linear index is the row-major element index. strides[0]: out, [1]: in0, [2]: in1.
  Geometry geometry;
  Operand out, in0, in1;
  PhiloxState philox;
  double p[2] = {0, 0};
  int64_t i[2] = {0, 0};
  bool tensor_p = false;
};

// Records the op. numel == 0 records nothing. Throws std::invalid_argument for bad kinds,
// float64 without shaderFloat64, numel or offsets beyond the 32-bit index range, null or
// misaligned operands.
void random_elementwise(Stream& stream, const RandomElementwise& problem);

// Scratch elements the sort-based kernels need: rows * (len rounded up to a power of two),
// for a keys array (8 bytes each) and a values array (4 bytes each).
int64_t sort_scratch_elements(int64_t rows, int64_t len);

// A random permutation of 0..n-1 written to `out` (any integer or float dtype, element stride
// `out_stride`): random 64-bit keys sorted with a bitonic network (scratch: `keys`, `values`
// of sort_scratch_elements(1, n) elements, Int64 / Int32).
void randperm(Stream& stream, int64_t n, Operand out, int64_t out_stride, Operand keys,
              Operand values, const PhiloxState& philox);

// Multinomial sampling from `rows` contiguous rows of `categories` probabilities (`probs`,
// float dtypes; any non-negative weights with a positive sum) into the contiguous Int64
// [rows, samples] `out`.
// Without replacement: the categories ordered by p / E with E ~ Exp(1) (the exponential race,
// as PyTorch's CPU / CUDA), scratch as for randperm with sort_scratch_elements(rows,
// categories). Zero-probability categories come after every positive one.
void multinomial_without_replacement(Stream& stream, int64_t rows, int64_t categories,
                                     int64_t samples, Operand probs, Operand out, Operand keys,
                                     Operand values, const PhiloxState& philox);
// With replacement: `cdf` holds the inclusive prefix sums of each row (Float32 or Float64);
// each sample is the first category whose CDF exceeds u * total.
void multinomial_with_replacement(Stream& stream, int64_t rows, int64_t categories,
                                  int64_t samples, Operand cdf, Operand out,
                                  const PhiloxState& philox);
// ORs into the 32-bit word at `flags`: bit 0 when an element of the contiguous `probs` is
// negative, infinite or NaN; bit 1 when one of the `rows` sums (`row_sums`) is not > 0. The
// caller zeroes the word first.
void check_probabilities(Stream& stream, int64_t rows, int64_t categories, Operand probs,
                         Operand row_sums, uint64_t flags);

}  // namespace tvk::kernels
