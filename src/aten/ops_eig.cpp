// Native general eigendecomposition: linalg_eig (+ out=), _linalg_eigvals and
// linalg_eigvals.out for float32 / float64 inputs (complex64 / complex128 results, as the
// CPU's: values contiguous, vectors in LAPACK's batched column-major layout), through the L2
// kernel of src/kernels/eig.h (LAPACK geev's algorithm and conventions). Complex inputs, and
// matrices larger than the kernel's kMaxGeneralEigenOrder (512), take the CPU fallback
// (counted and governed by TORCH_VK_FALLBACK like any other fallback).
//
// Host reads: the kernel writes a per-matrix status (non-finite input, convergence) that is
// read once per call, after everything has been recorded: the CPU too must look at its
// result codes (LAPACK's info, its isfinite check) before it can raise. A matrix whose QR
// iteration needs more steps than the first recording allowed (rare) gets more QR
// dispatches and another read. Argument errors are raised in the CPU's order: the CPU checks
// the input for Inf / NaN before anything else, so an error path first runs that check too.
//
// The autograd formula (linalg_eig_backward) is PyTorch's, composed of other ops; it ends with
// a complex linalg.solve, which vk does not have natively yet (the LU family is real-only).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <vector>

#include "aten/complex_storage.h"
#include "aten/batched_matrix.h"
#include "aten/launch.h"
#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "kernels/eig.h"

