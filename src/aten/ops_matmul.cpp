// Native matrix products: mm, addmm, bmm, baddbmm, mv, addmv, dot, vdot (functional, out= and
// in-place forms). Every one is a single call of the strided batched GEMM
// (tvk::kernels::gemm): transposed, sliced and broadcast operands are passed as strides, a
// bias is read by the kernel (no copy into the output first), vectors are n x 1 matrices.
//
// Semantics are the CPU's: the shape / dtype checks of the structured ops (mm, addmm, bmm,
// baddbmm, addmv) are PyTorch's own meta functions (at::meta::structured_*), so the messages
// and exception types are identical; the rest mirrors the CPU implementations in
// aten/src/ATen/native/LinearAlgebra.cpp and Blas.cpp (addmm_impl_cpu_, bmm_out_or_baddbmm_,
// addmv_out_cpu, dot, mv): beta == 0 ignores the input (NaN / inf do not propagate),
// k == 0 gives beta * input (or zeros), alpha == 0 skips the product, integer dtypes wrap,
// bool raises NotImplementedError. matmul, linear, outer, ... are CompositeImplicitAutograd
// and decompose into these (plus views, expand, reshape / _unsafe_view and sum for the
// gradients), so they need no registration here; so do einsum, tensordot, inner, outer,
// linalg.multi_dot, bilinear, and the out= forms vdot.out / matmul.out.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/mm_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <utility>

#include "aten/launch.h"
#include "aten/torch_compat.h"
#include "aten/complex_storage.h"
#include "aten/vk_common.h"
#include "kernels/gemm.h"

namespace tvk::aten {
namespace {

using kernels::GemmMatrix;

// ---------------------------------------------------------------- checks shared by all ops

// The dispatcher's device check of in-tree backends ("Expected all tensors to be on the same
// device, but found at least two devices, vk:0 and cpu! ...").
void check_same_device(const char* method,
                       std::initializer_list<std::pair<const at::Tensor*, const char*>> args) {
  std::optional<c10::Device> common;
  for (const auto& [t, name] : args) c10::impl::check_and_update_common_device(common, *t, method, name);
}

// ---------------------------------------------------------------- structured-op adapters
// The out-tensor handling of the code torchgen generates for a backend's structured kernels
// (RegisterCPU.cpp): functional ops allocate, out= ops check dtype / device and resize,
// in-place ops check that nothing would change.

at::Tensor create_out(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  return strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
}

void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ", options.dtype(),
              ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
              options.device(), ", but got ", out.device(), " instead");
  const bool resized = at::native::resize_output(out, sizes);
  if (resized && !strides.empty()) out.as_strided_(sizes, strides);
}

