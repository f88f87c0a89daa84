// Complex storage on vk: the helpers of complex_storage.h, the views between complex and real
// (view_as_real, view_as_complex), conj_physical (_conj_physical, conj_physical_,
// conj_physical.out: the complex.comp kernel), the element-wise rows with a complex operand
// (launch_complex: one complex.comp dispatch over a TensorIterator, with the CPU's results,
// for mul / div / pow / exp / log / sqrt / the trigonometric and hyperbolic functions ... ;
// composites over the real views for add / sub / neg / eq / ne / isnan, complex x real
// scaling, where, masked_fill_), and the complex matmul family (mm / bmm / dot: one real GEMM
// on the real views). pow with scalars, cumsum / cumprod and prod are in ops_complex_math.cpp.
// resolve_conj / resolve_neg / real / imag / _conj / _neg_view are PyTorch composites over
// these and copy_.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <string_view>
#include <utility>

#include "aten/complex_storage.h"
#include "aten/vk_common.h"
#include "kernels/complex.h"
#include "runtime/stream.h"

namespace tvk::aten {

void check_storage_dtype(at::ScalarType type, const char* op) {
  if (type == at::kComplexFloat) return;
  if (type == at::kUInt64) return;  // bits only (hash_tensor's result): copies and views
  if (type == at::kComplexDouble) {
    TORCH_CHECK_TYPE(is_supported_dtype(at::kDouble, -1), "\"", op,
                     "\" not implemented for 'ComplexDouble' on vk: this device has no "
                     "shaderFloat64 support (use complex64, or run the op on the CPU)");
    return;
  }
  vk_dtype(type, op);
}

at::Tensor raw_alias(const at::Tensor& t) {
  c10::DispatchKeySet keys = t.key_set();
  keys = keys.remove(c10::DispatchKey::Conjugate).remove(c10::DispatchKey::Negative);
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(t.storage()), keys,
                                                              t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return alias;
}

at::Tensor raw_real_view(const at::Tensor& t) { return at::view_as_real(raw_alias(t)); }

void copy_complex(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return;
  const at::Tensor s = raw_alias(src.expand(dst.sizes()));
  const at::Tensor d = raw_alias(dst);
  const bool flip_sign = src.is_neg() != dst.is_neg();
  if (src.is_complex() && dst.is_complex()) {
    const at::Tensor dr = at::view_as_real(d);
    dr.copy_(at::view_as_real(s), non_blocking);
    if (flip_sign) dr.neg_();
    if (src.is_conj() != dst.is_conj()) dr.select(-1, 1).neg_();
  } else if (!src.is_complex() && !dst.is_complex()) {  // real with a negative bit
    d.copy_(s, non_blocking);
    if (flip_sign) d.neg_();
  } else if (dst.is_complex()) {  // real -> complex
    const at::Tensor dr = at::view_as_real(d);
    dr.select(-1, 0).copy_(s, non_blocking);
    dr.select(-1, 1).zero_();
    if (flip_sign) dr.select(-1, 0).neg_();
  } else {  // complex -> real
    TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
    d.copy_(at::view_as_real(s).select(-1, 0), non_blocking);
    if (flip_sign) d.neg_();
  }
}

void fill_complex(const at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) return;
  c10::complex<double> v = value.toComplexDouble();
  if (self.is_conj()) v = std::conj(v);
  if (self.is_neg()) v = -v;
  if (self.scalar_type() == at::kComplexFloat) (void)value.to<c10::complex<float>>();  // range check
  const at::Tensor r = raw_real_view(self);
  r.select(-1, 0).fill_(v.real());
  r.select(-1, 1).fill_(v.imag());
}

