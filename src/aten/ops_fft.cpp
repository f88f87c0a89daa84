// The FFT primitives torch.fft composes: _fft_c2c, _fft_r2c, _fft_c2r and their .out forms.
// A d-dimensional transform is d successive 1-D passes of the L2 fft kernel (one dispatch
// each, shaders/fft.comp); the normalization is folded into the last pass. Contracts as in
// PyTorch's CPU / CUDA kernels (aten/src/ATen/native/mkl/SpectralOps.cpp):
//   normalization: 0 none, 1 by 1/sqrt(signal numel), 2 by 1/(signal numel)
//   _fft_r2c: real in, complex out; the last transformed dim is halved to n/2 + 1 when
//             onesided, the other dims are then full complex transforms
//   _fft_c2r: Hermitian half spectrum in, real out of last_dim_size along the last dim; the
//             other dims are inverse complex transforms first
// Outputs are contiguous, like the CPU's. Twiddle tables (float64 math, rounded once to the
// compute dtype) are uploaded once per (device, n, dtype) and cached for the process.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "aten/complex_storage.h"
#include "aten/vk_common.h"
#include "kernels/fft.h"

namespace tvk::aten {
namespace {

constexpr double kPi = 3.141592653589793238462643383279;

// Process-wide cache of device tables keyed by (what, device, n, m, dtype). `make` runs
// outside the lock (it may record device work that itself needs other cached tables).
// Leaked on purpose: the tensors must not be freed after the device is torn down at exit.
template <class Make>
at::Tensor cached_table(int what, c10::DeviceIndex device, int64_t n, int64_t m,
                        at::ScalarType real_type, Make make) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::tuple<int, int, int64_t, int64_t, int>, at::Tensor>();
  const auto key = std::make_tuple(what, static_cast<int>(device), n, m, static_cast<int>(real_type));
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  at::Tensor made = make();
  const std::lock_guard<std::mutex> lock(mutex);
  return cache->emplace(key, std::move(made)).first->second;
}

// exp(-2 pi i r / d) for an exact integer 0 <= r < d, folded into [0, pi] so cos / sin see
// a small argument (float64 host math, rounded once later).
void unit_root(int64_t r, int64_t d, double* re_im) {
  const bool upper = 2 * r > d;
  const double angle = 2 * kPi * static_cast<double>(upper ? d - r : r) / static_cast<double>(d);
  re_im[0] = std::cos(angle);
  re_im[1] = upper ? std::sin(angle) : -std::sin(angle);
}

at::Tensor to_device(const at::Tensor& host, at::ScalarType real_type, c10::DeviceIndex device) {
  return host.to(real_type).to(at::Device(c10::DeviceType::PrivateUse1, device));
}

// The n complex twiddles exp(-2 pi i m / n) as an [n, 2] real tensor (the kernels' table).
at::Tensor twiddles(int64_t n, at::ScalarType real_type, c10::DeviceIndex device) {
  return cached_table(0, device, n, 0, real_type, [&] {
    at::Tensor host = at::empty({n, 2}, at::kDouble);
    double* p = host.data_ptr<double>();
    for (int64_t m = 0; m < n; ++m) unit_root(m, n, p + 2 * m);
    return to_device(host, real_type, device);
  });
}

// Four-step twiddles for n = n1 * n2, laid out [j2, k1]: t[j2 * n1 + k1] = exp(-2 pi i j2 k1 / n).
at::Tensor four_step_twiddles(int64_t n1, int64_t n2, at::ScalarType real_type,
                              c10::DeviceIndex device) {
  return cached_table(1, device, n1, n2, real_type, [&] {
    const int64_t n = n1 * n2;
    at::Tensor host = at::empty({n, 2}, at::kDouble);
    double* p = host.data_ptr<double>();
    for (int64_t j2 = 0; j2 < n2; ++j2)
      for (int64_t k1 = 0; k1 < n1; ++k1) unit_root((j2 * k1) % n, n, p + 2 * (j2 * n1 + k1));
    return to_device(host, real_type, device);
  });
}

// Bluestein chirp a[m] = exp(-pi i m^2 / n) = exp(-2 pi i (m^2 mod 2n) / 2n), m < n; the
// exponent is reduced exactly in integers, so large n keeps full accuracy.
at::Tensor chirp_host(int64_t n) {
  at::Tensor host = at::empty({n, 2}, at::kDouble);
  double* p = host.data_ptr<double>();
  for (int64_t m = 0; m < n; ++m) {
    const auto sq = static_cast<int64_t>((static_cast<__int128>(m) * m) % (2 * n));
    unit_root(sq, 2 * n, p + 2 * m);
  }
  return host;
}

at::Tensor chirp(int64_t n, at::ScalarType real_type, c10::DeviceIndex device) {
  return cached_table(2, device, n, 0, real_type,
                      [&] { return to_device(chirp_host(n), real_type, device); });
}

at::Tensor transform_rows(const at::Tensor& in2, int64_t n, kernels::FftLoad load,
                          bool store_real, bool inverse, int64_t out_count, double scale);

// The length-m FFT of the Bluestein convolution kernel b[j] = conj(a[j]) (forward) or a[j]
// (inverse) for |j| < n, wrapped circularly, zero elsewhere. Computed once on the device.
at::Tensor bluestein_kernel(int64_t n, int64_t m, bool inverse, at::ScalarType real_type,
                            c10::DeviceIndex device) {
  return cached_table(inverse ? 4 : 3, device, n, m, real_type, [&] {
    const at::Tensor a = chirp_host(n);
    at::Tensor host = at::zeros({m, 2}, at::kDouble);
    const double* pa = a.data_ptr<double>();
    double* pb = host.data_ptr<double>();
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t j = 0; j < n; ++j) {
      pb[2 * j] = pa[2 * j];
      pb[2 * j + 1] = sign * pa[2 * j + 1];
      if (j > 0) {
        pb[2 * (m - j)] = pa[2 * j];
        pb[2 * (m - j) + 1] = sign * pa[2 * j + 1];
      }
    }
    const at::Tensor b = at::view_as_complex(to_device(host, real_type, device)).view({1, m});
    at::Tensor spectrum = transform_rows(b, m, kernels::FftLoad::Complex, false, false, m, 1.0);
    return raw_real_view(spectrum).view({m, 2});
  });
}

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Lengths below this (other than Stockham's powers of two) use the direct O(n^2) kernel: one
// dispatch of n complex multiply-adds per output, against Bluestein's five dispatches and
// two padded transforms of m >= 2n - 1. Measured on lavapipe (64 rows, complex64): direct
// n = 127 takes 17.7 ms, Bluestein n = 129 (m = 512) 18.7 ms and stays flat to n = 255, so
// the crossover sits near 128; a GPU's cheaper dispatches move it lower, not by much.
constexpr int64_t kDirectMaxN = 128;

// One kernel dispatch over the rows of in2 ([batch, count], complex or real, any strides):
// a transform (fft) or a pointwise multiply by `table` (fft_pointwise; undefined = ones).
// Returns a contiguous [batch, out_count] tensor, complex or real when store_real.
at::Tensor record_pass(const at::Tensor& in2, int64_t n, kernels::FftLoad load, bool store_real,
                       bool inverse, int64_t out_count, double scale, const at::Tensor& table,
                       bool pointwise) {
  const at::ScalarType real_type = c10::toRealValueType(in2.scalar_type());
  const at::ScalarType out_type = store_real ? real_type : c10::toComplexType(real_type);
  const int64_t batch = in2.size(0);
  at::Tensor out = at::empty({batch, out_count}, in2.options().dtype(out_type));
  if (batch == 0 || out_count == 0 || n == 0) return out;
  const bool complex_in = in2.is_complex();
  const int64_t in_unit = complex_in ? 2 : 1;
  const int64_t out_unit = store_real ? 1 : 2;
  kernels::Fft p;
  p.kind = real_type == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  p.in = operand(complex_in ? raw_real_view(in2) : in2, "fft");
  p.out = operand(store_real ? out : raw_real_view(out), "fft");
  if (table.defined()) p.twiddles = operand(table, "fft");
  p.n = n;
  p.batch = batch;
  p.in_batch_stride = in2.stride(0) * in_unit;
  p.in_stride = in2.stride(1) * in_unit;
  p.in_count = in2.size(1);
  p.out_batch_stride = out_count * out_unit;
  p.out_stride = out_unit;
  p.out_count = out_count;
  p.load = load;
  p.store_real = store_real;
  p.inverse = inverse;
  p.scale = scale;
  const c10::DeviceIndex device = in2.device().index();
  translate_errors([&] {
    if (pointwise)
      kernels::fft_pointwise(current_stream(device), p);
    else
      kernels::fft(current_stream(device), p);
  });
  return out;
}

// A kernel problem over the complex rows of `in` (contiguous, [..] complex) into `out`,
// strides in complex elements (the caller fills the two-level batch layout).
kernels::Fft strided_problem(const at::Tensor& in, const at::Tensor& out, int64_t n,
                             bool store_real, bool inverse, double scale) {
  const at::ScalarType real_type = c10::toRealValueType(in.scalar_type());
  kernels::Fft p;
  p.kind = real_type == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  p.in = operand(raw_real_view(in), "fft");
  p.out = operand(store_real ? out : raw_real_view(out), "fft");
  p.twiddles = operand(twiddles(n, real_type, in.device().index()), "fft");
  p.n = n;
  p.in_count = n;
  p.out_count = n;
  p.load = kernels::FftLoad::Complex;
  p.store_real = store_real;
  p.inverse = inverse;
  p.scale = scale;
  return p;
}

// Four-step for a power of two n too long for one workgroup: n = n1 * n2, j = n2 j1 + j2,
// k = k1 + n1 k2. Transforms of length n1 along j1 (strided rows read in place, written as
// rows [b, j2, k1]), a twiddle multiply exp(-2 pi i j2 k1 / n), and transforms of length n2
// along j2 written straight to X[b, k1 + n1 k2] (strided stores): three dispatches, no copy.
// x: complex [batch, n], contiguous.
at::Tensor four_step(const at::Tensor& x, int64_t n, bool store_real, bool inverse,
                     int64_t out_count, double scale) {
  const at::ScalarType real_type = c10::toRealValueType(x.scalar_type());
  const auto kind = real_type == at::kDouble ? kernels::ComputeKind::Float64
                                             : kernels::ComputeKind::Float32;
  const c10::DeviceIndex device = x.device().index();
  const int64_t batch = x.size(0);
  const int64_t max_n = kernels::fft_stockham_max_n(kind);
  const int64_t n2 = std::min<int64_t>(max_n, n / 2);
  const int64_t n1 = n / n2;
  at::Tensor y;
  if (n1 <= max_n) {
    y = at::empty({batch, n}, x.options());
    kernels::Fft p = strided_problem(x, y, n1, false, inverse, 1.0);
    p.batch = batch * n2;
    p.inner_batch = n2;  // row (b, j2): x[b * n + j2 + n2 j1]
    p.in_outer_stride = 2 * n;
    p.in_batch_stride = 2;
    p.in_stride = 2 * n2;
    p.out_outer_stride = 2 * n;  // written contiguous: y[b, j2, k1]
    p.out_batch_stride = 2 * n1;
    p.out_stride = 2;
    translate_errors([&] { kernels::fft(current_stream(device), p); });
  } else {  // n past max_n^2: gather the rows and recurse
    const at::Tensor cols = x.view({batch, n1, n2}).transpose(1, 2).reshape({batch * n2, n1});
    y = transform_rows(cols, n1, kernels::FftLoad::Complex, false, inverse, n1, 1.0).view({batch, n});
  }
  y = record_pass(y, n, kernels::FftLoad::Complex, false, inverse, n, 1.0,
                  four_step_twiddles(n1, n2, real_type, device), true);
  // Rows (b, k1) of length n2: y[b * n + k1 + n1 j2], stored to X[b, k1 + n1 k2].
  const at::ScalarType out_type = store_real ? real_type : x.scalar_type();
  at::Tensor z = at::empty({batch, n}, x.options().dtype(out_type));
  const int64_t unit = store_real ? 1 : 2;
  kernels::Fft p = strided_problem(y, z, n2, store_real, inverse, scale);
  p.batch = batch * n1;
  p.inner_batch = n1;
  p.in_outer_stride = 2 * n;
  p.in_batch_stride = 2;
  p.in_stride = 2 * n1;
  p.out_outer_stride = unit * n;
  p.out_batch_stride = unit;
  p.out_stride = unit * n1;
  translate_errors([&] { kernels::fft(current_stream(device), p); });
  return out_count == n ? z : z.narrow(1, 0, out_count).contiguous();
}

// Bluestein (chirp-z): x_k = a_k sum_j (x_j a_j) conj(a_{k-j}) with a_m = exp(-pi i m^2 / n)
// (conjugated for the inverse), the convolution done by padded power-of-two FFTs of length
// m >= 2n - 1: a chirp multiply with zero padding, a forward FFT, a multiply by the cached
// spectrum of the chirp kernel, an inverse FFT, and a final chirp multiply with the scale.
at::Tensor bluestein(const at::Tensor& in2, int64_t n, kernels::FftLoad load, bool store_real,
                     bool inverse, int64_t out_count, double scale) {
  const at::ScalarType real_type = c10::toRealValueType(in2.scalar_type());
  const c10::DeviceIndex device = in2.device().index();
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  const at::Tensor a = chirp(n, real_type, device);
  at::Tensor u = record_pass(in2, n, load, false, inverse, m, 1.0, a, true);
  u = transform_rows(u, m, kernels::FftLoad::Complex, false, false, m, 1.0);
  u = record_pass(u, m, kernels::FftLoad::Complex, false, false, m, 1.0,
                  bluestein_kernel(n, m, inverse, real_type, device), true);
  u = transform_rows(u, m, kernels::FftLoad::Complex, false, true, out_count, 1.0);
  return record_pass(u, out_count, kernels::FftLoad::Complex, store_real, inverse, out_count,
                     scale / static_cast<double>(m), a, true);
}

// 1-D transforms of length n over the rows of in2 ([batch, count], any strides), loaded as
// `load` describes: Stockham for powers of two up to one workgroup, the direct kernel for
// short other lengths, four-step for longer powers of two, Bluestein for the rest.
at::Tensor transform_rows(const at::Tensor& in2, int64_t n, kernels::FftLoad load,
                          bool store_real, bool inverse, int64_t out_count, double scale) {
  const at::ScalarType real_type = c10::toRealValueType(in2.scalar_type());
  const auto kind = real_type == at::kDouble ? kernels::ComputeKind::Float64
                                             : kernels::ComputeKind::Float32;
  const int64_t batch = in2.size(0);
  using S = kernels::FftTuning::Strategy;
  const bool forced_direct = kernels::fft_tuning().strategy == S::Direct;
  const bool single = n <= kernels::fft_stockham_max_n(kind) && (is_pow2(n) || n < kDirectMaxN);
  if (single || forced_direct || batch == 0 || out_count == 0 || n == 0)
    return record_pass(in2, n, load, store_real, inverse, out_count, scale,
                       twiddles(n, real_type, in2.device().index()), false);
  if (!is_pow2(n)) return bluestein(in2, n, load, store_real, inverse, out_count, scale);
  at::Tensor x = in2;
  if (load != kernels::FftLoad::Complex || in2.size(1) != n || !in2.is_contiguous())
    x = record_pass(in2, n, load, false, false, n, 1.0, at::Tensor(), true);
  return four_step(x, n, store_real, inverse, out_count, scale);
}

// One 1-D pass along `dim` of `x` (complex, or real for FftLoad::Real). Returns a tensor of
// x's shape with `dim` of size out_count: complex, or real when store_real.
at::Tensor fft_pass(const at::Tensor& x, int64_t dim, int64_t n, kernels::FftLoad load,
                    bool store_real, bool inverse, int64_t out_count, double scale) {
  const at::Tensor moved = x.movedim(dim, -1);
  const int64_t count = moved.size(-1);
  std::vector<int64_t> batch_sizes(moved.sizes().begin(), moved.sizes().end() - 1);
  int64_t batch = 1;
  for (int64_t s : batch_sizes) batch *= s;
  std::vector<int64_t> moved_out = batch_sizes;
  moved_out.push_back(out_count);
  const at::Tensor out =
      transform_rows(moved.reshape({batch, count}), n, load, store_real, inverse, out_count, scale);
  return out.view(moved_out).movedim(-1, dim);
}

double norm_scale(int64_t normalization, double signal_numel) {
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(signal_numel);
    case 2: return 1.0 / signal_numel;
    default: TORCH_CHECK(false, "Invalid normalization mode: ", normalization);
  }
}