void check_inplace(const at::Tensor& self, at::IntArrayRef sizes, const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == self.dtype(), "Bad in-place call: ", "input tensor dtype ",
              self.dtype(), " and output tensor dtype ", options.dtype(), " should match");
  TORCH_CHECK(options.device() == self.device(), "Bad in-place call: ", "input tensor device ",
              self.device(), " and output tensor device ", options.device(), " should match");
  TORCH_CHECK(sizes == self.sizes(), "Bad in-place call: ", "input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

template <class Meta>
struct Functional final : Meta {
  void set_output_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options TVK_META_NAMES_PARAM) override {
    out_ = create_out(sizes, strides, options);
  }
  void set_output_raw_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options TVK_META_NAMES_PARAM) override {
    out_ = create_out(sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  at::Tensor out_;
};

template <class Meta>
struct Out final : Meta {
  explicit Out(const at::Tensor& out) : out_(out) {}
  void set_output_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options TVK_META_NAMES_PARAM) override {
    resize_out(out_, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options TVK_META_NAMES_PARAM) override {
    resize_out(out_, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  const at::Tensor& out_;
};

template <class Meta>
struct InPlace final : Meta {
  explicit InPlace(const at::Tensor& self) : out_(self) {}
  void set_output_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef,
                          at::TensorOptions options TVK_META_NAMES_PARAM) override {
    check_inplace(out_, sizes, options);
  }
  void set_output_raw_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef,
                              at::TensorOptions options TVK_META_NAMES_PARAM) override {
    check_inplace(out_, sizes, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  const at::Tensor& out_;
};

// ---------------------------------------------------------------- the GEMM call

bool is_zero(const c10::Scalar& s) { return s.toComplexDouble() == 0.0; }

// alpha / beta converted the way the CPU kernels convert them (to the op math type of
// `dtype`, with the same overflow checks).
kernels::GemmScalar gemm_scalar(const c10::Scalar& s, at::ScalarType dtype) {
  kernels::GemmScalar r;
  switch (dtype) {
    case at::kDouble: r.f = s.to<double>(); break;
    case at::kFloat:
    case at::kHalf:
    case at::kBFloat16: r.f = s.to<float>(); break;
    case at::kByte: r.i = s.to<uint8_t>(); break;
    case at::kChar: r.i = s.to<int8_t>(); break;
    case at::kShort: r.i = s.to<int16_t>(); break;
    case at::kInt: r.i = s.to<int32_t>(); break;
    default: r.i = s.to<int64_t>(); break;
  }
  return r;
}

GemmMatrix view(const at::Tensor& t, int64_t row_stride, int64_t col_stride, int64_t batch_stride,
                const char* name) {
  const kernels::Operand op = operand(t, name);
  return GemmMatrix{op.address, op.dtype, row_stride, col_stride, batch_stride};
}
// A 2-D tensor, or a 3-D tensor as a batch of matrices.
GemmMatrix matrix(const at::Tensor& t, const char* name) {
  if (t.dim() == 3) return view(t, t.stride(1), t.stride(2), t.stride(0), name);
  return view(t, t.stride(0), t.stride(1), 0, name);
}
// A 1-D tensor as an n x 1 column; a 0-dim tensor as 1 x 1.
GemmMatrix column(const at::Tensor& t, const char* name) {
  return view(t, t.dim() == 0 ? 0 : t.stride(0), 0, 0, name);
}
// A 1-D tensor as a 1 x n row.
GemmMatrix row(const at::Tensor& t, const char* name) { return view(t, 0, t.stride(0), 0, name); }

// Whether the memory spans of two tensors intersect (conservative for gapped strides).
bool may_overlap(const at::Tensor& x, const at::Tensor& y) {
  if (!x.defined() || !y.defined() || x.numel() == 0 || y.numel() == 0) return false;
  if (!x.storage().is_alias_of(y.storage())) return false;
  auto span = [](const at::Tensor& t) {
    int64_t lo = 0, hi = 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      const int64_t reach = (t.size(d) - 1) * t.stride(d);
      (reach < 0 ? lo : hi) += reach;
    }
    const auto base = reinterpret_cast<intptr_t>(t.const_data_ptr());
    const int64_t item = static_cast<int64_t>(t.element_size());
    return std::pair<intptr_t, intptr_t>(base + lo * item, base + (hi + 1) * item);
  };
  const auto [x0, x1] = span(x);
  const auto [y0, y1] = span(y);
  return x0 < y1 && y0 < x1;
}

// Records result = alpha * a @ b + beta * bias with the matrix views in `g` (whose c, a, b and
// bias describe `result`, `a`, `b` and `bias`; sizes and kind filled by the caller). When the
// output overlaps an input, computes into a temporary with the output's strides and copies.
void run_gemm(const at::Tensor& result, const at::Tensor& a, const at::Tensor& b,
              kernels::Gemm g, const char* name) {
  if (result.numel() == 0) return;
  const c10::DeviceGuard guard(result.device());
  tvk::Stream& stream = current_stream(result.device().index());
  at::Tensor tmp;
  if (g.k > 0 && (may_overlap(result, a) || may_overlap(result, b))) {
    tmp = at::empty_strided(result.sizes(), result.strides(), result.options());
    g.c.address = operand(tmp, name).address;
  }
  translate_errors([&] { kernels::gemm(stream, g); });
  if (tmp.defined()) result.copy_(tmp);
}

kernels::Gemm gemm_for(const at::Tensor& result, const c10::Scalar& beta, const c10::Scalar& alpha,
                       const char* name) {
  kernels::Gemm g;
  g.kind = kernels::gemm_kind_for(vk_dtype(result.scalar_type(), name));
  g.alpha = gemm_scalar(alpha, result.scalar_type());
  g.beta = gemm_scalar(beta, result.scalar_type());
  // torch.set_float32_matmul_precision: "high" allows TF32 on CUDA, "medium" bfloat16; here
  // they allow the cooperative-matrix kernel on bfloat16 parts (kernels::Gemm::float32_inputs).
  if (result.scalar_type() == at::kFloat) {
    switch (at::globalContext().float32MatmulPrecision()) {
      case at::Float32MatmulPrecision::HIGH:
        g.float32_inputs = kernels::Gemm::Float32Inputs::BFloat16x3;
        break;
      case at::Float32MatmulPrecision::MEDIUM:
        g.float32_inputs = kernels::Gemm::Float32Inputs::BFloat16;
        break;
      default:
        break;
    }
  }
  return g;
}

// The bias operand of result = beta * self + ...: `self` itself when it does not touch the
// output's memory (read by the kernel), else the output after result.copy_(self) (as the CPU
// does; raises like it on partial overlap). Undefined when beta == 0.
at::Tensor bias_operand(const at::Tensor& result, const at::Tensor& self, const c10::Scalar& beta) {
  if (is_zero(beta)) return {};
  if (self.is_same(result) || !may_overlap(self, result)) return self;
  result.copy_(self);
  return result;
}

// ---------------------------------------------------------------- mm / addmm

// addmm_impl_cpu_: result = beta * self + alpha * m1 @ m2 (self already expanded to m x n).
void addmm_impl(const at::Tensor& result, const at::Tensor& self, const at::Tensor& m1,
                const at::Tensor& m2, const c10::Scalar& beta, const c10::Scalar& alpha) {
  TORCH_CHECK(m1.dtype() == m2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              m1.dtype(), " != ", m2.dtype());
  const auto self_sizes = self.sizes();
  TORCH_CHECK(self_sizes[0] == m1.size(0) && self_sizes[1] == m2.size(1),
              "input shape is incompatible with matrix multiplication (", m1.size(0), "x",
              m1.size(1), " @ ", m2.size(0), "x", m2.size(1), " != ", self_sizes[0], "x",
              self_sizes[1], ")");
  at::native::resize_output(result, self_sizes);
  if (result.numel() == 0) return;
  if (result.is_complex()) return complex_addbmm_into(result, self, m1, m2, beta, alpha);
  if (m1.size(1) != 0 && result.scalar_type() == at::kBool)
    raise_not_implemented_for("addmm_impl_cpu_", at::kBool);
  const char* name = "addmm";
  kernels::Gemm g = gemm_for(result, beta, alpha, name);
  g.m = result.size(0);
  g.n = result.size(1);
  g.k = m1.size(1);
  g.c = matrix(result, name);
  if (g.k > 0) {
    g.a = matrix(m1, name);
    g.b = matrix(m2, name);
  }
  const at::Tensor bias = bias_operand(result, self, beta);
  if (bias.defined()) g.bias = matrix(bias, name);
  run_gemm(result, m1, m2, g, name);
}

at::Tensor vk_mm(const at::Tensor& self, const at::Tensor& mat2) {
  check_same_device("wrapper_PrivateUse1_mm", {{&self, "self"}, {&mat2, "mat2"}});
  Functional<at::meta::structured_mm> op;
  op.meta(self, mat2);
  addmm_impl(op.out_, op.out_, self, mat2, 0, 1);
  return std::move(op.out_);
}

at::Tensor& vk_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_same_device("wrapper_PrivateUse1_out_mm_out",
                    {{&out, "out"}, {&self, "self"}, {&mat2, "mat2"}});
  Out<at::meta::structured_mm> op(out);
  op.meta(self, mat2);
  addmm_impl(out, out, self, mat2, 0, 1);
  return out;
}

void addmm_any(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
               const c10::Scalar& beta, const c10::Scalar& alpha, const at::Tensor& result) {
  // addmm_out_cpu: the input broadcast to the output's shape.
  const auto b_self = at::expand_size(self, {mat1.sizes()[0], mat2.sizes()[1]}, "addmm_out");
  addmm_impl(result, *b_self, mat1, mat2, beta, alpha);
}

at::Tensor vk_addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_addmm", {{&self, "self"}, {&mat1, "mat1"}, {&mat2, "mat2"}});
  Functional<at::meta::structured_addmm> op;
  op.meta(self, mat1, mat2, beta, alpha);
  addmm_any(self, mat1, mat2, beta, alpha, op.out_);
  return std::move(op.out_);
}

