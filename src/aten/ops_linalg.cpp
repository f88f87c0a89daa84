// Native torch.linalg LU / Cholesky / triangular-solve family: linalg_lu_factor_ex,
// linalg_lu_solve, lu_unpack, linalg_lu, _linalg_solve_ex, linalg_inv_ex, _linalg_det,
// _linalg_slogdet, linalg_cholesky_ex, cholesky, cholesky_inverse, _cholesky_solve_helper,
// linalg_solve_triangular, triangular_solve, linalg_matrix_exp, linalg_ldl_factor_ex,
// linalg_ldl_solve (functional and out=).
//
// Shapes, dtypes and error messages come from PyTorch's structured meta functions and its
// LinearAlgebraUtils checks; the math runs in the kernels of src/kernels/linalg.h (getrf,
// potrf, trsm, laswp) on batched column-major (F-contiguous) float32 / float64 copies, the
// CPU's (LAPACK's) layout, so the outputs have the CPU's strides. The composite ops (solve,
// inv, det, slogdet, lu) follow the CPU's own implementation in
// aten/src/ATen/native/BatchLinearAlgebra.cpp op for op (so that LU and pivots, which they
// return for the backward pass, equal the CPU's), calling the native vk ops.
//
// The _ex ops never read `info` back; the non-_ex Python ops check it through
// at::_linalg_check_errors (one host read, as on CUDA).
#include <ATen/ATen.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_det_meta.h>
#include <ATen/ops/_linalg_slogdet_meta.h>
#include <ATen/ops/_linalg_solve_ex_meta.h>
#include <ATen/ops/linalg_cholesky_ex_meta.h>
#include <ATen/ops/linalg_inv_ex_meta.h>
#include <ATen/ops/linalg_ldl_factor_ex_meta.h>
#include <ATen/ops/linalg_ldl_solve_meta.h>
#include <ATen/ops/linalg_lu_factor_ex_meta.h>
#include <ATen/ops/linalg_lu_meta.h>
#include <ATen/ops/linalg_lu_solve_meta.h>
#include <ATen/ops/lu_unpack_meta.h>
#include <ATen/ops/triangular_solve_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <type_traits>
#include <vector>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/linalg.h"

namespace tvk::aten {
namespace {

using at::Tensor;
using kernels::ComputeKind;

// float32 and float64 only (the CPU's LAPACK dtypes; it has no float16 / bfloat16 kernels):
// other dtypes raise NotImplementedError like the CPU's dispatch ("lu_cpu" not implemented
// for 'Half'), after the meta functions' own checks.
void check_lapack_dtype(const Tensor& t, const char* name) {
  const auto type = t.scalar_type();
  if (type != at::kFloat && type != at::kDouble) raise_not_implemented_for(name, type);
  vk_dtype(type, name);
}

ComputeKind kind_of(const Tensor& t) {
  return t.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
}

// True when `t` is laid out as the kernels expect: batched column-major, each matrix
// rows x cols at c * rows + r, the matrices one after the other.
bool is_column_major(const Tensor& t) { return t.dim() >= 2 && t.mT().is_contiguous(); }

Tensor empty_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  return at::empty_strided(sizes, at::native::batched_matrix_contiguous_strides(sizes, true),
                           options);
}

// A batched column-major copy of `t` (always a new tensor: the kernels work in place).
Tensor column_major_copy(const Tensor& t) {
  Tensor out = empty_column_major(t.sizes(), t.options());
  out.copy_(t);
  return out;
}

int64_t batch_of(const Tensor& t) {
  int64_t b = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) b *= t.size(d);
  return b;
}

tvk::Stream& stream_for(const Tensor& t) { return current_stream(t.device().index()); }

// `out` itself when it is contiguous, else a contiguous temporary to copy back with
// finish_contiguous.
Tensor contiguous_target(const Tensor& out) {
  return out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
}
void finish_contiguous(const Tensor& out, const Tensor& tmp) {
  if (!tmp.is_same(out)) out.copy_(tmp);
}

// ---------------------------------------------------------------- kernels on tensors

// In place on a column-major `work` (batch x m x n): LU, pivots, info (contiguous int32).
void run_getrf(const Tensor& work, const Tensor& pivots, const Tensor& info, const char* name) {
  kernels::LuFactor p;
  p.kind = kind_of(work);
  p.batch = batch_of(work);
  p.m = work.size(-2);
  p.n = work.size(-1);
  p.a = operand(work, name);
  p.pivots = operand(pivots, name);
  p.info = operand(info, name);
  const c10::DeviceGuard guard(work.device());
  tvk::Stream& stream = stream_for(work);
  translate_errors([&] { kernels::lu_factor(stream, p); });
}

// In place on a column-major `work` (batch x n x n), reading its lower triangle.
void run_potrf(const Tensor& work, const Tensor& info, const char* name) {
  kernels::Cholesky p;
  p.kind = kind_of(work);
  p.batch = batch_of(work);
  p.n = work.size(-1);
  p.a = operand(work, name);
  p.info = operand(info, name);
  const c10::DeviceGuard guard(work.device());
  tvk::Stream& stream = stream_for(work);
  translate_errors([&] { kernels::cholesky(stream, p); });
}

// op(A) X = B in place on the column-major B (batch x n x nrhs); A column-major, with the
// same batch as B or one matrix for all.
void run_trsm(const Tensor& A, const Tensor& B, bool upper, bool transpose, bool unit,
              const char* name) {
  if (B.numel() == 0) return;
  kernels::TriangularSolve p;
  p.kind = kind_of(B);
  p.batch = batch_of(B);
  p.n = B.size(-2);
  p.nrhs = B.size(-1);
  p.a_batch_stride = batch_of(A) == 1 ? 0 : p.n * p.n;
  TORCH_INTERNAL_ASSERT(batch_of(A) == 1 || batch_of(A) == p.batch);
  p.upper = upper;
  p.transpose = transpose;
  p.unit_diagonal = unit;
  p.a = operand(A, name);
  p.b = operand(B, name);
  const c10::DeviceGuard guard(B.device());
  tvk::Stream& stream = stream_for(B);
  translate_errors([&] { kernels::triangular_solve(stream, p); });
}