namespace {

// The common complex dtype and shape of (self, other); out allocated or checked / resized.
// Returns the operands as resolved complex vk tensors expanded to the shape.
std::pair<at::Tensor, at::Tensor> complex_operands(at::Tensor& out, const at::Tensor& self,
                                                   const at::Tensor& other, const char* op) {
  const at::ScalarType type = at::result_type(self, other);
  TORCH_CHECK_TYPE(c10::isComplexType(type), "\"", op, "\": expected a complex result type");
  check_storage_dtype(type, op);
  const at::Device device = self.device().is_privateuseone() ? self.device() : other.device();
  const auto shape = at::infer_size(self.sizes(), other.sizes());
  if (!out.defined()) {
    out = at::empty(shape, self.options().dtype(type).device(device));
  } else {
    TORCH_CHECK(c10::canCast(type, out.scalar_type()), "result type ", type,
                " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(out, shape);
  }
  auto prep = [&](const at::Tensor& t) {
    at::Tensor c = t.to(device, out.scalar_type());
    return c.resolve_conj().resolve_neg().expand(shape);
  };
  return {prep(self), prep(other)};
}

}  // namespace

at::Tensor& complex_add(at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                        const at::Scalar& alpha, bool subtract) {
  TORCH_CHECK(!alpha.isComplex(), "torch-vk: complex alpha is not supported");
  TORCH_CHECK(!out.defined() || out.is_complex(), "result type ", at::result_type(self, other),
              " can't be cast to the desired output type ", out.scalar_type());
  auto [a, b] = complex_operands(out, self, other, subtract ? "sub" : "add");
  if (out.numel() == 0) return out;
  at::Tensor r = raw_real_view(out);
  if (subtract) at::sub_out(r, at::view_as_real(a), at::view_as_real(b), alpha);
  else at::add_out(r, at::view_as_real(a), at::view_as_real(b), alpha);
  if (out.is_conj()) r.select(-1, 1).neg_();
  if (out.is_neg()) r.neg_();
  return out;
}

// A real factor that scales both planes of a complex tensor's real view: a 0-dim CPU tensor (a
// Python number) stays on the host, so the kernel takes it as a push constant (no upload, which
// keeps such graphs capturable); anything else moves to `device` with a trailing dim of 1.
at::Tensor plane_factor(const at::Tensor& real, at::Device device, at::ScalarType complex_type) {
  const at::ScalarType real_type = c10::toRealValueType(complex_type);
  if (real.device().is_cpu() && real.dim() == 0) return real.to(real_type);
  return real.to(device, real_type).unsqueeze(-1);
}

at::Tensor& complex_mul(at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(!out.defined() || out.is_complex(), "result type ", at::result_type(self, other),
              " can't be cast to the desired output type ", out.scalar_type());
  // complex x real: scale both planes by the real factor (one dispatch).
  const at::Tensor* real_side = !self.is_complex() ? &self : !other.is_complex() ? &other : nullptr;
  const at::Tensor& complex_side = real_side == &self ? other : self;
  if (real_side != nullptr) {
    const at::ScalarType type = at::result_type(self, other);
    check_storage_dtype(type, "mul");
    const auto shape = at::infer_size(self.sizes(), other.sizes());
    const at::Device device = complex_side.device();
    at::Tensor c = complex_side.to(device, type).resolve_conj().resolve_neg();
    at::Tensor prod = at::view_as_real(c) * plane_factor(*real_side, device, type);
    at::Tensor result = at::view_as_complex(prod);
    if (!out.defined()) {
      out = result.expand(shape).contiguous();
    } else {
      at::native::resize_output(out, shape);
      out.copy_(result);
    }
    return out;
  }
  auto [a, b] = complex_operands(out, self, other, "mul");
  if (out.numel() == 0) return out;
  const at::Tensor ar = at::view_as_real(a), br = at::view_as_real(b);
  const at::Tensor are = ar.select(-1, 0), aim = ar.select(-1, 1);
  const at::Tensor bre = br.select(-1, 0), bim = br.select(-1, 1);
  // Computed into temporaries first: out may alias a or b (in-place mul).
  const at::Tensor re = are * bre - aim * bim;
  const at::Tensor im = are * bim + aim * bre;
  out.copy_(at::view_as_complex(at::stack({re, im}, -1)));
  return out;
}


// ---------------------------------------------------------------- complex kernels

void launch_complex(kernels::ComplexOp op, at::TensorIteratorBase& iter, at::ScalarType compute,
                    bool conj_a, bool conj_b) {
  if (iter.numel() == 0) return;
  // fp64 math for complex128, and also where a complex128 / float64 operand lives in device
  // memory (the fp32 variant cannot load or store fp64): more precise than the CPU's
  // complex64 math followed by a cast, never less.
  bool f64 = compute == at::kComplexDouble;
  for (int i = 0; i < iter.ntensors(); ++i) {
    const at::ScalarType t = iter.dtype(i);
    if ((t == at::kComplexDouble || t == at::kDouble) && !iter.is_cpu_scalar(i)) f64 = true;
  }
  check_storage_dtype(f64 ? at::kComplexDouble : at::kComplexFloat, "complex");
  const int inputs = kernels::complex_op_binary(op) ? 2 : 1;
  TORCH_INTERNAL_ASSERT(iter.ntensors() >= 1 + inputs);
  const bool conj[2] = {conj_a, conj_b};
  tvk::Stream& stream = current_stream(iter.device(0).index());
  for (auto&& sub : iter.with_32bit_indexing()) {
    kernels::ComplexElementwise p;
    p.op = op;
    p.kind = f64 ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    p.numel = sub.numel();
    TORCH_CHECK(sub.ndim() <= kernels::kMaxDims, "torch-vk: complex op on a tensor with ",
                sub.ndim(), " non-collapsible dimensions is not supported");
    p.geometry.ndim = static_cast<int32_t>(sub.ndim());
    for (int d = 0; d < sub.ndim(); ++d) p.geometry.sizes[d] = sub.shape()[d];
    // Strides in scalars: the real value type's for complex operands, the element for real.
    auto strides_of = [&](int i, at::ScalarType scalar) {
      const int64_t size = static_cast<int64_t>(c10::elementSize(scalar));
      const auto strides = sub.strides(i);
      for (int d = 0; d < sub.ndim(); ++d) p.geometry.strides[i][d] = strides[d] / size;
    };
    const at::ScalarType out_scalar = c10::toRealValueType(sub.dtype(0));
    p.out = {reinterpret_cast<uint64_t>(sub.data_ptr(0)), vk_dtype(out_scalar, "complex")};
    strides_of(0, out_scalar);
    kernels::ComplexInput* ins[2] = {&p.a, &p.b};
    for (int i = 0; i < inputs; ++i) {
      kernels::ComplexInput& in = *ins[i];
      const int t = i + 1;
      const at::ScalarType type = sub.dtype(t);
      if (sub.is_cpu_scalar(t)) {  // a Python number or 0-dim CPU tensor: a host value
        const c10::complex<double> v = sub.scalar_value<c10::complex<double>>(t);
        in.host = true;
        in.value[0] = v.real();
        in.value[1] = v.imag();
        continue;
      }
      const at::ScalarType scalar = c10::toRealValueType(type);
      in.data = {reinterpret_cast<uint64_t>(sub.data_ptr(t)), vk_dtype(scalar, "complex")};
      in.real = !c10::isComplexType(type);
      in.conj = conj[i] && !in.real;
      strides_of(t, scalar);
    }
    translate_errors([&] { kernels::complex_elementwise(stream, p); });
  }
}

void run_complex_kernel(kernels::ComplexOp op, const at::Tensor& out, const at::Tensor& a,
                        const at::Tensor* b) {
  if (out.numel() == 0) return;
  if (out.is_conj() || out.is_neg()) {  // computed plainly, then copied through the bits
    at::Tensor tmp = at::empty(out.sizes(), out.options());
    run_complex_kernel(op, tmp, a, b);
    out.copy_(tmp);
    return;
  }
  const bool binary = kernels::complex_op_binary(op);
  TORCH_INTERNAL_ASSERT(binary == (b != nullptr));
  const at::Tensor ra = raw_alias(a.resolve_neg());
  const at::Tensor rb = binary ? raw_alias(b->resolve_neg()) : at::Tensor();
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).resize_outputs(false).add_output(out).add_const_input(ra);
  if (binary) config.add_const_input(rb);
  at::TensorIterator iter = config.build();
  const bool f64 = out.scalar_type() == at::kComplexDouble || out.scalar_type() == at::kDouble ||
                   a.scalar_type() == at::kComplexDouble ||
                   (binary && b->scalar_type() == at::kComplexDouble);
  launch_complex(op, iter, f64 ? at::kComplexDouble : at::kComplexFloat, a.is_conj(),
                 binary && b->is_conj());
}