at::Tensor& vk_addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  check_same_device("wrapper_PrivateUse1_out_addmm_out",
                    {{&out, "out"}, {&self, "self"}, {&mat1, "mat1"}, {&mat2, "mat2"}});
  Out<at::meta::structured_addmm> op(out);
  op.meta(self, mat1, mat2, beta, alpha);
  addmm_any(self, mat1, mat2, beta, alpha, out);
  return out;
}

at::Tensor& vk_addmm_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                   const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_addmm_", {{&self, "self"}, {&mat1, "mat1"}, {&mat2, "mat2"}});
  InPlace<at::meta::structured_addmm> op(self);
  op.meta(self, mat1, mat2, beta, alpha);
  addmm_any(self, mat1, mat2, beta, alpha, self);
  return self;
}

// ---------------------------------------------------------------- bmm / baddbmm

// bmm_out_or_baddbmm_: for baddbmm the meta function has already copied the input into the
// result when beta != 0, so the result is its own bias.
void bmm_impl(const at::Tensor& result, const at::Tensor& batch1, const at::Tensor& batch2,
              const c10::Scalar& beta, const c10::Scalar& alpha, bool is_bmm) {
  if (result.numel() == 0) return;
  if (result.is_complex()) {  // the meta function copied the input into result (beta != 0)
    return complex_addbmm_into(result, is_bmm ? at::Tensor() : result, batch1, batch2,
                               is_bmm ? c10::Scalar(0) : beta, is_bmm ? c10::Scalar(1) : alpha);
  }
  const int64_t k = batch1.size(2);
  const char* name = is_bmm ? "bmm" : "baddbmm";
  if (k != 0) {
    if (batch1.scalar_type() == at::kBool) raise_not_implemented_for(name, at::kBool);
    TORCH_CHECK(batch2.scalar_type() == batch1.scalar_type(), "expected scalar type ",
                batch1.scalar_type(), " but found ", batch2.scalar_type());
  }
  const bool use_bias = !is_bmm && !is_zero(beta);
  kernels::Gemm g = gemm_for(result, use_bias ? beta : c10::Scalar(0), is_bmm ? c10::Scalar(1) : alpha, name);
  g.batch = result.size(0);
  g.m = result.size(1);
  g.n = result.size(2);
  g.k = k;
  g.c = matrix(result, name);
  if (k > 0) {
    g.a = matrix(batch1, name);
    g.b = matrix(batch2, name);
  }
  if (use_bias) g.bias = g.c;
  run_gemm(result, batch1, batch2, g, name);
}

