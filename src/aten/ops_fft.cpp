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

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "aten/complex_storage.h"
#include "aten/vk_common.h"
#include "kernels/fft.h"

namespace tvk::aten {
namespace {

// The n complex twiddles exp(-2 pi i m / n) as an [n, 2] real tensor of `real_type` on the
// current vk device. The angle uses the reduced m / n so large n keeps full accuracy.
const at::Tensor& twiddles(int64_t n, at::ScalarType real_type, c10::DeviceIndex device) {
  static std::mutex mutex;
  // Leaked on purpose: the tensors must not be freed after the device is torn down at exit.
  static auto* cache = new std::map<std::tuple<int, int64_t, int>, at::Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(static_cast<int>(device), n, static_cast<int>(real_type));
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  at::Tensor host = at::empty({n, 2}, at::kDouble);
  double* p = host.data_ptr<double>();
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t m = 0; m < n; ++m) {
    // Fold into [0, n/2] by symmetry so the argument of cos / sin stays in [0, pi].
    const bool upper = 2 * m > n;
    const double angle = kTwoPi * static_cast<double>(upper ? n - m : m) / static_cast<double>(n);
    p[2 * m] = std::cos(angle);
    p[2 * m + 1] = upper ? std::sin(angle) : -std::sin(angle);
  }
  at::Tensor dev = host.to(real_type).to(at::Device(c10::DeviceType::PrivateUse1, device));
  return cache->emplace(key, std::move(dev)).first->second;
}

double norm_scale(int64_t normalization, double signal_numel) {
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(signal_numel);
    case 2: return 1.0 / signal_numel;
    default: TORCH_CHECK(false, "Invalid normalization mode: ", normalization);
  }
}

// One 1-D pass along `dim` of `x` (complex, or real for FftLoad::Real). Returns a tensor of
// x's shape with `dim` of size out_count: complex, or real when store_real.
at::Tensor fft_pass(const at::Tensor& x, int64_t dim, int64_t n, kernels::FftLoad load,
                    bool store_real, bool inverse, int64_t out_count, double scale) {
  const at::ScalarType real_type = c10::toRealValueType(x.scalar_type());
  const at::ScalarType out_type = store_real ? real_type : c10::toComplexType(real_type);
  std::vector<int64_t> out_sizes = x.sizes().vec();
  out_sizes[dim] = out_count;
  const at::Tensor moved = x.movedim(dim, -1);
  const int64_t count = moved.size(-1);
  std::vector<int64_t> batch_sizes(moved.sizes().begin(), moved.sizes().end() - 1);
  int64_t batch = 1;
  for (int64_t s : batch_sizes) batch *= s;
  std::vector<int64_t> moved_out = batch_sizes;
  moved_out.push_back(out_count);
  at::Tensor out = at::empty({batch, out_count}, x.options().dtype(out_type));
  if (batch > 0 && out_count > 0 && n > 0) {
    const at::Tensor in2 = moved.reshape({batch, count});
    const bool complex_in = in2.is_complex();
    const int64_t in_unit = complex_in ? 2 : 1;
    const int64_t out_unit = store_real ? 1 : 2;
    kernels::Fft p;
    p.kind = real_type == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    p.in = operand(complex_in ? raw_real_view(in2) : in2, "fft");
    p.out = operand(store_real ? out : raw_real_view(out), "fft");
    p.twiddles = operand(twiddles(n, real_type, x.device().index()), "fft");
    p.n = n;
    p.batch = batch;
    p.in_batch_stride = in2.stride(0) * in_unit;
    p.in_stride = in2.stride(1) * in_unit;
    p.in_count = count;
    p.out_batch_stride = out_count * out_unit;
    p.out_stride = out_unit;
    p.out_count = out_count;
    p.load = load;
    p.store_real = store_real;
    p.inverse = inverse;
    p.scale = scale;
    translate_errors([&] { kernels::fft(current_stream(x.device().index()), p); });
  }
  return out.view(moved_out).movedim(-1, dim);
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
