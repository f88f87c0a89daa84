// L2: the FFT family (shaders/fft.comp). No torch headers.
//
// One pass of 1-D discrete Fourier transforms of length n over a batch of independent
// transforms; multi-dimensional transforms are successive passes (the caller's job). Complex
// values are interleaved (re, im) pairs of Float32 or Float64 scalars; all strides are counted
// in scalars, so a complex tensor is passed as its real view.
//
//   out[b, k] = scale * sum_{j < n} x[b, j] * exp(sign * 2 pi i j k / n),   k < out_count,
//   sign = -1 forward, +1 inverse, x[b, j] as FftLoad describes.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class FftLoad : int32_t {
  Complex = 0,    // x[b, j] = in[b, j] (re at the element offset, im one scalar further),
                  // 0 for j >= in_count (zero padding)
  Real = 1,       // x[b, j] = (in[b, j], 0), 0 for j >= in_count
  Hermitian = 2,  // half spectrum of a real signal (c2r): x[b, j] = in[b, j] for j <= n / 2,
                  // conj(in[b, n - j]) above; entries at or past in_count read as 0
};

struct Fft {
  ComputeKind kind = ComputeKind::Float32;  // Float32 or Float64 (shaderFloat64 devices)
  Operand in;
  Operand out;
  // n complex twiddles w[m] = exp(-2 pi i m / n) as interleaved (re, im), same scalar dtype;
  // the caller computes them accurately (float64) and keeps them alive until the pass ran.
  Operand twiddles;
  int64_t n = 0;  // transform length
  int64_t batch = 0;
  int64_t in_batch_stride = 0, in_stride = 0, in_count = 0;
  int64_t out_batch_stride = 0, out_stride = 0, out_count = 0;  // out_count <= n
  // Two-level batch: transform b starts at (b / inner_batch) * in_outer_stride +
  // (b % inner_batch) * in_batch_stride (likewise out). 0 = one level (inner_batch = batch).
  // batch must be a multiple of inner_batch. Lets four-step passes read and write the
  // strided rows of an [outer, n1, n2] view directly.
  int64_t inner_batch = 0, in_outer_stride = 0, out_outer_stride = 0;
  FftLoad load = FftLoad::Complex;
  bool store_real = false;  // store only the real part of each output (c2r)
  bool inverse = false;
  double scale = 1.0;
};

// Records the pass on `stream`. An empty batch, n == 0 or out_count == 0 records nothing.
// Throws std::invalid_argument for bad kinds / dtypes / addresses, negative sizes,
// out_count > n, or offsets beyond the 32-bit index range.
void fft(Stream& stream, const Fft& problem);

// A pointwise pass (no transform), the building block of Bluestein and four-step:
//   out[b, k] = scale * x[b, k] * table[k]  for k < n,   0 for n <= k < out_count,
// with x[b, k] loaded as FftLoad describes for length n, table = `twiddles` (n complex values,
// conjugated when `inverse`; a null address means all ones). out_count may exceed n (zero
// padding). Same checks as fft() otherwise.
void fft_pointwise(Stream& stream, const Fft& problem);

// Knobs for tests (defaults are the production choices). Not synchronized.
struct FftTuning {
  enum class Strategy { Auto, Direct, Stockham };
  Strategy strategy = Strategy::Auto;  // Stockham applies only to powers of two <= its MAX_N
};
FftTuning& fft_tuning();

// Largest power-of-two length the shared-memory Stockham variant handles for `kind`.
int64_t fft_stockham_max_n(ComputeKind kind);

}  // namespace tvk::kernels