at::Tensor vk_bmm(const at::Tensor& self, const at::Tensor& mat2) {
  check_same_device("wrapper_PrivateUse1_bmm", {{&self, "self"}, {&mat2, "mat2"}});
  Functional<at::meta::structured_bmm> op;
  op.meta(self, mat2);
  bmm_impl(op.out_, self, mat2, 0, 1, true);
  return std::move(op.out_);
}

at::Tensor& vk_bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_same_device("wrapper_PrivateUse1_out_bmm_out",
                    {{&out, "out"}, {&self, "self"}, {&mat2, "mat2"}});
  Out<at::meta::structured_bmm> op(out);
  op.meta(self, mat2);
  bmm_impl(out, self, mat2, 0, 1, true);
  return out;
}

at::Tensor vk_baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_baddbmm",
                    {{&self, "self"}, {&batch1, "batch1"}, {&batch2, "batch2"}});
  Functional<at::meta::structured_baddbmm> op;
  op.meta(self, batch1, batch2, beta, alpha);
  bmm_impl(op.out_, batch1, batch2, beta, alpha, false);
  return std::move(op.out_);
}

at::Tensor& vk_baddbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                        const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  check_same_device("wrapper_PrivateUse1_out_baddbmm_out",
                    {{&out, "out"}, {&self, "self"}, {&batch1, "batch1"}, {&batch2, "batch2"}});
  Out<at::meta::structured_baddbmm> op(out);
  op.meta(self, batch1, batch2, beta, alpha);
  bmm_impl(out, batch1, batch2, beta, alpha, false);
  return out;
}