namespace {

// `result` into `out` (allocated when undefined), PyTorch's out= resize rules.
at::Tensor& assign(at::Tensor& out, const at::Tensor& result) {
  if (!out.defined()) {
    out = result;
  } else {
    at::native::resize_output(out, result.sizes());
    out.copy_(result);
  }
  return out;
}

// `t` as a resolved tensor of complex dtype `type` on `device` (wrapped CPU numbers move).
at::Tensor as_complex_on(const at::Tensor& t, at::Device device, at::ScalarType type) {
  return t.to(device, type).resolve_conj().resolve_neg();
}

// Element-wise kernels with a complex output, by the kernel names of the op rows
// (ops_elementwise.cpp, ops_activation.cpp).
constexpr std::pair<std::string_view, kernels::ComplexOp> kUnaryKernels[] = {
    {"exp", kernels::ComplexOp::Exp},       {"log", kernels::ComplexOp::Log},
    {"sqrt", kernels::ComplexOp::Sqrt},     {"reciprocal", kernels::ComplexOp::Reciprocal},
    {"sgn", kernels::ComplexOp::Sgn},       {"sin", kernels::ComplexOp::Sin},
    {"cos", kernels::ComplexOp::Cos},       {"tan", kernels::ComplexOp::Tan},
    {"asin", kernels::ComplexOp::Asin},     {"acos", kernels::ComplexOp::Acos},
    {"atan", kernels::ComplexOp::Atan},     {"sinh", kernels::ComplexOp::Sinh},
    {"cosh", kernels::ComplexOp::Cosh},     {"tanh", kernels::ComplexOp::Tanh},
    {"asinh", kernels::ComplexOp::Asinh},   {"acosh", kernels::ComplexOp::Acosh},
    {"atanh", kernels::ComplexOp::Atanh},   {"log2", kernels::ComplexOp::Log2},
    {"log10", kernels::ComplexOp::Log10},   {"log1p", kernels::ComplexOp::Log1p},
    {"expm1", kernels::ComplexOp::Expm1},   {"rsqrt", kernels::ComplexOp::Rsqrt},
    {"sigmoid", kernels::ComplexOp::Sigmoid}, {"exp2", kernels::ComplexOp::Exp2}};
constexpr std::pair<std::string_view, kernels::ComplexOp> kBinaryKernels[] = {
    {"pow", kernels::ComplexOp::Pow},
    {"tanh_backward", kernels::ComplexOp::TanhBackward},
    {"sigmoid_backward", kernels::ComplexOp::SigmoidBackward}};

}  // namespace

