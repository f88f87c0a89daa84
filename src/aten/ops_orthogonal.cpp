// Native orthogonal factorizations: _linalg_eigh (symmetric eigendecomposition), _linalg_svd
// (singular value decomposition), linalg_qr, geqrf, linalg_householder_product (orgqr) and
// ormqr, functional and out=, and linalg_lstsq (all four drivers, composed of these), float32 / float64. Shapes,
// output strides (LAPACK's column-major, as the CPU) and argument checks come from PyTorch's
// meta functions; the kernels (src/kernels/orthogonal.h) take any strides whose batch dims
// collapse to one stride, other operands go through contiguous temporaries. Everything the
// public functions built on these (svdvals, pinv, matrix_rank, matrix_norm('nuc'), eigvalsh,
// and the autograd formulas) composes from other native ops.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_eigh_meta.h>
#include <ATen/ops/_linalg_svd_meta.h>
#include <ATen/ops/linalg_qr_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <optional>
#include <tuple>
#include <vector>

#include "aten/batched_matrix.h"
#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/orthogonal.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;

// An output the kernel writes: the tensor itself when its batch dims collapse, else a
// same-strided-core temporary copied back by finish().
struct Target {
  at::Tensor out, dst;
  int64_t core = 2;
  int64_t bstride = 0;
  Target(const at::Tensor& t, int64_t core_dims) : out(t), core(core_dims) {
    if (auto s = batch_stride(t, core)) {
      dst = t;
      bstride = *s;
    } else {
      dst = at::empty(t.sizes(), t.options());
      bstride = *batch_stride(dst, core);
    }
  }
  int64_t stride(int64_t d) const { return dst.stride(d - core + dst.dim()); }  // core dim d
  void finish() const {
    if (!dst.is_same(out)) out.copy_(dst);
  }
};

// The input with collapsible batch dims (a contiguous copy otherwise) and its batch stride.
std::pair<at::Tensor, int64_t> batched_input(const at::Tensor& a) {
  if (auto s = batch_stride(a, 2)) return {a, *s};
  at::Tensor c = a.contiguous();
  return {c, *batch_stride(c, 2)};
}

void check_float(const at::Tensor& a, const char* name) {
  const at::ScalarType t = a.scalar_type();
  if (t != at::kFloat && t != at::kDouble) raise_not_implemented_for(name, t);
  vk_dtype(t, name);
}

// ---------------------------------------------------------------- eigh

void launch_eigh(const at::Tensor& A, c10::string_view uplo, bool compute_v, const at::Tensor& values,
                 const at::Tensor& vectors) {
  check_float(A, "linalg_eigh_vk");
  const int64_t n = A.size(-1);
  const int64_t batch = batch_count(A, 2);
  if (batch == 0 || n == 0) return;
  const char* name = "linalg.eigh";
  const auto [in, in_sb] = batched_input(A);
  const Target vals(values, 1);
  std::optional<Target> vecs;
  if (compute_v) vecs.emplace(vectors, 2);
  kernels::SymmetricEigen e;
  e.kind = A.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  e.batch = batch;
  e.n = n;
  e.upper = uplo.size() == 1 && (uplo[0] == 'U' || uplo[0] == 'u');
  e.compute_vectors = compute_v;
  e.in = operand(in, name);
  e.in_strides[0] = in_sb;
  e.in_strides[1] = in.stride(-2);
  e.in_strides[2] = in.stride(-1);
  e.values = operand(vals.dst, name);
  e.values_strides[0] = vals.bstride;
  e.values_strides[1] = vals.dst.stride(-1);
  if (compute_v) {
    e.vectors = operand(vecs->dst, name);
    e.vectors_strides[0] = vecs->bstride;
    e.vectors_strides[1] = vecs->dst.stride(-2);
    e.vectors_strides[2] = vecs->dst.stride(-1);
  }
  const at::Tensor work = at::empty({batch * kernels::symmetric_eigen_work(n)}, A.options());
  e.work = operand(work, name);
  const c10::DeviceGuard guard(A.device());
  tvk::Stream& stream = current_stream(A.device().index());
  translate_errors([&] { kernels::symmetric_eigen(stream, e); });
  vals.finish();
  if (vecs) vecs->finish();
}