// B <- P^T B (reverse = false) or P B (reverse = true), in place on the column-major B;
// pivots contiguous int32 with B's batch.
void run_laswp(const Tensor& B, const Tensor& pivots, bool reverse, const char* name) {
  if (B.numel() == 0 || pivots.numel() == 0) return;
  kernels::ApplyPivots p;
  p.kind = kind_of(B);
  p.batch = batch_of(B);
  p.n = B.size(-2);
  p.nrhs = B.size(-1);
  p.k = pivots.size(-1);
  p.reverse = reverse;
  p.b = operand(B, name);
  p.pivots = operand(pivots, name);
  const c10::DeviceGuard guard(B.device());
  tvk::Stream& stream = stream_for(B);
  translate_errors([&] { kernels::apply_pivots(stream, p); });
}

// Solves A X = B (adjoint: A^T X = B) in place on the column-major B, given A's LU
// factorization (column-major, B's batch) and contiguous pivots: getrs.
void lu_solve_in_place(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint,
                       const char* name) {
  if (!adjoint) {  // A = P L U:  X = U^-1 L^-1 P^T B
    run_laswp(B, pivots, /*reverse=*/false, name);
    run_trsm(LU, B, /*upper=*/false, /*transpose=*/false, /*unit=*/true, name);
    run_trsm(LU, B, /*upper=*/true, /*transpose=*/false, /*unit=*/false, name);
  } else {  // A^T = U^T L^T P^T:  X = P L^-T U^-T B
    run_trsm(LU, B, /*upper=*/true, /*transpose=*/true, /*unit=*/false, name);
    run_trsm(LU, B, /*upper=*/false, /*transpose=*/true, /*unit=*/true, name);
    run_laswp(B, pivots, /*reverse=*/true, name);
  }
}

// ---------------------------------------------------------------- LU