bool complex_elementwise_iter(const char* kernel, at::TensorIteratorBase& iter) {
  const std::string_view k(kernel);
  const at::ScalarType type = iter.common_dtype();
  if (!c10::isComplexType(type)) return false;
  for (const auto& [name, op] : kBinaryKernels) {
    if (k != name) continue;
    launch_complex(op, iter, type, false, false);
    return true;
  }
  return false;
}

bool complex_elementwise(const char* kernel, at::Tensor& out, const at::Tensor& a,
                         const at::Tensor* b) {
  const std::string_view k(kernel);
  const at::Device device = a.device().is_privateuseone() || b == nullptr ? a.device() : b->device();
  if (b == nullptr) {
    if (!a.is_complex()) return false;
    for (const auto& [name, op] : kUnaryKernels) {
      if (k != name) continue;
      check_storage_dtype(a.scalar_type(), kernel);
      // The CPU's iterator: the output dtype is the input's (out= must take it safely, an
      // in-place op keeps its dtype); conj / neg bits were resolved by the dispatcher.
      at::TensorIterator iter = at::TensorIteratorConfig()
                                    .set_check_mem_overlap(true)
                                    .add_output(out)
                                    .add_const_input(a)
                                    .promote_inputs_to_common_dtype(true)
                                    .cast_common_dtype_to_outputs(true)
                                    .enforce_safe_casting_to_output(true)
                                    .build();
      launch_complex(op, iter, iter.common_dtype(), a.is_conj(), false);
      if (!out.defined()) out = iter.output();
      return true;
    }
    const std::pair<std::string_view, kernels::ComplexOp> real_kernels[] = {
        {"abs", kernels::ComplexOp::Abs}, {"angle", kernels::ComplexOp::Angle}};
    for (const auto& [name, op] : real_kernels) {
      if (k != name) continue;
      check_storage_dtype(a.scalar_type(), kernel);
      const at::ScalarType out_type = c10::toRealValueType(a.scalar_type());
      const at::Tensor src = a.to(device);  // bits kept: the kernel reads the conj bit
      if (out.defined() && out.scalar_type() == out_type && out.device() == device) {
        at::native::resize_output(out, src.sizes());
        run_complex_kernel(op, out, src, nullptr);
      } else {
        at::Tensor result = at::empty(src.sizes(), src.options().dtype(out_type));
        run_complex_kernel(op, result, src, nullptr);
        assign(out, result);
      }
      return true;
    }
    const at::Tensor x = as_complex_on(a, device, a.scalar_type());
    const at::Tensor xr = at::view_as_real(x);
    if (k == "neg") {
      assign(out, at::view_as_complex(-xr));
    } else if (k == "isnan") {
      assign(out, at::isnan(xr.select(-1, 0)).logical_or_(at::isnan(xr.select(-1, 1))));
    } else {
      return false;
    }
    return true;
  }
  for (const auto& [name, op] : kBinaryKernels) {
    if (k != name) continue;
    // The CPU's binary_op iterator: result_type promotion, broadcasting, the safe-cast check
    // of out=; real operands and CPU scalars are read as they are (no conversion copies).
    at::TensorIterator iter = at::TensorIterator::binary_op(out, a, *b);
    if (!c10::isComplexType(iter.common_dtype())) return false;
    launch_complex(op, iter, iter.common_dtype(), a.is_conj(), b->is_conj());
    if (!out.defined()) out = iter.output();
    return true;
  }
  const bool compare = k == "eq" || k == "ne";
  if (!(compare || k == "div" || k == "mul" || k == "add" || k == "sub")) return false;
  const at::ScalarType type = at::result_type(a, *b);
  if (!c10::isComplexType(type)) return false;
  check_storage_dtype(type, kernel);
  // complex x complex (and real / complex): the kernel; complex x real mul and complex / real
  // scale the planes below (one dispatch).
  if ((k == "mul" && a.is_complex() && b->is_complex()) || (k == "div" && b->is_complex())) {
    const at::Tensor x = a.to(device, type), y = b->to(device, type);  // conj bits kept
    const auto shape = at::infer_size(x.sizes(), y.sizes());
    const kernels::ComplexOp op = k == "mul" ? kernels::ComplexOp::Mul : kernels::ComplexOp::Div;
    if (out.defined() && out.scalar_type() == type && out.device() == device) {
      at::native::resize_output(out, shape);
      run_complex_kernel(op, out, x, &y);  // TensorIterator: full aliasing (in place) is fine
    } else {
      at::Tensor result = at::empty(shape, x.options().dtype(type));
      run_complex_kernel(op, result, x, &y);
      assign(out, result);
    }
    return true;
  }
  if (k == "mul") {
    complex_mul(out, a, *b);
    return true;
  }
  if (k == "add" || k == "sub") {
    complex_add(out, a, *b, 1, k == "sub");
    return true;
  }
  const at::Tensor x = as_complex_on(a, device, type);
  if (k == "div" && !b->is_complex()) {  // both planes by the real divisor
    assign(out, at::view_as_complex((at::view_as_real(x) / plane_factor(*b, device, type)).contiguous()));
    return true;
  }
  TORCH_INTERNAL_ASSERT(compare);
  const at::Tensor y = as_complex_on(*b, device, type);
  const auto shape = at::infer_size(x.sizes(), y.sizes());
  const at::Tensor xe = x.expand(shape), ye = y.expand(shape);
  {
    const at::Tensor xr = at::view_as_real(xe), yr = at::view_as_real(ye);
    at::Tensor same = at::eq(xr.select(-1, 0), yr.select(-1, 0))
                          .logical_and_(at::eq(xr.select(-1, 1), yr.select(-1, 1)));
    assign(out, k == "eq" ? same : same.logical_not_());
    return true;
  }
}