at::Tensor& vk_baddbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                     const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_baddbmm_",
                    {{&self, "self"}, {&batch1, "batch1"}, {&batch2, "batch2"}});
  InPlace<at::meta::structured_baddbmm> op(self);
  op.meta(self, batch1, batch2, beta, alpha);
  bmm_impl(self, batch1, batch2, beta, alpha, false);
  return self;
}

// ---------------------------------------------------------------- mv / addmv

// addmv_out_cpu: result = beta * self + alpha * mat @ vec.
void addmv_impl(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                const c10::Scalar& beta, const c10::Scalar& alpha, const at::Tensor& result) {
  const auto self_ = at::expand_size(self, {mat.size(0)});
  if (result.numel() == 0) return;
  if (result.is_complex()) {
    return complex_addbmm_into(result.unsqueeze(1), self_->unsqueeze(1), mat, vec.unsqueeze(1),
                               beta, alpha);
  }
  const char* name = "addmv";
  const int64_t k = mat.size(1);
  if (k != 0 && mat.scalar_type() == at::kBool) raise_not_implemented_for("addmv_impl_cpu", at::kBool);
  kernels::Gemm g = gemm_for(result, beta, alpha, name);
  g.m = result.size(0);
  g.n = 1;
  g.k = k;
  g.c = column(result, name);
  if (k > 0) {
    g.a = matrix(mat, name);
    g.b = column(vec, name);
  }
  const at::Tensor bias = bias_operand(result, *self_, beta);
  if (bias.defined()) g.bias = column(bias, name);
  run_gemm(result, mat, vec, g, name);
}

at::Tensor vk_addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                 const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_addmv", {{&self, "self"}, {&mat, "mat"}, {&vec, "vec"}});
  Functional<at::meta::structured_addmv> op;
  op.meta(self, mat, vec, beta, alpha);
  addmv_impl(self, mat, vec, beta, alpha, op.out_);
  return std::move(op.out_);
}

at::Tensor& vk_addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  check_same_device("wrapper_PrivateUse1_out_addmv_out",
                    {{&out, "out"}, {&self, "self"}, {&mat, "mat"}, {&vec, "vec"}});
  Out<at::meta::structured_addmv> op(out);
  op.meta(self, mat, vec, beta, alpha);
  addmv_impl(self, mat, vec, beta, alpha, out);
  return out;
}

at::Tensor& vk_addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                   const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_same_device("wrapper_PrivateUse1_addmv_", {{&self, "self"}, {&mat, "mat"}, {&vec, "vec"}});
  InPlace<at::meta::structured_addmv> op(self);
  op.meta(self, mat, vec, beta, alpha);
  addmv_impl(self, mat, vec, beta, alpha, self);
  return self;
}

// at::native::mv: an uninitialized result, then addmv_ with beta = 0.
at::Tensor vk_mv(const at::Tensor& self, const at::Tensor& vec) {
  at::Tensor result = at::empty({self.size(0)}, vec.options());
  return vk_addmv_(result, self, vec, 0, 1);
}