void lu_factor_impl(const Tensor& A, bool pivot, bool check_errors, const Tensor& LU,
                    const Tensor& pivots, const Tensor& info) {
  check_lapack_dtype(A, "lu_vk");
  if (A.numel() == 0) {
    info.zero_();  // one element for a (0, 0) matrix
    return;
  }
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the vk device");
  const bool direct = is_column_major(LU);
  const Tensor work = direct ? LU : empty_column_major(LU.sizes(), LU.options());
  if (!work.is_same(A)) work.copy_(A);
  const Tensor piv = contiguous_target(pivots);
  const Tensor inf = contiguous_target(info);
  run_getrf(work, piv, inf, "linalg.lu_factor");
  if (!direct) LU.copy_(work);
  finish_contiguous(pivots, piv);
  finish_contiguous(info, inf);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", A.dim() == 2);
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot,
                                                       bool check_errors) {
  Structured<at::meta::structured_linalg_lu_factor_ex, 3> s;
  s.meta(A, pivot, check_errors);
  lu_factor_impl(A, pivot, check_errors, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_lu_factor_ex_out(const Tensor& A, bool pivot,
                                                              bool check_errors, Tensor& LU,
                                                              Tensor& pivots, Tensor& info) {
  Structured<at::meta::structured_linalg_lu_factor_ex, 3> s(LU, pivots, info);
  s.meta(A, pivot, check_errors);
  lu_factor_impl(A, pivot, check_errors, LU, pivots, info);
  return {LU, pivots, info};
}

void lu_solve_impl(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left,
                   bool adjoint, const Tensor& result) {
  if (result.numel() == 0) return;
  check_lapack_dtype(LU, "linalg.lu_solve_vk");
  // X A = B  <=>  A^T X^T = B^T: solve with the other adjoint on B^T.
  if (!left) adjoint = !adjoint;
  const Tensor rhs = left ? B : B.mT();
  // The batch shape of the result (the meta function broadcast LU's and B's).
  std::vector<int64_t> batch(result.sizes().begin(), result.sizes().end() - 2);
  std::vector<int64_t> rhs_shape = batch, lu_shape = batch, piv_shape = batch;
  rhs_shape.insert(rhs_shape.end(), {rhs.size(-2), rhs.size(-1)});
  lu_shape.insert(lu_shape.end(), {LU.size(-2), LU.size(-1)});
  piv_shape.push_back(pivots.size(-1));
  const Tensor X = column_major_copy(rhs.expand(rhs_shape));
  const Tensor LU_ = LU.sizes().equals(lu_shape) && is_column_major(LU)
                         ? LU
                         : column_major_copy(LU.expand(lu_shape));
  const Tensor piv = pivots.expand(piv_shape).contiguous();
  lu_solve_in_place(LU_, piv, X, adjoint, "linalg.lu_solve");
  result.copy_(left ? X : X.mT());
}

Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left,
                       bool adjoint) {
  Structured<at::meta::structured_linalg_lu_solve> s;
  s.meta(LU, pivots, B, left, adjoint);
  lu_solve_impl(LU, pivots, B, left, adjoint, s.outs[0]);
  return s.outs[0];
}

Tensor& linalg_lu_solve_out(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left,
                            bool adjoint, Tensor& result) {
  Structured<at::meta::structured_linalg_lu_solve> s(result);
  s.meta(LU, pivots, B, left, adjoint);
  lu_solve_impl(LU, pivots, B, left, adjoint, result);
  return result;
}

void lu_unpack_impl(const Tensor& LU, const Tensor& pivots, bool unpack_lu, bool unpack_pivots,
                    const Tensor& P, const Tensor& L, const Tensor& U) {
  const int64_t m = LU.size(-2), n = LU.size(-1);
  if (unpack_lu) {  // as the CPU: the order of triu / tril matters when LU is L or U
    if (m > n || LU.is_same(L)) {
      at::triu_out(const_cast<Tensor&>(U), m == n ? LU : LU.narrow(-2, 0, n), 0);
      at::tril_out(const_cast<Tensor&>(L), LU, -1);
      L.diagonal(0, -2, -1).fill_(1.);
    } else {
      at::tril_out(const_cast<Tensor&>(L), m == n ? LU : LU.narrow(-1, 0, m), -1);
      L.diagonal(0, -2, -1).fill_(1.);
      at::triu_out(const_cast<Tensor&>(U), LU, 0);
    }
  }
  if (unpack_pivots) {
    // perm: the pivots (1-based row interchanges) applied to 0 .. m-1; P[perm[j], j] = 1.
    std::vector<int64_t> perm_shape(P.sizes().begin(), P.sizes().end() - 1);
    const Tensor perm = at::empty(perm_shape, pivots.options().dtype(at::kLong));
    const Tensor piv = pivots.contiguous();
    kernels::PivotsToPermutation p;
    p.batch = perm.numel() == 0 ? 0 : perm.numel() / m;
    p.m = m;
    p.k = std::min(m, n);
    TORCH_INTERNAL_ASSERT(piv.numel() == p.batch * p.k || p.batch == 0);
    if (p.batch > 0) {
      p.perm = operand(perm, "lu_unpack");
      if (p.k > 0) p.pivots = operand(piv, "lu_unpack");
      const c10::DeviceGuard guard(perm.device());
      tvk::Stream& stream = stream_for(perm);
      translate_errors([&] { kernels::pivots_to_permutation(stream, p); });
    }
    P.zero_();
    P.scatter_(-2, perm.unsqueeze(-2), 1.);
  }
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU, const Tensor& pivots,
                                             bool unpack_lu, bool unpack_pivots) {
  Structured<at::meta::structured_lu_unpack, 3> s;
  s.meta(LU, pivots, unpack_lu, unpack_pivots);
  lu_unpack_impl(LU, pivots, unpack_lu, unpack_pivots, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_unpack_out(const Tensor& LU, const Tensor& pivots,
                                                    bool unpack_lu, bool unpack_pivots,
                                                    Tensor& P, Tensor& L, Tensor& U) {
  Structured<at::meta::structured_lu_unpack, 3> s(P, L, U);
  s.meta(LU, pivots, unpack_lu, unpack_pivots);
  lu_unpack_impl(LU, pivots, unpack_lu, unpack_pivots, P, L, U);
  return {P, L, U};
}

void linalg_lu_impl(const Tensor& A, bool pivot, const Tensor& P, const Tensor& L,
                    const Tensor& U) {
  const int64_t m = A.size(-2), n = A.size(-1);
  const bool use_L = m > n;  // the factor of A's shape holds the packed LU
  Tensor pivots = at::empty({0}, A.options().dtype(at::kInt));
  Tensor info = at::empty({0}, A.options().dtype(at::kInt));
  Tensor& packed = const_cast<Tensor&>(use_L ? L : U);
  at::linalg_lu_factor_ex_out(packed, pivots, info, A, pivot, /*check_errors=*/false);
  at::lu_unpack_out(const_cast<Tensor&>(P), const_cast<Tensor&>(L), const_cast<Tensor&>(U),
                    packed, pivots, /*unpack_data=*/true, /*unpack_pivots=*/pivot);
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& A, bool pivot) {
  Structured<at::meta::structured_linalg_lu, 3> s;
  s.meta(A, pivot);
  linalg_lu_impl(A, pivot, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_lu_out(const Tensor& A, bool pivot, Tensor& P,
                                                    Tensor& L, Tensor& U) {
  Structured<at::meta::structured_linalg_lu, 3> s(P, L, U);
  s.meta(A, pivot);
  linalg_lu_impl(A, pivot, P, L, U);
  return {P, L, U};
}


// ---------------------------------------------------------------- solve, inv, det, slogdet

void solve_ex_impl(const Tensor& A, const Tensor& B, bool left, bool check_errors,
                   const Tensor& result, const Tensor& LU, const Tensor& pivots,
                   const Tensor& info) {
  // As the CPU (torch 2.13): factor A itself (the LU and pivots returned for the backward
  // pass are A's), then solve with them.
  at::linalg_lu_factor_ex_out(const_cast<Tensor&>(LU), const_cast<Tensor&>(pivots),
                              const_cast<Tensor&>(info), A);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  const bool vector_case = at::native::linalg_solve_is_vector_rhs(LU, B);
  Tensor result_ = vector_case ? result.unsqueeze(-1) : result;
  Tensor B_ = vector_case ? B.unsqueeze(-1) : B;
  at::linalg_lu_solve_out(result_, LU, pivots, B_, left, /*adjoint=*/false);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_solve_ex(const Tensor& A, const Tensor& B,
                                                           bool left, bool check_errors) {
  Structured<at::meta::structured__linalg_solve_ex, 4> s;
  s.meta(A, B, left, check_errors);
  solve_ex_impl(A, B, left, check_errors, s.outs[0], s.outs[1], s.outs[2], s.outs[3]);
  return {s.outs[0], s.outs[1], s.outs[2], s.outs[3]};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> linalg_solve_ex_out(
    const Tensor& A, const Tensor& B, bool left, bool check_errors, Tensor& result, Tensor& LU,
    Tensor& pivots, Tensor& info) {
  Structured<at::meta::structured__linalg_solve_ex, 4> s(result, LU, pivots, info);
  s.meta(A, B, left, check_errors);
  solve_ex_impl(A, B, left, check_errors, result, LU, pivots, info);
  return {result, LU, pivots, info};
}

void inv_ex_impl(const Tensor& A, bool check_errors, const Tensor& result, const Tensor& info) {
  // A X = I, as the CPU (result holds I, then the solution).
  result.zero_();
  result.diagonal(0, -2, -1).fill_(1.);
  at::linalg_solve_ex_out(const_cast<Tensor&>(result), const_cast<Tensor&>(info), A, result,
                          /*left=*/true);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
}

std::tuple<Tensor, Tensor> linalg_inv_ex(const Tensor& A, bool check_errors) {
  Structured<at::meta::structured_linalg_inv_ex, 2> s;
  s.meta(A, check_errors);
  inv_ex_impl(A, check_errors, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<Tensor&, Tensor&> linalg_inv_ex_out(const Tensor& A, bool check_errors,
                                               Tensor& result, Tensor& info) {
  Structured<at::meta::structured_linalg_inv_ex, 2> s(result, info);
  s.meta(A, check_errors);
  inv_ex_impl(A, check_errors, result, info);
  return {result, info};
}

// det(P) of the LU pivots: +1 for an even number of interchanges, -1 for an odd one.
Tensor lu_det_P(const Tensor& pivots) {
  return (at::arange(1, pivots.size(-1) + 1, pivots.options()) != pivots)
      .sum(-1, /*keepdim=*/false, /*dtype=*/at::kLong)
      .fmod_(2)
      .mul_(-2)
      .add_(1);
}

void det_impl(const Tensor& A, const Tensor& result, const Tensor& LU, const Tensor& pivots) {
  Tensor info = at::empty({0}, A.options().dtype(at::kInt));
  // det(A^T) = det(A): factor A^T when A is contiguous (column-major already), as the CPU.
  at::linalg_lu_factor_ex_out(const_cast<Tensor&>(LU), const_cast<Tensor&>(pivots), info,
                              A.is_contiguous() ? A.mT() : A);
  at::mul_out(const_cast<Tensor&>(result), lu_det_P(pivots),
              at::prod(LU.diagonal(0, -2, -1), /*dim=*/-1));
}

std::tuple<Tensor, Tensor, Tensor> linalg_det(const Tensor& A) {
  Structured<at::meta::structured__linalg_det, 3> s;
  s.meta(A);
  det_impl(A, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_det_out(const Tensor& A, Tensor& result, Tensor& LU,
                                                     Tensor& pivots) {
  Structured<at::meta::structured__linalg_det, 3> s(result, LU, pivots);
  s.meta(A);
  det_impl(A, result, LU, pivots);
  return {result, LU, pivots};
}

void slogdet_impl(const Tensor& A, const Tensor& sign, const Tensor& logabsdet, const Tensor& LU,
                  const Tensor& pivots) {
  Tensor info = at::empty({0}, A.options().dtype(at::kInt));
  at::linalg_lu_factor_ex_out(const_cast<Tensor&>(LU), const_cast<Tensor&>(pivots), info,
                              A.is_contiguous() ? A.mT() : A);
  const Tensor diag_U = LU.diagonal(0, -2, -1);
  at::mul_out(const_cast<Tensor&>(sign), diag_U.sgn().prod(-1), lu_det_P(pivots));
  at::sum_out(const_cast<Tensor&>(logabsdet), diag_U.abs().log_(), -1);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  Structured<at::meta::structured__linalg_slogdet, 4> s;
  s.meta(A);
  slogdet_impl(A, s.outs[0], s.outs[1], s.outs[2], s.outs[3]);
  return {s.outs[0], s.outs[1], s.outs[2], s.outs[3]};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> linalg_slogdet_out(const Tensor& A, Tensor& sign,
                                                                   Tensor& logabsdet, Tensor& LU,
                                                                   Tensor& pivots) {
  Structured<at::meta::structured__linalg_slogdet, 4> s(sign, logabsdet, LU, pivots);
  s.meta(A);
  slogdet_impl(A, sign, logabsdet, LU, pivots);
  return {sign, logabsdet, LU, pivots};
}

// ---------------------------------------------------------------- Cholesky

// The Cholesky factor of A (its lower triangle, or the upper one when `upper`) into `L`
// (any strides), info (any strides) for each matrix.
void cholesky_into(const Tensor& A, bool upper, const Tensor& L, const Tensor& info) {
  // The kernel factors the lower triangle of a column-major copy: of A, or of A^T for the
  // upper factor (whose lower triangle is A's upper one); U = (L of A^T)^T.
  const bool direct = !upper && is_column_major(L);
  const Tensor work = direct ? L : empty_column_major(A.sizes(), A.options());
  if (!work.is_same(A)) work.copy_(upper ? A.mT() : A);
  const Tensor inf = contiguous_target(info);
  run_potrf(work, inf, "linalg.cholesky");
  work.tril_();
  if (!direct) L.copy_(upper ? work.mT() : work);
  finish_contiguous(info, inf);
}

void cholesky_ex_impl(const Tensor& A, bool upper, bool check_errors, const Tensor& L,
                      const Tensor& info) {
  check_lapack_dtype(A, "cholesky_vk");
  if (L.numel() == 0) {
    info.zero_();
    return;
  }
  cholesky_into(A, upper, L, info);
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
}

std::tuple<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  Structured<at::meta::structured_linalg_cholesky_ex, 2> s;
  s.meta(A, upper, check_errors);
  cholesky_ex_impl(A, upper, check_errors, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<Tensor&, Tensor&> linalg_cholesky_ex_out(const Tensor& A, bool upper,
                                                    bool check_errors, Tensor& L, Tensor& info) {
  Structured<at::meta::structured_linalg_cholesky_ex, 2> s(L, info);
  s.meta(A, upper, check_errors);
  cholesky_ex_impl(A, upper, check_errors, L, info);
  return {L, info};
}

// Legacy torch.cholesky: the CPU's checks and result (a column-major triangular factor).
Tensor cholesky_legacy(const Tensor& self, bool upper) {
  if (self.numel() == 0) return at::empty_like(self, at::MemoryFormat::Contiguous);
  at::native::squareCheckInputs(self, "cholesky");
  check_lapack_dtype(self, "cholesky_vk");
  const Tensor L = empty_column_major(self.sizes(), self.options());
  std::vector<int64_t> batch(self.sizes().begin(), self.sizes().end() - 2);
  const Tensor info = at::empty(batch, self.options().dtype(at::kInt));
  cholesky_into(self, upper, L, info);
  at::_linalg_check_errors(info, "cholesky", self.dim() == 2);
  return L;
}

Tensor& cholesky_out(const Tensor& self, bool upper, Tensor& result) {
  at::native::checkSameDevice("cholesky", result, self);
  at::native::checkLinalgCompatibleDtype("cholesky", result, self);
  const Tensor tmp = cholesky_legacy(self, upper);
  at::native::resize_output(result, tmp.sizes());
  result.copy_(tmp);
  return result;
}

// (L L^T)^-1 (or (U^T U)^-1) from the factor: two triangular solves on the identity.
Tensor cholesky_inverse_vk(const Tensor& input, bool upper) {
  at::native::squareCheckInputs(input, "cholesky_inverse");
  check_lapack_dtype(input, "cholesky_inverse_out_vk");
  const Tensor X = empty_column_major(input.sizes(), input.options());
  if (X.numel() == 0) return X;
  X.zero_();
  X.diagonal(0, -2, -1).fill_(1.);
  const Tensor F = column_major_copy(input);
  const char* name = "cholesky_inverse";
  if (upper) {  // A = U^T U: X = U^-1 U^-T
    run_trsm(F, X, /*upper=*/true, /*transpose=*/true, /*unit=*/false, name);
    run_trsm(F, X, /*upper=*/true, /*transpose=*/false, /*unit=*/false, name);
  } else {  // A = L L^T: X = L^-T L^-1
    run_trsm(F, X, /*upper=*/false, /*transpose=*/false, /*unit=*/false, name);
    run_trsm(F, X, /*upper=*/false, /*transpose=*/true, /*unit=*/false, name);
  }
  return X;
}

Tensor& cholesky_inverse_out(const Tensor& input, bool upper, Tensor& result) {
  at::native::checkSameDevice("cholesky_inverse", result, input);
  at::native::checkLinalgCompatibleDtype("cholesky_inverse", result, input);
  const Tensor tmp = cholesky_inverse_vk(input, upper);
  at::native::resize_output(result, tmp.sizes());
  result.copy_(tmp);
  return result;
}

// cholesky_solve after broadcasting (self = B, A = the factor, same batch shape).
Tensor cholesky_solve_helper(const Tensor& self, const Tensor& A, bool upper) {
  check_lapack_dtype(self, "cholesky_solve_vk");
  TORCH_CHECK(self.scalar_type() == A.scalar_type(), "Expected b and A to have the same dtype, ",
              "but found b of type ", self.scalar_type(), " and A of type ", A.scalar_type(),
              " instead.");
  const Tensor X = column_major_copy(self);
  if (X.numel() == 0) return X;
  const Tensor F = column_major_copy(A);
  const char* name = "cholesky_solve";
  // A = U^T U: U^T y = b, U x = y.  A = L L^T: L y = b, L^T x = y.
  run_trsm(F, X, upper, /*transpose=*/upper, /*unit=*/false, name);
  run_trsm(F, X, upper, /*transpose=*/!upper, /*unit=*/false, name);
  return X;
}

Tensor& cholesky_solve_helper_out(const Tensor& self, const Tensor& A, bool upper,
                                  Tensor& result) {
  const Tensor tmp = cholesky_solve_helper(self, A, upper);
  at::native::resize_output(result, tmp.sizes());
  result.copy_(tmp);
  return result;
}

// ---------------------------------------------------------------- triangular solves

// op(A) X = B from the left, or X op(A) = B (left = false), for broadcast A, B of one dtype;
// returns X column-major (the CPU's layout).
Tensor solve_triangular_impl(const Tensor& A, const Tensor& B, bool upper, bool left,
                             bool transpose, bool unit) {
  // X A = B  <=>  A^T X^T = B^T.
  const Tensor X = column_major_copy(left ? B : B.mT());
  if (X.numel() == 0) return left ? X : X.mT();
  const Tensor F = is_column_major(A) ? A : column_major_copy(A);
  run_trsm(F, X, upper, left ? transpose : !transpose, unit, "linalg.solve_triangular");
  return left ? X : X.mT();
}

std::pair<Tensor, Tensor> broadcast_for_solve(const Tensor& A, const Tensor& B) {
  auto [B_, A_] = at::native::_linalg_broadcast_batch_dims(B, A, nullptr);
  return {A_, B_};
}

Tensor& linalg_solve_triangular_out(const Tensor& A, const Tensor& B, bool upper, bool left,
                                    bool unitriangular, Tensor& out) {
  at::native::checkInputsSolver(A, B, left, "linalg.solve_triangular");
  const auto dtype = at::promote_types(A.scalar_type(), B.scalar_type());
  const Tensor A1 = A.to(dtype), B1 = B.to(dtype);
  check_lapack_dtype(A1, "triangular_solve_vk");
  auto [A_, B_] = broadcast_for_solve(A1, B1);
  at::native::checkSameDevice("linalg.solve_triangular", out, A);
  at::native::checkLinalgCompatibleDtype("linalg.solve_triangular", out, B1);
  const Tensor X = solve_triangular_impl(A_, B_, upper, left, false, unitriangular);
  if (at::native::resize_output(out, X.sizes()) || out.numel() == 0) {
    // freshly sized: give it the CPU's column-major layout
    out.as_strided_(X.sizes(), at::native::batched_matrix_contiguous_strides(X.sizes(), true));
  }
  out.copy_(X);
  return out;
}

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left,
                               bool unitriangular) {
  Tensor out = at::empty({0}, A.options().dtype(at::promote_types(A.scalar_type(),
                                                                  B.scalar_type())));
  linalg_solve_triangular_out(A, B, upper, left, unitriangular, out);
  return out;
}

void triangular_solve_impl(const Tensor& self, const Tensor& A, bool upper, bool transpose,
                           bool unitriangular, const Tensor& result, const Tensor& clone_A) {
  check_lapack_dtype(A, "triangular_solve_vk");
  auto [A_, B_] = broadcast_for_solve(A, self);
  clone_A.copy_(A_);
  if (result.numel() == 0) return;
  const Tensor X = solve_triangular_impl(is_column_major(clone_A) ? clone_A : A_, B_, upper,
                                         /*left=*/true, transpose, unitriangular);
  result.copy_(X);
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& self, const Tensor& A, bool upper,
                                            bool transpose, bool unitriangular) {
  Structured<at::meta::structured_triangular_solve, 2> s;
  s.meta(self, A, upper, transpose, unitriangular);
  triangular_solve_impl(self, A, upper, transpose, unitriangular, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<Tensor&, Tensor&> triangular_solve_out(const Tensor& self, const Tensor& A, bool upper,
                                                  bool transpose, bool unitriangular, Tensor& X,
                                                  Tensor& M) {
  Structured<at::meta::structured_triangular_solve, 2> s(X, M);
  s.meta(self, A, upper, transpose, unitriangular);
  triangular_solve_impl(self, A, upper, transpose, unitriangular, X, M);
  return {X, M};
}


// ---------------------------------------------------------------- matrix exponential
//
// The CPU's algorithm (Bader, Blanes, Casas: "Computing the matrix exponential with an
// optimized Taylor polynomial approximation", 2019), so the results match: per matrix, the
// 1-norm picks a Taylor polynomial of degree 1, 2, 4, 8 or 12 evaluated with few products,
// or degree 18 after scaling by 2^-s and squaring s times. Built from native matmuls and
// element-wise ops. The choice of degree and s per matrix reads the norms back once (the
// host groups the matrices by degree), as CUDA does.

// sum_j coefficients[j] * terms[j] (accumulated in order, like the CPU's
// _compute_linear_combination).
Tensor linear_combination(const std::vector<Tensor>& terms, const std::vector<double>& c) {
  Tensor out = terms[0] * c[0];
  for (size_t j = 1; j < terms.size(); ++j) out.add_(terms[j], c[j]);
  return out;
}

// {I, A, A^2, A^3, A^6}, the first `count` of them, for a batch A (b x n x n).
std::vector<Tensor> matrix_powers(const Tensor& A, int count) {
  std::vector<Tensor> p;
  p.push_back(at::eye(A.size(-1), A.options()).expand_as(A).contiguous());
  p.push_back(A);
  if (count > 2) p.push_back(at::matmul(A, A));
  if (count > 3) p.push_back(at::matmul(A, p[2]));
  if (count > 4) p.push_back(at::matmul(p[3], p[3]));
  return p;
}

template <typename S>
Tensor taylor(const Tensor& A, int degree) {
  if (degree == 1) {
    auto p = matrix_powers(A, 2);
    return p[0] + p[1];
  }
  if (degree == 2) {
    auto p = matrix_powers(A, 3);
    return p[0] + p[1] + p[2] / 2.0;
  }
  if (degree == 4) {  // I + A + A^2 (I / 2 + A / 6 + A^2 / 24)
    auto p = matrix_powers(A, 3);
    const Tensor q = at::matmul(
        p[2], linear_combination({p[0], p[1], p[2]}, {S(1 / 2.0), S(1 / 6.0), S(1 / 24.0)}));
    return linear_combination({p[0], p[1], q}, {1.0, 1.0, 1.0});
  }
  if (degree == 8) {
    // The coefficients as the CPU computes them (in S where it does).
    constexpr S sqrt_177 = 0.1330413469565007072504e+2;
    constexpr S x3 = 2. / 3.;
    constexpr S x1 = x3 * ((1. + sqrt_177) / 88.);
    constexpr S x2 = x3 * ((1. + sqrt_177) / 352.);
    constexpr S x4 = (-271. + 29. * sqrt_177) / (315. * x3);
    constexpr S x5 = (-11. + 11. * sqrt_177) / (1260. * x3);
    constexpr S x6 = (-99. + 11. * sqrt_177) / (5040. * x3);
    constexpr S x7 = (89. - sqrt_177) / (5040. * x3 * x3);  // as fixed in PyTorch (#196658)
    constexpr S y2 = (857. - 58. * sqrt_177) / 630.;
    auto p = matrix_powers(A, 3);
    const Tensor a4 = at::matmul(p[2], linear_combination({p[1], p[2]}, {x1, x2}));
    const Tensor a8 = at::matmul(linear_combination({p[2], a4}, {x3, 1.0}),
                                 linear_combination({p[0], p[1], p[2], a4}, {x4, x5, x6, x7}));
    return linear_combination({p[0], p[1], p[2], a8}, {1.0, 1.0, y2, 1.0});
  }
  if (degree == 12) {
    static constexpr S b[4][4] = {
        {9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740},
        {5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
         0.01108844528519167989},
        {0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
         0.00610700528898058230},
        {-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
         -0.00675951846863086359}};
    auto p = matrix_powers(A, 4);
    std::vector<Tensor> B;
    for (const auto& row : b) B.push_back(linear_combination(p, {row[0], row[1], row[2], row[3]}));
    B[2].add_(at::matmul(B[3], B[3]));  // + A^6 terms
    return B[0].add_(at::matmul(B[1].add_(B[2]), B[2]));
  }
  // degree 18
  static constexpr S b[5][5] = {
      {0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
       -8.92138498045729985177e-04, 0.},
      {0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
       -6.37898194594723280150e-04},
      {-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
       -6.98210122488052056106e-03, 3.34975017086070470649e-05},
      {-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
       2.95552570429315521194e-02, -1.39180257516060693404e-05},
      {0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
       -1.40086798182036094347e-05}};
  auto p = matrix_powers(A, 5);
  std::vector<Tensor> B;
  for (const auto& row : b)
    B.push_back(linear_combination(p, {row[0], row[1], row[2], row[3], row[4]}));
  B[3].add_(at::matmul(B[0], B[4]));  // + A^9 terms
  return B[1].add_(at::matmul(B[2].add_(B[3]), B[3]));
}

template <typename S>
Tensor matrix_exp_batch(const Tensor& a) {  // a: b x n x n, n >= 2
  // Upper bounds of the 1-norm for degrees 1, 2, 4, 8, 12, 18 (the CPU's tables).
  constexpr bool single = std::is_same_v<S, float>;
  static constexpr S thetas[6] = {
      single ? 1.192092800768788e-07 : 2.220446049250313e-16,
      single ? 5.978858893805233e-04 : 2.580956802971767e-08,
      single ? 5.116619363445086e-02 : 3.397168839976962e-04,
      single ? 5.800524627688768e-01 : 4.991228871115323e-02,
      single ? 1.461661507209034e+00 : 2.996158913811580e-01,
      single ? 3.010066362817634e+00 : 1.090863719290036e+00};
  static constexpr int degrees[5] = {1, 2, 4, 8, 12};
  const Tensor norm = a.abs().sum(-2).amax(-1);
  // NaN norms (NaN inputs) fall in no interval and keep the NaN the result starts with.
  Tensor res = at::full_like(a, std::numeric_limits<double>::quiet_NaN(),
                             at::MemoryFormat::Contiguous);
  const Tensor norm_host = norm.cpu();  // the one host read
  const S* nh = norm_host.template data_ptr<S>();
  const int64_t batch = a.size(0);
  auto to_device = [&](const std::vector<int64_t>& v) {
    return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(a.device());
  };
  for (int d = 0; d < 5; ++d) {
    const S lo = d == 0 ? S(-1) : thetas[d - 1], hi = thetas[d];
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < batch; ++i)
      if (lo < nh[i] && nh[i] <= hi) idx.push_back(i);
    if (idx.empty()) continue;
    const Tensor index = to_device(idx);
    res.index_copy_(0, index, taylor<S>(a.index_select(0, index), degrees[d]));
  }
  std::vector<int64_t> large;
  for (int64_t i = 0; i < batch; ++i)
    if (nh[i] >= thetas[4]) large.push_back(i);
  if (!large.empty()) {
    // s = max(0, ceil(log2(norm / theta_18))); exp(A) = T18(A / 2^s)^(2^s).
    const Tensor index = to_device(large);
    const Tensor sub_norm = norm.index_select(0, index);
    const Tensor s = at::clamp_min(at::ceil(at::log2(sub_norm / thetas[5])), 0)
                         .unsqueeze(-1).unsqueeze(-1).to(at::kLong);
    const Tensor scaled = a.index_select(0, index) / at::pow(2, s);
    const Tensor t18 = taylor<S>(scaled, 18);
    const Tensor s_host = s.cpu();
    const int64_t* sh = s_host.data_ptr<int64_t>();
    std::vector<Tensor> outs;
    for (size_t i = 0; i < large.size(); ++i) {
      Tensor m = t18.select(0, static_cast<int64_t>(i));
      for (int64_t p = 0; p < sh[i]; ++p) m = at::matmul(m, m);
      outs.push_back(m);
    }
    res.index_copy_(0, index, at::stack(outs));
  }
  return res;
}

Tensor matrix_exp_vk(const Tensor& a) {
  at::native::squareCheckInputs(a, "linalg.matrix_exp");
  at::native::checkFloatingOrComplex(a, "linalg.matrix_exp");
  const int64_t n = a.size(-1);
  if (n == 0) return a.clone();
  if (n == 1) return a.exp();
  // float16 / bfloat16: the CPU reads its float64 coefficient tables as 16-bit values (its
  // results are meaningless); vk computes only float32 / float64.
  check_lapack_dtype(a, "linalg_matrix_exp_vk");
  const Tensor a3 = a.reshape({-1, n, n});
  const Tensor r = a.scalar_type() == at::kDouble ? matrix_exp_batch<double>(a3)
                                                  : matrix_exp_batch<float>(a3);
  return r.view(a.sizes());
}

Tensor& linalg_matrix_exp_out(const Tensor& a, Tensor& out) {
  const Tensor r = matrix_exp_vk(a);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}


// ---------------------------------------------------------------- LDL^T

void ldl_factor_impl(const Tensor& self, bool hermitian, bool check_errors, const Tensor& LD,
                     const Tensor& pivots, const Tensor& info) {
  check_lapack_dtype(self, "ldl_factor_vk");
  if (self.numel() == 0) {
    info.zero_();
    return;
  }
  // Real matrices: hermitian or not, the same factorization (LAPACK sytrf / hetrf agree).
  const bool direct = is_column_major(LD);
  const Tensor work = direct ? LD : empty_column_major(LD.sizes(), LD.options());
  at::tril_out(const_cast<Tensor&>(work), self);  // as the CPU: LD starts as tril(A)
  const Tensor piv = contiguous_target(pivots);
  const Tensor inf = contiguous_target(info);
  kernels::LdlFactor p;
  p.kind = kind_of(work);
  p.batch = batch_of(work);
  p.n = work.size(-1);
  p.a = operand(work, "linalg.ldl_factor");
  p.pivots = operand(piv, "linalg.ldl_factor");
  p.info = operand(inf, "linalg.ldl_factor");
  {
    const c10::DeviceGuard guard(work.device());
    tvk::Stream& stream = stream_for(work);
    translate_errors([&] { kernels::ldl_factor(stream, p); });
  }
  if (!direct) LD.copy_(work);
  finish_contiguous(pivots, piv);
  finish_contiguous(info, inf);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.ldl_factor_ex", self.dim() == 2);
}

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex(const Tensor& self, bool hermitian,
                                                        bool check_errors) {
  Structured<at::meta::structured_linalg_ldl_factor_ex, 3> s;
  s.meta(self, hermitian, check_errors);
  ldl_factor_impl(self, hermitian, check_errors, s.outs[0], s.outs[1], s.outs[2]);
  return {s.outs[0], s.outs[1], s.outs[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_ldl_factor_ex_out(const Tensor& self, bool hermitian,
                                                               bool check_errors, Tensor& LD,
                                                               Tensor& pivots, Tensor& info) {
  Structured<at::meta::structured_linalg_ldl_factor_ex, 3> s(LD, pivots, info);
  s.meta(self, hermitian, check_errors);
  ldl_factor_impl(self, hermitian, check_errors, LD, pivots, info);
  return {LD, pivots, info};
}

void ldl_solve_impl(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian,
                    const Tensor& result) {
  if (LD.numel() == 0 || pivots.numel() == 0 || result.numel() == 0) return;
  check_lapack_dtype(LD, "ldl_solve_vk");
  std::vector<int64_t> batch(result.sizes().begin(), result.sizes().end() - 2);
  std::vector<int64_t> b_shape = batch, ld_shape = batch, piv_shape = batch;
  b_shape.insert(b_shape.end(), {B.size(-2), B.size(-1)});
  ld_shape.insert(ld_shape.end(), {LD.size(-2), LD.size(-1)});
  piv_shape.push_back(pivots.size(-1));
  const Tensor X = column_major_copy(B.expand(b_shape));
  const Tensor LD_ = LD.sizes().equals(ld_shape) && is_column_major(LD)
                         ? LD
                         : column_major_copy(LD.expand(ld_shape));
  // int64 pivots are accepted as on the CPU
  const Tensor piv = pivots.expand(piv_shape).to(at::kInt).contiguous();
  kernels::LdlSolve p;
  p.kind = kind_of(X);
  p.batch = batch_of(X);
  p.n = X.size(-2);
  p.nrhs = X.size(-1);
  p.a = operand(LD_, "linalg.ldl_solve");
  p.pivots = operand(piv, "linalg.ldl_solve");
  p.b = operand(X, "linalg.ldl_solve");
  {
    const c10::DeviceGuard guard(X.device());
    tvk::Stream& stream = stream_for(X);
    translate_errors([&] { kernels::ldl_solve(stream, p); });
  }
  result.copy_(X);
}

Tensor linalg_ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  Structured<at::meta::structured_linalg_ldl_solve> s;
  s.meta(LD, pivots, B, hermitian);
  ldl_solve_impl(LD, pivots, B, hermitian, s.outs[0]);
  return s.outs[0];
}

Tensor& linalg_ldl_solve_out(const Tensor& LD, const Tensor& pivots, const Tensor& B,
                             bool hermitian, Tensor& result) {
  Structured<at::meta::structured_linalg_ldl_solve> s(result);
  s.meta(LD, pivots, B, hermitian);
  ldl_solve_impl(LD, pivots, B, hermitian, result);
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lu_factor_ex", TORCH_FN(linalg_lu_factor_ex));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(linalg_lu_factor_ex_out));
  m.impl("linalg_lu_solve", TORCH_FN(linalg_lu_solve));
  m.impl("linalg_lu_solve.out", TORCH_FN(linalg_lu_solve_out));
  m.impl("lu_unpack", TORCH_FN(lu_unpack));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu", TORCH_FN(linalg_lu));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("_linalg_solve_ex", TORCH_FN(linalg_solve_ex));
  m.impl("_linalg_solve_ex.result", TORCH_FN(linalg_solve_ex_out));
  m.impl("linalg_inv_ex", TORCH_FN(linalg_inv_ex));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(linalg_inv_ex_out));
  m.impl("_linalg_det", TORCH_FN(linalg_det));
  m.impl("_linalg_det.result", TORCH_FN(linalg_det_out));
  m.impl("_linalg_slogdet", TORCH_FN(linalg_slogdet));
  m.impl("_linalg_slogdet.sign", TORCH_FN(linalg_slogdet_out));
  m.impl("linalg_cholesky_ex", TORCH_FN(linalg_cholesky_ex));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(linalg_cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky_legacy));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse_vk));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("_cholesky_solve_helper.out", TORCH_FN(cholesky_solve_helper_out));
  m.impl("linalg_solve_triangular", TORCH_FN(linalg_solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(linalg_solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(triangular_solve));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("linalg_matrix_exp", TORCH_FN(matrix_exp_vk));
  m.impl("linalg_matrix_exp.out", TORCH_FN(linalg_matrix_exp_out));
  m.impl("linalg_ldl_factor_ex", TORCH_FN(linalg_ldl_factor_ex));
  m.impl("linalg_ldl_factor_ex.out", TORCH_FN(linalg_ldl_factor_ex_out));
  m.impl("linalg_ldl_solve", TORCH_FN(linalg_ldl_solve));
  m.impl("linalg_ldl_solve.out", TORCH_FN(linalg_ldl_solve_out));
}

}  // namespace tvk::aten