std::tuple<at::Tensor, at::Tensor> linalg_eigh(const at::Tensor& A, c10::string_view uplo, bool compute_v) {
  Structured<at::meta::structured__linalg_eigh, 2> s;
  s.meta(A, uplo, compute_v);
  launch_eigh(A, uplo, compute_v, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> linalg_eigh_out(const at::Tensor& A, c10::string_view uplo,
                                                     bool compute_v, at::Tensor& values,
                                                     at::Tensor& vectors) {
  Structured<at::meta::structured__linalg_eigh, 2> s(values, vectors);
  s.meta(A, uplo, compute_v);
  launch_eigh(A, uplo, compute_v, values, vectors);
  return {values, vectors};
}

// ---------------------------------------------------------------- svd

// Wide matrices (m < n) are factored as A^T = U' S V'^T: U = V', Vh = U'^T, so the kernel
// always sees rows >= cols.
void launch_svd(const at::Tensor& A, bool full, bool compute_uv, const at::Tensor& U,
                const at::Tensor& S, const at::Tensor& Vh) {
  check_float(A, "linalg_svd_vk");
  const int64_t m = A.size(-2), n = A.size(-1);
  const int64_t batch = batch_count(A, 2);
  if (batch == 0) return;
  if (std::min(m, n) == 0 && (!compute_uv || !full)) return;
  const char* name = "linalg.svd";
  const bool tall = m >= n;
  const auto [in, in_sb] = batched_input(A);
  const Target vals(S, 1);
  std::optional<Target> u, vh;
  if (compute_uv) {
    u.emplace(U, 2);
    vh.emplace(Vh, 2);
  }
  kernels::SingularValueDecomposition p;
  p.kind = A.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  p.batch = batch;
  p.rows = tall ? m : n;
  p.cols = tall ? n : m;
  p.compute_vectors = compute_uv;
  p.full = full;
  p.in = operand(in, name);
  p.in_strides[0] = in_sb;
  p.in_strides[1] = tall ? in.stride(-2) : in.stride(-1);
  p.in_strides[2] = tall ? in.stride(-1) : in.stride(-2);
  if (S.numel() > 0) p.values = operand(vals.dst, name);
  p.values_strides[0] = vals.bstride;
  p.values_strides[1] = vals.dst.stride(-1);
  if (compute_uv) {
    // left = U (tall) or Vh^T (wide); right = Vh^T (tall) or U (wide).
    const Target& left = tall ? *u : *vh;
    const Target& right = tall ? *vh : *u;
    const bool left_t = !tall, right_t = tall;
    if (left.dst.numel() > 0) p.left = operand(left.dst, name);
    p.left_strides[0] = left.bstride;
    p.left_strides[1] = left_t ? left.dst.stride(-1) : left.dst.stride(-2);
    p.left_strides[2] = left_t ? left.dst.stride(-2) : left.dst.stride(-1);
    if (right.dst.numel() > 0) p.right = operand(right.dst, name);
    p.right_strides[0] = right.bstride;
    p.right_strides[1] = right_t ? right.dst.stride(-1) : right.dst.stride(-2);
    p.right_strides[2] = right_t ? right.dst.stride(-2) : right.dst.stride(-1);
  }
  const at::Tensor work = at::empty({batch * kernels::singular_value_work(p.rows, p.cols)}, A.options());
  p.work = operand(work, name);
  const c10::DeviceGuard guard(A.device());
  tvk::Stream& stream = current_stream(A.device().index());
  translate_errors([&] { kernels::singular_value_decomposition(stream, p); });
  vals.finish();
  if (u) u->finish();
  if (vh) vh->finish();
}

// The CPU's check: driver= selects a cuSOLVER algorithm.
void check_driver(const std::optional<c10::string_view>& driver) {
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_svd(const at::Tensor& A, bool full, bool compute_uv,
                                                          std::optional<c10::string_view> driver) {
  Structured<at::meta::structured__linalg_svd, 3> s;
  s.meta(A, full, compute_uv, driver);
  check_driver(driver);
  launch_svd(A, full, compute_uv, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_svd_out(const at::Tensor& A, bool full,
                                                                 bool compute_uv,
                                                                 std::optional<c10::string_view> driver,
                                                                 at::Tensor& U, at::Tensor& S,
                                                                 at::Tensor& Vh) {
  Structured<at::meta::structured__linalg_svd, 3> s(U, S, Vh);
  s.meta(A, full, compute_uv, driver);
  check_driver(driver);
  launch_svd(A, full, compute_uv, U, S, Vh);
  return {U, S, Vh};
}

// ---------------------------------------------------------------- QR

// A (batch..., rows, cols) tensor in LAPACK's batched column-major layout, as the CPU's
// outputs.
at::Tensor empty_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  std::vector<int64_t> t(sizes.begin(), sizes.end());
  std::swap(t[t.size() - 1], t[t.size() - 2]);
  return at::empty(t, options).mT();
}

// (batch..., k) vector operand with a collapsible batch (contiguous copy otherwise).
std::pair<at::Tensor, int64_t> batched_vector(const at::Tensor& v) {
  if (auto s = batch_stride(v, 1)) return {v, *s};
  at::Tensor c = v.contiguous();
  return {c, *batch_stride(c, 1)};
}

// Factors `qr` (batch..., m, n; collapsible batch dims) in place, tau (batch..., min(m, n))
// contiguous.
void run_geqrf(const at::Tensor& qr, const at::Tensor& tau, const char* name) {
  kernels::HouseholderQR q;
  q.kind = qr.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  q.batch = batch_count(qr, 2);
  q.rows = qr.size(-2);
  q.cols = qr.size(-1);
  if (q.batch == 0 || std::min(q.rows, q.cols) == 0) return;
  q.a = operand(qr, name);
  q.a_strides[0] = *batch_stride(qr, 2);
  q.a_strides[1] = qr.stride(-2);
  q.a_strides[2] = qr.stride(-1);
  q.tau = operand(tau, name);
  q.tau_strides[0] = *batch_stride(tau, 1);
  q.tau_strides[1] = tau.stride(-1);
  const c10::DeviceGuard guard(qr.device());
  tvk::Stream& stream = current_stream(qr.device().index());
  translate_errors([&] { kernels::householder_qr(stream, q); });
}

// target <- op(Q) target (left) or target op(Q) (right) with the first `count` reflectors of
// `reflectors` / `tau`; `identity`: target = I first.
void run_apply(const at::Tensor& reflectors, const at::Tensor& tau, int64_t count, const at::Tensor& target,
               bool left, bool transpose, bool identity, const char* name) {
  const Target c(target, 2);
  kernels::ApplyReflectors a;
  a.kind = target.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  a.batch = batch_count(target, 2);
  a.rows = target.size(-2);
  a.cols = target.size(-1);
  a.count = count;
  a.left = left;
  a.transpose = transpose;
  a.identity = identity;
  if (a.batch == 0 || a.rows == 0 || a.cols == 0) return;
  a.c = operand(c.dst, name);
  a.c_strides[0] = c.bstride;
  a.c_strides[1] = c.dst.stride(-2);
  a.c_strides[2] = c.dst.stride(-1);
  at::Tensor r, t;
  if (count > 0) {
    const auto [rr, rsb] = batched_input(reflectors);
    const auto [tt, tsb] = batched_vector(tau);
    r = rr;
    t = tt;
    a.reflectors = operand(r, name);
    a.reflectors_strides[0] = rsb;
    a.reflectors_strides[1] = r.stride(-2);
    a.reflectors_strides[2] = r.stride(-1);
    a.tau = operand(t, name);
    a.tau_strides[0] = tsb;
    a.tau_strides[1] = t.stride(-1);
  }
  const c10::DeviceGuard guard(target.device());
  tvk::Stream& stream = current_stream(target.device().index());
  translate_errors([&] { kernels::apply_reflectors(stream, a); });
  c.finish();
}

void check_castable(const char* fn, const at::Tensor& out, const at::Tensor& input, const char* out_name) {
  TORCH_CHECK(out.device() == input.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              input.device(), " and ", out.device(), "!");
  TORCH_CHECK(at::canCast(input.scalar_type(), out.scalar_type()), fn, ": Expected ", out_name,
              " to be safely castable from ", input.scalar_type(), " dtype, but got ", out_name,
              " with dtype ", out.scalar_type());
}

// result <- value; a resized result takes value's (column-major) strides, as the CPU's.
void write_out(at::Tensor& result, const at::Tensor& value) {
  if (at::native::resize_output(result, value.sizes())) result.as_strided_(value.sizes(), value.strides());
  result.copy_(value);
}

std::tuple<at::Tensor, at::Tensor> geqrf_vk(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_float(input, "geqrf_vk");
  const at::Tensor qr = empty_column_major(input.sizes(), input.options());
  qr.copy_(input);
  std::vector<int64_t> tau_shape(input.sizes().begin(), input.sizes().end() - 2);
  tau_shape.push_back(std::min(input.size(-2), input.size(-1)));
  const at::Tensor tau = at::empty(tau_shape, input.options());
  run_geqrf(qr, tau, "geqrf");
  return {qr, tau};
}

std::tuple<at::Tensor&, at::Tensor&> geqrf_out(const at::Tensor& input, at::Tensor& a, at::Tensor& tau) {
  TORCH_CHECK(input.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_castable("torch.geqrf", a, input, "a");
  check_castable("torch.geqrf", tau, input, "tau");
  const auto [qr, t] = geqrf_vk(input);
  write_out(a, qr);
  write_out(tau, t);
  return {a, tau};
}

void launch_qr(const at::Tensor& A, c10::string_view mode, const at::Tensor& Q, const at::Tensor& R) {
  check_float(A, "linalg_qr_vk");
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool compute_q = mode != "r";
  const at::Tensor qr = empty_column_major(A.sizes(), A.options());
  qr.copy_(A);
  std::vector<int64_t> tau_shape(A.sizes().begin(), A.sizes().end() - 2);
  tau_shape.push_back(k);
  const at::Tensor tau = at::empty(tau_shape, A.options());
  run_geqrf(qr, tau, "linalg.qr");
  if (R.numel() > 0) at::triu_out(const_cast<at::Tensor&>(R), qr.slice(-2, 0, R.size(-2)));
  if (compute_q) run_apply(qr, tau, k, Q, /*left=*/true, /*transpose=*/false, /*identity=*/true, "linalg.qr");
}

std::tuple<at::Tensor, at::Tensor> linalg_qr(const at::Tensor& A, c10::string_view mode) {
  Structured<at::meta::structured_linalg_qr, 2> s;
  s.meta(A, mode);
  launch_qr(A, mode, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> linalg_qr_out(const at::Tensor& A, c10::string_view mode, at::Tensor& Q,
                                                   at::Tensor& R) {
  Structured<at::meta::structured_linalg_qr, 2> s(Q, R);
  s.meta(A, mode);
  launch_qr(A, mode, Q, R);
  return {Q, R};
}

void check_tau_batch(const char* fn, const at::Tensor& input, const at::Tensor& tau) {
  TORCH_CHECK(input.dim() - tau.dim() == 1, fn,
              "Expected tau to have one dimension less than input, but got tau.ndim equal to ", tau.dim(),
              " and input.ndim is equal to ", input.dim());
}

at::Tensor& householder_product_out(const at::Tensor& input, const at::Tensor& tau, at::Tensor& result) {
  const char* fn = "torch.linalg.householder_product";
  TORCH_CHECK(input.dim() >= 2, fn, ": input must have at least 2 dimensions.");
  TORCH_CHECK(input.size(-2) >= input.size(-1), fn,
              ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  TORCH_CHECK(input.size(-1) >= tau.size(-1), fn,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  check_tau_batch("torch.linalg.householder_product: ", input, tau);
  if (input.dim() > 2) {
    const auto expected = input.sizes().slice(0, input.dim() - 2);
    const auto actual = tau.sizes().slice(0, tau.dim() - 1);
    TORCH_CHECK(actual.equals(expected), fn,
                ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ", actual);
  }
  TORCH_CHECK(tau.scalar_type() == input.scalar_type(), fn, ": tau dtype ", tau.scalar_type(),
              " does not match input dtype ", input.scalar_type());
  check_castable(fn, result, input, "result");
  check_float(input, "orgqr_vk");
  const at::Tensor q = empty_column_major(input.sizes(), input.options());
  run_apply(input, tau, tau.size(-1), q, /*left=*/true, /*transpose=*/false, /*identity=*/true,
            "linalg.householder_product");
  write_out(result, q);
  return result;
}

at::Tensor householder_product(const at::Tensor& input, const at::Tensor& tau) {
  at::Tensor result = at::empty({0}, input.options());
  householder_product_out(input, tau, result);
  return result;
}

at::Tensor& ormqr_out(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left,
                      bool transpose, at::Tensor& result) {
  TORCH_CHECK(input.dim() >= 2, "torch.ormqr: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 2, "torch.ormqr: other must have at least 2 dimensions.");
  const int64_t side = left ? -2 : -1;
  TORCH_CHECK(other.size(side) >= tau.size(-1), "torch.ormqr: other.shape[", side,
              "] must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(other.size(side) == input.size(-2), "torch.ormqr: other.shape[", side,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) <= input.size(-1), "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]");
  check_tau_batch("torch.ormqr: ", input, tau);
  TORCH_CHECK(input.dim() == other.dim(), "torch.ormqr: ",
              "Expected other to have the same number of dimensions as input, but got other.ndim equal to ",
              other.dim(), " and input.ndim is equal to ", input.dim());
  if (input.dim() > 2) {
    const auto expected = input.sizes().slice(0, input.dim() - 2);
    const auto tau_batch = tau.sizes().slice(0, tau.dim() - 1);
    TORCH_CHECK(tau_batch.equals(expected),
                "torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], but got ", tau_batch);
    const auto other_batch = other.sizes().slice(0, other.dim() - 2);
    TORCH_CHECK(other_batch.equals(expected),
                "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but got ",
                other_batch);
  }
  TORCH_CHECK(tau.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and tau to have the same dtype, but input has dtype", input.scalar_type(),
              " and tau has dtype ", tau.scalar_type());
  TORCH_CHECK(other.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and other to have the same dtype, but input has dtype",
              input.scalar_type(), " and other has dtype ", other.scalar_type());
  TORCH_CHECK(result.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and result to have the same dtype, but input has dtype",
              input.scalar_type(), " and result has dtype ", result.scalar_type());
  check_float(input, "ormqr_vk");
  const at::Tensor c = empty_column_major(other.sizes(), other.options());
  c.copy_(other);
  run_apply(input, tau, tau.size(-1), c, left, transpose, /*identity=*/false, "ormqr");
  write_out(result, c);
  return result;
}

at::Tensor ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left, bool transpose) {
  at::Tensor result = at::empty({0}, input.options());
  ormqr_out(input, tau, other, left, transpose, result);
  return result;
}


// ---------------------------------------------------------------- lstsq

// The CPU's driver choice and check (driver=None is 'gelsy' on the CPU, and vk offers all four).
std::string lstsq_driver(const std::optional<c10::string_view>& driver) {
  if (!driver.has_value()) return "gelsy";
  std::string name(driver->begin(), driver->end());
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  TORCH_CHECK(name == "gels" || name == "gelsy" || name == "gelsd" || name == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  return name;
}

void check_lstsq_out(const at::Tensor& out, const at::Tensor& input, at::ScalarType expected, const char* name) {
  TORCH_CHECK(out.device() == input.device(), "torch.linalg.lstsq: Expected ", name,
              " and input tensors to be on the same device, but got ", name, " on ", out.device(),
              " and input on ", input.device());
  TORCH_CHECK(at::canCast(expected, out.scalar_type()), "torch.linalg.lstsq: Expected ", name,
              " to be safely castable from ", expected, " dtype, but got ", name, " with dtype ",
              out.scalar_type());
}

struct LstsqResults {
  at::Tensor solution;          // (batch..., n, k): the minimum-norm least-squares solution
  at::Tensor residuals;         // (batch..., k) or (0,)
  at::Tensor rank;              // (a_batch...) int64, or (0,) for gels
  at::Tensor singular_values;   // (a_batch..., min(m, n)) for gelsd / gelss, else (0,)
  bool has_residuals = false;   // whether `residuals` was computed (it may still be empty)
};

// A (a_batch..., m, n), B (batch..., m, k) already broadcast to the common batch.
//   gels (full rank assumed, as LAPACK's): m >= n: A = QR, X = R^-1 (Q^T B)[:n], residuals from
//     the rows n: of Q^T B; m < n: A^T = QR, X = Q [R^-T B; 0] (the minimum-norm solution).
//   gelsy / gelsd / gelss: the SVD A = U S V^T, rank = #{s_i > tol}, X = V S+ U^T B with the
//     singular values under tol dropped (the minimum-norm solution LAPACK's drivers return).
//     tol = rcond * s_max; gelsd / gelss use eps for a negative rcond, as LAPACK.
//     Known difference: LAPACK's gelsy truncates a column-pivoted QR (rank from an incremental
//     condition estimate), not the SVD. Both give the same result for full-rank and exactly
//     rank-deficient matrices; when the dropped singular values are not negligible the two
//     truncations give different solutions (test_lstsq.py keeps a strict xfail for it).
// gels does not report a rank-deficient A (LAPACK's info > 0, which the CPU raises): that
// would need a host read of the factor's diagonal.
// Residuals (m > n, not gelsy; gelsd / gelss only when every matrix has rank n: a host read
// of the ranks, as the CPU does) are the squared column norms of A X - B.
LstsqResults lstsq_compute(const at::Tensor& A, const at::Tensor& B, double rcond, const std::string& driver) {
  const int64_t m = A.size(-2), n = A.size(-1), k = B.size(-1);
  std::vector<int64_t> batch(B.sizes().begin(), B.sizes().end() - 2);
  std::vector<int64_t> a_batch(A.sizes().begin(), A.sizes().end() - 2);
  auto with = [](std::vector<int64_t> v, std::initializer_list<int64_t> tail) {
    v.insert(v.end(), tail);
    return v;
  };
  const auto Ab = A.expand(with(batch, {m, n}));
  LstsqResults r;
  const at::TensorOptions opts = A.options();
  r.residuals = at::empty({0}, opts);
  r.rank = at::empty({0}, opts.dtype(at::kLong));
  r.singular_values = at::empty({0}, opts);
  bool residuals = m > n && driver != "gelsy";
  if (driver != "gelsd" && driver != "gelss" && std::min({m, n, k}) == 0) {
    // LAPACK's quick return (gels, gelsy) zeroes B: zero solution, zero residuals, rank 0.
    r.solution = at::zeros(with(batch, {n, k}), opts);
    if (residuals) {
      r.residuals = at::zeros(with(batch, {k}), opts);
      r.has_residuals = true;
    }
    if (driver == "gelsy") r.rank = at::zeros(a_batch, opts.dtype(at::kLong));
    return r;
  }
  if (driver == "gels") {
    if (m >= n) {
      auto [qr, tau] = at::geqrf(A);
      const at::Tensor qtb = at::ormqr(qr.expand(with(batch, {m, n})), tau.expand(with(batch, {n})), B,
                                       /*left=*/true, /*transpose=*/true);
      const at::Tensor R = qr.narrow(-2, 0, n).triu();
      r.solution = at::linalg_solve_triangular(R, qtb.narrow(-2, 0, n), /*upper=*/true);
      if (residuals) {
        r.residuals = qtb.narrow(-2, n, m - n).square().sum(-2);
        r.has_residuals = true;
      }
      return r;
    }
    auto [qr, tau] = at::geqrf(A.mT());  // (a_batch..., n, m)
    const at::Tensor Rt = qr.narrow(-2, 0, m).triu().mT();
    const at::Tensor y = at::linalg_solve_triangular(Rt, B, /*upper=*/false);  // (batch..., m, k)
    at::Tensor padded = at::zeros(with(batch, {n, k}), opts);
    padded.narrow(-2, 0, m).copy_(y);
    r.solution = at::ormqr(qr.expand(with(batch, {n, m})), tau.expand(with(batch, {m})), padded,
                           /*left=*/true, /*transpose=*/false);
    return r;
  }
  const bool svd_driver = driver == "gelsd" || driver == "gelss";
  const double eps = A.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon();
  const double threshold = svd_driver ? (rcond < 0 ? eps : rcond) : std::max(rcond, 0.0);
  auto [U, S, Vh] = at::linalg_svd(A, /*full_matrices=*/false);
  const at::Tensor keep = S > S.narrow(-1, 0, std::min<int64_t>(1, S.size(-1))) * threshold;
  r.rank = keep.sum(-1);
  if (svd_driver) r.singular_values = S;
  const at::Tensor inverse = at::where(keep, S.reciprocal(), at::zeros({}, opts));
  const at::Tensor utb = at::matmul(U.mT(), B) * inverse.unsqueeze(-1);
  r.solution = at::matmul(Vh.mT(), utb);
  if (r.solution.sizes() != at::IntArrayRef(with(batch, {n, k})))
    r.solution = r.solution.expand(with(batch, {n, k})).contiguous();
  if (residuals && svd_driver) residuals = (r.rank == n).all().item<bool>();  // the CPU's host read
  if (residuals) {
    r.residuals = (at::matmul(Ab, r.solution) - B).square().sum(-2);
    r.has_residuals = true;
  }
  return r;
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> linalg_lstsq_out(
    const at::Tensor& input, const at::Tensor& other, std::optional<double> rcond,
    std::optional<c10::string_view> driver, at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank,
    at::Tensor& singular_values) {
  TORCH_CHECK(input.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, "torch.linalg.lstsq: other must have at least 1 dimension.");
  TORCH_CHECK(input.scalar_type() == other.scalar_type(),
              "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype ",
              input.scalar_type(), " and other's dtype ", other.scalar_type());
  const int64_t dim_diff = input.dim() - other.dim();
  TORCH_CHECK(0 <= dim_diff && dim_diff <= 1,
              "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  const at::Tensor other_2d = dim_diff ? other.unsqueeze(-1) : other;
  TORCH_CHECK(input.size(-2) == other_2d.size(-2),
              dim_diff ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                       : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  TORCH_CHECK(other.device() == input.device(), "torch.linalg.lstsq: Expected other and input tensors to be on the same device, but got other on ",
              other.device(), " and input on ", input.device());
  const at::ScalarType dtype = input.scalar_type();
  check_lstsq_out(solution, input, dtype, "solution");
  check_lstsq_out(residuals, input, dtype, "solution");  // (sic: the CPU's message)
  check_lstsq_out(rank, input, at::kLong, "rank");
  check_lstsq_out(singular_values, input, dtype, "singular_values");
  const std::string name = lstsq_driver(driver);
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble,
              "This function doesn't handle types other than float and double");
  vk_dtype(dtype, "linalg_lstsq");
  const int64_t m = input.size(-2), n = input.size(-1);
  const double rcond_value = rcond.has_value()
                                 ? *rcond
                                 : (dtype == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                         : std::numeric_limits<float>::epsilon()) *
                                       static_cast<double>(std::max(m, n));

  // The CPU's vector case: other is (m,) or input.shape[:-1].
  const bool vector_case = at::native::linalg_solve_is_vector_rhs(input, other);
  const at::Tensor B2 = vector_case ? other.unsqueeze(-1) : other;
  std::vector<int64_t> batch = at::infer_size(input.sizes().slice(0, input.dim() - 2),
                                              B2.sizes().slice(0, B2.dim() - 2));
  std::vector<int64_t> b_shape = batch;
  b_shape.push_back(m);
  b_shape.push_back(B2.size(-1));
  LstsqResults res = lstsq_compute(input, B2.expand(b_shape), rcond_value, name);
  if (m == 0) res.solution.zero_();

  // The CPU's solution: a (batch..., max(m, n), k) LAPACK buffer (batched column-major; C
  // contiguous in the vector case), narrowed to n rows.
  std::vector<int64_t> full = batch;
  full.push_back(std::max(m, n));
  at::Tensor buffer;
  if (vector_case) {
    buffer = at::zeros(full, input.options()).unsqueeze(-1);
  } else {
    full.push_back(B2.size(-1));
    buffer = empty_column_major(full, input.options()).zero_();
  }
  buffer.narrow(-2, 0, n).copy_(res.solution);
  at::Tensor value = buffer.narrow(-2, 0, n);
  if (vector_case) value = value.squeeze(-1);

  // Outputs, as the CPU's linalg_lstsq_out: when every given output is usable as LAPACK's
  // workspace (right dtype; empty, or the expected shape and layout) they are written in
  // place: `solution` becomes the full buffer and the returned tensor its first n rows. Else
  // every output is resized and copied into (the CPU's temporaries path).
  const bool svd_driver = name == "gelsd" || name == "gelss";
  std::vector<int64_t> expected_solution(batch);  // the CPU's (slightly narrower) shape test
  expected_solution.push_back(std::max(m, n));
  if (!vector_case && other.dim() > 2) expected_solution.push_back(other.size(-1));
  const bool solution_layout_ok = vector_case ? solution.is_contiguous()
                                              : solution.dim() >= 2 && solution.mT().is_contiguous();
  const auto a_batch = input.sizes().slice(0, input.dim() - 2);
  bool copy_needed = solution.scalar_type() != dtype;
  copy_needed |= solution.numel() != 0 && (!solution_layout_ok || solution.sizes() != at::IntArrayRef(expected_solution));
  if (name != "gels") {
    copy_needed |= rank.scalar_type() != at::kLong;
    copy_needed |= rank.numel() != 0 && (rank.sizes() != a_batch || !rank.is_contiguous());
  }
  if (svd_driver) {
    copy_needed |= singular_values.scalar_type() != dtype;
    copy_needed |= singular_values.numel() != 0 &&
                   (singular_values.sizes() != res.singular_values.sizes() || !singular_values.is_contiguous());
  }
  auto copy_into = [](at::Tensor& out, const at::Tensor& v) {
    at::native::resize_output(out, v.sizes());
    out.copy_(v);
  };
  if (copy_needed) {
    copy_into(solution, value);
    copy_into(residuals, res.residuals);
    copy_into(rank, res.rank);
    copy_into(singular_values, res.singular_values);
    return {solution, residuals, rank, singular_values};
  }
  if (solution.numel() == 0) {
    if (vector_case)
      solution.resize_(full);
    else
      solution.resize_(buffer.sizes()).as_strided_(buffer.sizes(), buffer.strides());
  }
  at::Tensor full_solution = vector_case ? solution.unsqueeze(-1) : solution;
  full_solution.copy_(buffer);
  solution = full_solution.narrow(-2, 0, n);
  if (vector_case) solution = solution.squeeze(-1);
  if (res.has_residuals) copy_into(residuals, res.residuals);
  if (name != "gels") copy_into(rank, res.rank);
  if (svd_driver) copy_into(singular_values, res.singular_values);
  return {solution, residuals, rank, singular_values};
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_linalg_eigh", TORCH_FN(linalg_eigh));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(linalg_eigh_out));
  m.impl("_linalg_svd", TORCH_FN(linalg_svd));
  m.impl("_linalg_svd.U", TORCH_FN(linalg_svd_out));
  m.impl("geqrf", TORCH_FN(geqrf_vk));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_qr", TORCH_FN(linalg_qr));
  m.impl("linalg_qr.out", TORCH_FN(linalg_qr_out));
  m.impl("linalg_householder_product", TORCH_FN(householder_product));
  m.impl("linalg_householder_product.out", TORCH_FN(householder_product_out));
  m.impl("ormqr", TORCH_FN(ormqr));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
  m.impl("linalg_lstsq.out", TORCH_FN(linalg_lstsq_out));
}

}  // namespace tvk::aten