namespace tvk::aten {
namespace {

using at::Tensor;

std::vector<int64_t> values_shape(const Tensor& A) { return std::vector<int64_t>(A.sizes().begin(), A.sizes().end() - 1); }

// (batch..., n, n) in LAPACK's batched column-major layout, as the CPU's eigenvectors.
Tensor empty_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  std::vector<int64_t> t(sizes.begin(), sizes.end());
  std::swap(t[t.size() - 1], t[t.size() - 2]);
  return at::empty(t, options).mT();
}

// The CPU's first check of linalg.eig (it comes before the shape check).
void check_finite(const Tensor& A, const char* api) {
  TORCH_CHECK(A.isfinite().all().item<bool>(), api, ": input tensor should not contain infs or NaNs.");
}

// The CPU's shape and dtype checks of a real input, in its order. `finite_first`: linalg.eig,
// whose Inf / NaN check precedes them (run on the host here only when another check fails:
// on the normal path the kernel reports non-finite input with its status).
void check_input(const Tensor& A, const char* name, const char* api, bool finite_first) {
  const bool shape_ok = A.dim() >= 2 && A.size(-1) == A.size(-2);
  const at::ScalarType t = A.scalar_type();
  const bool dtype_ok = t == at::kFloat || t == at::kDouble;
  if (finite_first && (!shape_ok || !dtype_ok)) check_finite(A, api);
  at::native::squareCheckInputs(A, name);
  if (!dtype_ok) raise_not_implemented_for("linalg_eig_out_vk", t);
  vk_dtype(t, name);
}

void check_out(const Tensor& out, const Tensor& A, const char* api, const char* out_name) {
  TORCH_CHECK(out.device() == A.device(), api, ": Expected ", out_name,
              " and input tensors to be on the same device, but got ", out_name, " on ", out.device(),
              " and input on ", A.device());
  const at::ScalarType expected = c10::toComplexType(A.scalar_type());
  TORCH_CHECK(at::canCast(expected, out.scalar_type()), api, ": Expected ", out_name,
              " to be safely castable from ", expected, " dtype, but got ", out_name, " with dtype ",
              out.scalar_type());
}

// Iteration cap per eigenvalue for tests of the non-convergence path (0: LAPACK's default).
int max_iterations_override() {
  const char* env = std::getenv("TORCH_VK_EIG_MAX_ITERATIONS");
  return env == nullptr ? 0 : std::max(0, std::atoi(env));
}

// Runs the kernel: `values` (batch..., n) and, when defined, `vectors` (batch..., n, n),
// complex of A's precision with collapsible batch dims (as allocated here). Returns the
// per-matrix info codes (the kernel's state[0]: 0, k > 0 not converged, -1 Inf / NaN input).
std::vector<int32_t> run_eig(const Tensor& A, const Tensor& values, const Tensor& vectors) {
  const int64_t n = A.size(-1);
  const int64_t batch = batch_count(A, 2);
  if (batch == 0 || n == 0) return {};
  const char* name = "linalg.eig";
  Tensor in = A;
  std::optional<int64_t> in_sb = batch_stride(in, 2);
  if (!in_sb) {
    in = A.contiguous();
    in_sb = batch_stride(in, 2);
  }
  const bool f64 = A.scalar_type() == at::kDouble;
  kernels::GeneralEigen e;
  e.kind = f64 ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  e.batch = batch;
  e.n = n;
  e.compute_vectors = vectors.defined();
  e.max_iterations = max_iterations_override();
  e.in = operand(in, name);
  e.in_strides[0] = *in_sb;
  e.in_strides[1] = in.stride(-2);
  e.in_strides[2] = in.stride(-1);
  const Tensor vr = raw_real_view(values);  // (batch..., n, 2)
  e.values = operand(vr, name);
  e.values_strides[0] = *batch_stride(vr, 2);
  e.values_strides[1] = vr.stride(-2);
  Tensor vv;
  if (e.compute_vectors) {
    vv = raw_real_view(vectors);  // (batch..., n, n, 2)
    e.vectors = operand(vv, name);
    e.vectors_strides[0] = *batch_stride(vv, 3);
    e.vectors_strides[1] = vv.stride(-3);
    e.vectors_strides[2] = vv.stride(-2);
  }
  const Tensor state = at::empty({batch * kernels::kEigStateInts}, A.options().dtype(at::kInt));
  const Tensor work = at::empty({batch * kernels::general_eigen_work(n)}, A.options());
  e.state = operand(state, name);
  e.work = operand(work, name);
  const c10::DeviceGuard guard(A.device());
  tvk::Stream& stream = current_stream(A.device().index());
  translate_errors([&] { kernels::general_eigen(stream, e); });
  Tensor host = state.cpu();
  // More QR dispatches for matrices still iterating: doubling rounds. Every QR dispatch runs
  // at least one iteration of each unfinished matrix and the kernel's per-eigenvalue cap
  // ends every matrix, so this terminates; the bound below only guards against a broken
  // kernel.
  int rounds = kernels::general_eigen_qr_rounds(n);
  for (int attempt = 0;; ++attempt) {
    const int32_t* s = host.data_ptr<int32_t>();
    bool pending = false;
    for (int64_t b = 0; b < batch && !pending; ++b) pending = s[b * kernels::kEigStateInts + kernels::kEigStateDone] == 0;
    if (!pending) break;
    TORCH_CHECK(attempt < 40, "torch-vk: linalg.eig: the QR iteration did not finish (internal error)");
    rounds = std::min(rounds * 2, 1 << 16);
    translate_errors([&] { kernels::general_eigen_resume(stream, e, rounds); });
    host = state.cpu();
  }
  std::vector<int32_t> info(batch);
  const int32_t* s = host.data_ptr<int32_t>();
  for (int64_t b = 0; b < batch; ++b) info[b] = s[b * kernels::kEigStateInts + kernels::kEigStateInfo];
  return info;
}

// The CPU's errors from the kernel's codes: Inf / NaN input (linalg.eig only; the CPU's
// eigvals does not check), then LAPACK's non-convergence as torch.linalg.LinAlgError.
void raise_errors(const std::vector<int32_t>& info, const Tensor& A, const char* api, bool check_nonfinite) {
  bool nonfinite = false, failed = false;
  for (int32_t v : info) {
    nonfinite |= v < 0;
    failed |= v > 0;
  }
  TORCH_CHECK(!(check_nonfinite && nonfinite), api, ": input tensor should not contain infs or NaNs.");
  if (!failed) return;
  std::vector<int32_t> codes(info);
  for (int32_t& v : codes) v = std::max(v, 0);
  const Tensor t = at::tensor(codes, at::TensorOptions().dtype(at::kInt));
  at::_linalg_check_errors(t, api, A.dim() == 2);
}

// Writes `value` into a caller's out= tensor as the CPU's linalg_eig_out does: an empty out of
// the expected dtype takes the CPU's layout (`column_major` for eigenvectors), anything else is
// resized (kept when the shape matches) and copied into.
void write_out(Tensor& out, const Tensor& value, bool column_major) {
  const bool adopt_layout = out.numel() == 0 && out.scalar_type() == value.scalar_type();
  if (at::native::resize_output(out, value.sizes()) && adopt_layout && column_major)
    out.as_strided_(value.sizes(), value.strides());
  out.copy_(value);
}

// Calls the kernel does not take: complex inputs, and orders above its limit.
bool not_for_kernel(const Tensor& A) {
  return A.is_complex() || (A.dim() >= 2 && A.size(-1) == A.size(-2) && A.size(-1) > kernels::kMaxGeneralEigenOrder);
}

// Hands a call to the CPU fallback (boxed).
void cpu_fallback_call(const char* op_name, const char* overload, torch::jit::Stack& stack) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(op_name, overload);
  run_cpu_fallback(op, &stack);
}