// ---------------------------------------------------------------- complex matmul

namespace {

// prod[b] = A[b] @ B[b] for complex (batch, m, k) A and (batch, k, n) B as ONE real bmm on the
// native GEMM: A's real view flattened to (batch, m, 2k) (the stored bytes; A's conjugate /
// negative bits are folded into the right-hand matrix) times the real 2k x 2n representation
//   Bmat[(kk, p), (nn, q)]:  p=0: (re b, im b),  p=1: (-s im b, s re b)   (s = -1 when A is conj)
// whose product rows are (re c, im c) interleaved: the (batch, m, n) complex result, contiguous.
// Same real flop count as 4 real products, but one GEMM call instead of four.
at::Tensor complex_bmm_product(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor stored_a = raw_alias(a);
  if (stored_a.size(-1) > 1 && stored_a.stride(-1) != 1) stored_a = stored_a.contiguous();
  const at::Tensor a_flat = at::view_as_real(stored_a).flatten(-2);  // (batch, m, 2k)
  const double s_conj = a.is_conj() ? -1.0 : 1.0;
  const double s_neg = a.is_neg() ? -1.0 : 1.0;
  const at::Tensor bl = at::view_as_real(b.resolve_conj().resolve_neg());  // (batch, k, n, 2)
  const at::Tensor br = bl.select(-1, 0), bi = bl.select(-1, 1);
  const at::Tensor row_re = at::stack({br * s_neg, bi * s_neg}, -1);                    // p = 0
  const at::Tensor row_im = at::stack({bi * (-s_conj * s_neg), br * (s_conj * s_neg)}, -1);  // p = 1
  const int64_t batch = b.size(0), k = b.size(1), n = b.size(2);
  const at::Tensor b_mat = at::stack({row_re, row_im}, 2).reshape({batch, 2 * k, 2 * n});
  const at::Tensor prod = at::bmm(a_flat, b_mat);  // (batch, m, 2n) real
  return at::view_as_complex(prod.view({batch, a.size(1), n, 2}));
}

bool is_scalar_zero(const at::Scalar& s) {
  return s.isComplex() ? s.toComplexDouble() == c10::complex<double>(0, 0) : s.toDouble() == 0;
}
bool is_scalar_one(const at::Scalar& s) {
  return s.isComplex() ? s.toComplexDouble() == c10::complex<double>(1, 0) : s.toDouble() == 1;
}

}  // namespace