// at::native::mv_out: the input of addmv must have the right size even though beta == 0.
at::Tensor& vk_mv_out(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
  if (out.dim() > 1 || (out.numel() != self.size(0) || out.numel() != 1)) {
    const at::Tensor self_addmv = at::empty({self.size(0)}, vec.options());
    return vk_addmv_out(self_addmv, self, vec, 0, 1, out);
  }
  return vk_addmv_out(out, self, vec, 0, 1, out);
}

// ---------------------------------------------------------------- dot

void dot_check(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", self.scalar_type(),
              " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [",
              self.numel(), "] and src [", other.numel(),
              "] to have the same number of elements, but got ", self.numel(), " and ",
              other.numel(), " elements respectively");
}

// result (0-dim) = self . other
void dot_impl(const at::Tensor& self, const at::Tensor& other, const at::Tensor& result) {
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("dot", at::kBool);
  const char* name = "dot";
  kernels::Gemm g = gemm_for(result, 0, 1, name);
  g.m = g.n = 1;
  g.k = self.numel();
  g.c = column(result, name);
  if (g.k > 0) {
    g.a = row(self, name);
    g.b = column(other, name);
  }
  run_gemm(result, self, other, g, name);
}

at::Tensor vk_dot(const at::Tensor& self, const at::Tensor& other) {
  check_same_device("wrapper_PrivateUse1_dot", {{&self, "self"}, {&other, "tensor"}});
  dot_check(self, other);
  if (self.is_complex()) return complex_dot(self, other);
  at::Tensor result = at::empty({}, self.options());
  dot_impl(self, other, result);
  return result;
}

// at::native::vdot: dot for real dtypes, dot(conj(self), other) for complex ones.
at::Tensor vk_vdot(const at::Tensor& self, const at::Tensor& other) {
  check_same_device("wrapper_PrivateUse1_vdot", {{&self, "self"}, {&other, "other"}});
  if (self.is_complex()) {
    dot_check(self, other);
    return complex_dot(self.conj(), other);
  }
  return vk_dot(self, other);
}

// at::native::dot_out (CompositeExplicitAutograd), computed straight into `out`.
at::Tensor& vk_dot_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const auto output_device = out.device();
  const auto input1_device = self.device();
  const auto input2_device = other.device();
  TORCH_CHECK((output_device == input1_device) && (input1_device == input2_device),
              "dot: Expected the output and input tensors to be on the "
              "same device, but got the output tensor on ",
              output_device, ", the 'input' tensor on ", input1_device,
              ", and the 'other' tensor on ", input2_device);
  dot_check(self, other);
  at::native::resize_output(out, {});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "result dtype ", out.scalar_type(),
              " does not match input dtype ", self.scalar_type());
  if (self.is_complex()) return out.copy_(complex_dot(self, other));
  dot_impl(self, other, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm", TORCH_FN(vk_mm));
  m.impl("mm.out", TORCH_FN(vk_mm_out));
  m.impl("addmm", TORCH_FN(vk_addmm));
  m.impl("addmm.out", TORCH_FN(vk_addmm_out));
  m.impl("addmm_", TORCH_FN(vk_addmm_));
  m.impl("bmm", TORCH_FN(vk_bmm));
  m.impl("bmm.out", TORCH_FN(vk_bmm_out));
  m.impl("baddbmm", TORCH_FN(vk_baddbmm));
  m.impl("baddbmm.out", TORCH_FN(vk_baddbmm_out));
  m.impl("baddbmm_", TORCH_FN(vk_baddbmm_));
  m.impl("mv", TORCH_FN(vk_mv));
  m.impl("mv.out", TORCH_FN(vk_mv_out));
  m.impl("addmv", TORCH_FN(vk_addmv));
  m.impl("addmv.out", TORCH_FN(vk_addmv_out));
  m.impl("addmv_", TORCH_FN(vk_addmv_));
  m.impl("dot", TORCH_FN(vk_dot));
  m.impl("dot.out", TORCH_FN(vk_dot_out));
  m.impl("vdot", TORCH_FN(vk_vdot));
}

}  // namespace tvk::aten