void check_real_dtype(at::ScalarType t, const char* op) {
  TORCH_CHECK(t == at::kFloat || t == at::kDouble, op, ": unsupported dtype ", t,
              " on vk (float32 and float64 only)");
  check_storage_dtype(t, op);
}

std::vector<int64_t> wrap_dims(const at::Tensor& self, at::IntArrayRef dim) {
  std::vector<int64_t> dims;
  for (int64_t d : dim) dims.push_back(c10::maybe_wrap_dim(d, self.dim()));
  return dims;
}

at::Tensor fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool forward) {
  TORCH_CHECK(self.is_complex(), "_fft_c2c: expected a complex input tensor, got ",
              self.scalar_type());
  check_storage_dtype(self.scalar_type(), "_fft_c2c");
  const c10::DeviceGuard guard(self.device());
  if (dim.empty()) return self.clone(at::MemoryFormat::Contiguous);
  std::vector<int64_t> dims = wrap_dims(self, dim);
  double signal = 1;
  for (int64_t d : dims) signal *= static_cast<double>(self.size(d));
  const double scale = norm_scale(normalization, signal);
  // Ascending: the last pass runs along the highest dim, so its output is usually contiguous.
  std::sort(dims.begin(), dims.end());
  at::Tensor x = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t n = x.size(dims[i]);
    x = fft_pass(x, dims[i], n, kernels::FftLoad::Complex, false, !forward, n,
                 i + 1 == dims.size() ? scale : 1.0);
  }
  return x.contiguous();
}