void complex_addbmm_into(const at::Tensor& result, const at::Tensor& bias, const at::Tensor& a,
                         const at::Tensor& b, const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              a.dtype(), " != ", b.dtype());
  check_storage_dtype(result.scalar_type(), "matmul");
  if (result.numel() == 0) return;
  const bool batched = a.dim() == 3;
  const at::Tensor a3 = batched ? a : a.unsqueeze(0);
  const at::Tensor b3 = batched ? b : b.unsqueeze(0);
  at::Tensor prod;
  if (a3.size(2) == 0) {
    prod = at::zeros({a3.size(0), a3.size(1), b3.size(2)}, result.options().dtype(a.scalar_type()));
  } else {
    prod = complex_bmm_product(a3, b3);
  }
  if (!batched) prod = prod.squeeze(0);
  if (!is_scalar_one(alpha)) prod = prod * alpha;
  // beta == 0: the bias is not read (NaN / inf in it do not propagate), as on the CPU.
  if (!is_scalar_zero(beta) && bias.defined()) prod = prod + bias * beta;
  result.copy_(prod);  // prod is a temporary: result may alias bias
}

at::Tensor& complex_where(const at::Tensor& condition, const at::Tensor& self,
                          const at::Tensor& other, at::Tensor& out) {
  const at::ScalarType type = at::result_type(self, other);
  check_storage_dtype(type, "where");
  const at::Device device = condition.device().is_privateuseone() ? condition.device()
                            : self.device().is_privateuseone()    ? self.device()
                                                                  : other.device();
  const at::Tensor x = as_complex_on(self, device, type), y = as_complex_on(other, device, type);
  const auto shape = at::infer_size(at::infer_size(condition.sizes(), x.sizes()), y.sizes());
  if (!out.defined()) out = at::empty(shape, x.options());
  else at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  // A trailing dim of 1 on the condition broadcasts it over (re, im).
  const at::Tensor cond = condition.to(device).unsqueeze(-1);
  with_plain_output(out, [&](const at::Tensor& dst) {
    at::Tensor dst_real = raw_real_view(dst);
    at::where_out(dst_real, cond, at::view_as_real(x), at::view_as_real(y));
  });
  return out;
}