std::tuple<Tensor, Tensor> compute_eig(const Tensor& A) {
  const at::ScalarType ctype = c10::toComplexType(A.scalar_type());
  check_input(A, "linalg.eig", "torch.linalg.eig", /*finite_first=*/true);
  const at::TensorOptions opts = A.options().dtype(ctype);
  Tensor values = at::empty(values_shape(A), opts);
  Tensor vectors = empty_column_major(A.sizes(), opts);
  const std::vector<int32_t> info = run_eig(A, values, vectors);
  raise_errors(info, A, "torch.linalg.eig", /*check_nonfinite=*/true);
  return {values, vectors};
}

std::tuple<Tensor, Tensor> linalg_eig_vk(const Tensor& A) {
  if (not_for_kernel(A)) {
    torch::jit::Stack stack{A};
    cpu_fallback_call("aten::linalg_eig", "", stack);
    return {stack[0].toTensor(), stack[1].toTensor()};
  }
  return compute_eig(A);
}

std::tuple<Tensor&, Tensor&> linalg_eig_out_vk(const Tensor& A, Tensor& values, Tensor& vectors) {
  if (not_for_kernel(A)) {
    torch::jit::Stack stack{A, values, vectors};
    cpu_fallback_call("aten::linalg_eig", "out", stack);
    return {values, vectors};
  }
  const bool shape_ok = A.dim() >= 2 && A.size(-1) == A.size(-2);
  if (!shape_ok) check_finite(A, "torch.linalg.eig");
  at::native::squareCheckInputs(A, "linalg.eig");
  check_out(values, A, "torch.linalg.eig", "eigenvalues");
  check_out(vectors, A, "torch.linalg.eig", "eigenvectors");
  auto [v, w] = compute_eig(A);
  write_out(values, v, /*column_major=*/false);
  write_out(vectors, w, /*column_major=*/true);
  return {values, vectors};
}

Tensor compute_eigvals(const Tensor& A) {
  const at::ScalarType ctype = c10::toComplexType(A.scalar_type());
  check_input(A, "linalg.eigvals", "torch.linalg.eigvals", /*finite_first=*/false);
  Tensor values = at::empty(values_shape(A), A.options().dtype(ctype));
  const std::vector<int32_t> info = run_eig(A, values, Tensor());
  raise_errors(info, A, "torch.linalg.eigvals", /*check_nonfinite=*/false);
  return values;
}

Tensor linalg_eigvals_vk(const Tensor& A) {
  if (not_for_kernel(A)) {
    torch::jit::Stack stack{A};
    cpu_fallback_call("aten::_linalg_eigvals", "", stack);
    return stack[0].toTensor();
  }
  return compute_eigvals(A);
}

Tensor& linalg_eigvals_out_vk(const Tensor& A, Tensor& values) {
  if (not_for_kernel(A)) {
    torch::jit::Stack stack{A, values};
    cpu_fallback_call("aten::linalg_eigvals", "out", stack);
    return values;
  }
  at::native::squareCheckInputs(A, "linalg.eigvals");
  check_out(values, A, "torch.linalg.eigvals", "eigenvalues");
  write_out(values, compute_eigvals(A), /*column_major=*/false);
  return values;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_eig", TORCH_FN(linalg_eig_vk));
  m.impl("linalg_eig.out", TORCH_FN(linalg_eig_out_vk));
  m.impl("_linalg_eigvals", TORCH_FN(linalg_eigvals_vk));
  m.impl("linalg_eigvals.out", TORCH_FN(linalg_eigvals_out_vk));
}

}  // namespace tvk::aten