at::Tensor fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool onesided) {
  TORCH_CHECK(self.is_floating_point(), "_fft_r2c: expected a real input tensor, got ",
              self.scalar_type());
  check_real_dtype(self.scalar_type(), "_fft_r2c");
  TORCH_CHECK(!dim.empty(), "_fft_r2c: expected at least one dim");
  const c10::DeviceGuard guard(self.device());
  std::vector<int64_t> dims = wrap_dims(self, dim);
  double signal = 1;
  for (int64_t d : dims) signal *= static_cast<double>(self.size(d));
  const double scale = norm_scale(normalization, signal);
  const int64_t last = dims.back();
  dims.pop_back();
  std::sort(dims.begin(), dims.end());
  const int64_t n = self.size(last);
  const int64_t half = onesided ? n / 2 + 1 : n;
  at::Tensor x = fft_pass(self, last, n, kernels::FftLoad::Real, false, false, half,
                          dims.empty() ? scale : 1.0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t len = x.size(dims[i]);
    x = fft_pass(x, dims[i], len, kernels::FftLoad::Complex, false, false, len,
                 i + 1 == dims.size() ? scale : 1.0);
  }
  return x.contiguous();
}

at::Tensor fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   int64_t last_dim_size) {
  TORCH_CHECK(self.is_complex(), "_fft_c2r: expected a complex input tensor, got ",
              self.scalar_type());
  check_storage_dtype(self.scalar_type(), "_fft_c2r");
  TORCH_CHECK(!dim.empty(), "_fft_c2r: expected at least one dim");
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  const c10::DeviceGuard guard(self.device());
  std::vector<int64_t> dims = wrap_dims(self, dim);
  const int64_t last = dims.back();
  dims.pop_back();
  double signal = static_cast<double>(last_dim_size);
  for (int64_t d : dims) signal *= static_cast<double>(self.size(d));
  const double scale = norm_scale(normalization, signal);
  std::sort(dims.begin(), dims.end());
  at::Tensor x = self;
  for (int64_t d : dims) {
    const int64_t len = x.size(d);
    x = fft_pass(x, d, len, kernels::FftLoad::Complex, false, true, len, 1.0);
  }
  x = fft_pass(x, last, last_dim_size, kernels::FftLoad::Hermitian, true, true, last_dim_size,
               scale);
  return x.contiguous();
}

at::Tensor& assign_out(const at::Tensor& result, at::Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor& fft_c2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool forward, at::Tensor& out) {
  return assign_out(fft_c2c(self, dim, normalization, forward), out);
}

at::Tensor& fft_r2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool onesided, at::Tensor& out) {
  return assign_out(fft_r2c(self, dim, normalization, onesided), out);
}

at::Tensor& fft_c2r_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        int64_t last_dim_size, at::Tensor& out) {
  return assign_out(fft_c2r(self, dim, normalization, last_dim_size), out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

}  // namespace tvk::aten