at::Tensor& complex_masked_fill_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  check_storage_dtype(self.scalar_type(), "masked_fill_");
  if (value.device().is_cpu()) {
    c10::complex<double> v = value.item().toComplexDouble();
    if (self.is_conj()) v = std::conj(v);
    if (self.is_neg()) v = -v;
    const at::Tensor r = raw_real_view(self);
    r.select(-1, 0).masked_fill_(mask, v.real());
    r.select(-1, 1).masked_fill_(mask, v.imag());
    return self;
  }
  return self.copy_(at::where(mask, value.to(self.scalar_type()), self));
}

at::Tensor complex_dot(const at::Tensor& self, const at::Tensor& other) {
  check_storage_dtype(self.scalar_type(), "dot");
  const int64_t k = self.numel();
  if (k == 0) return at::zeros({}, self.options().dtype(self.scalar_type()));
  // (1, 1, k) @ (1, k, 1): the bits of self are folded into the product, other's resolved.
  const at::Tensor prod = complex_bmm_product(self.view({1, 1, k}), other.view({1, k, 1}));
  return prod.reshape({});
}

namespace {

void check_complex_parts(const at::Tensor& a, const at::Tensor& b, const char* op) {
  const auto ta = a.scalar_type(), tb = b.scalar_type();
  TORCH_CHECK((ta == at::kFloat || ta == at::kDouble || ta == at::kHalf) && ta == tb,
              "Expected both inputs to be Half, Float or Double tensors but got ", ta, " and ", tb);
}

// torch.complex(real, imag): the two planes of the output's real view.
at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  check_complex_parts(real, imag, "complex");
  TORCH_CHECK(out.scalar_type() == c10::toComplexType(real.scalar_type()),
              "Expected object of scalar type ", c10::toComplexType(real.scalar_type()),
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
  check_storage_dtype(out.scalar_type(), "complex");
  const auto shape = at::infer_size(real.sizes(), imag.sizes());
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  const at::Tensor r = raw_real_view(out);
  r.select(-1, 0).copy_(real.expand(shape));
  r.select(-1, 1).copy_(imag.expand(shape));
  if (out.is_conj()) r.select(-1, 1).neg_();
  if (out.is_neg()) r.neg_();
  return out;
}

// torch.polar(abs, angle) = abs * (cos(angle) + i sin(angle)).
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  check_complex_parts(abs, angle, "polar");
  return complex_out(abs * at::cos(angle), abs * at::sin(angle), out);
}

}  // namespace

namespace {

at::Tensor view_as_real(const at::Tensor& self) { return at::native::view_as_real(self); }

at::Tensor view_as_complex(const at::Tensor& self) { return at::native::view_as_complex(self); }

// out = conj(self) materialized (no conjugate bit). Real tensors: a copy.
at::Tensor& conj_physical_out(const at::Tensor& self, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "conj_physical: expected out dtype ",
              self.scalar_type(), ", got ", out.scalar_type());
  if (!out.is_complex() || out.numel() == 0) return out.copy_(self);
  run_complex_kernel(kernels::ComplexOp::Conj, out, self, nullptr);
  return out;
}

at::Tensor conj_physical(const at::Tensor& self) {
  at::Tensor out = at::empty_like(self);
  if (!self.is_complex()) return out.copy_(self);
  return conj_physical_out(self, out);
}

at::Tensor& conj_physical_(at::Tensor& self) {
  if (!self.is_complex() || self.numel() == 0) return self;
  // On the stored bytes: conj of the logical value is conj of the stored one either way.
  raw_real_view(self).select(-1, 1).neg_();
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("view_as_real", TORCH_FN(view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("_conj_physical", TORCH_FN(conj_physical));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_out));
  m.impl("conj_physical_", TORCH_FN(conj_physical_));
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
}

}  // namespace tvk::aten

namespace tvk::aten {
// copy_ of a tensor with the conjugate / negative bit reaches _copy_from (copy_ itself is a
// fallthrough for those keys). PyTorch's math-bit fallback would materialize the source with
// clone(), which calls copy_ -> _copy_from again: endless recursion. copy_complex honours
// the bits itself, so the bits pass through to the vk kernel.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
}  // namespace tvk::aten
