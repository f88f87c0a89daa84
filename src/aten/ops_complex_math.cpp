// Complex math on vk beyond the element-wise rows of ops_complex.cpp: pow with a scalar
// exponent or base (the CPU's fast paths), cumsum / cumprod, prod (full and along a dim).
// The hooks that call these live in ops_elementwise.cpp (pow overloads), ops_softmax.cpp
// (launch_scan) and ops_reduce.cpp (prod); see aten/complex_storage.h for the contracts.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/BinaryOps.h>
#include <c10/core/DeviceGuard.h>

#include "aten/complex_storage.h"
#include "aten/vk_common.h"
#include "kernels/complex.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::aten {

// ---------------------------------------------------------------- pow

bool complex_pow_tensor_scalar(at::Tensor& out, const at::Tensor& base, const at::Scalar& exp) {
  // The CPU's meta function: result type of (base, exp), out= must take it safely.
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(exp);
  at::TensorIterator iter = at::TensorIterator::binary_op(out, base, wrapped);
  const at::ScalarType type = iter.common_dtype();
  if (!c10::isComplexType(type)) return false;
  check_storage_dtype(type, "pow");
  if (!out.defined()) out = iter.output();
  if (out.numel() == 0) return true;
  // pow_Tensor_Scalar_out: 0 -> ones, 1 -> a copy (before any kernel, NaN bases included).
  if (exp.equal(0.0) || exp.equal(false)) {
    out.fill_(1);
    return true;
  }
  if (exp.equal(1.0) || exp.equal(true)) {
    out.copy_(base);
    return true;
  }
  // pow_tensor_scalar_kernel's specializations, then pow_tensor_scalar_optimized_kernel's.
  const c10::complex<double> e = exp.toComplexDouble();
  kernels::ComplexOp op = kernels::ComplexOp::Pow;
  if (e.imag() == 0) {
    const double r = e.real();
    if (r == 0.5) op = kernels::ComplexOp::Sqrt;
    else if (r == -0.5) op = kernels::ComplexOp::Rsqrt;
    else if (r == -1.0) op = kernels::ComplexOp::Reciprocal;
    else if (r == 2.0) op = kernels::ComplexOp::Square;
    else if (r == 3.0) op = kernels::ComplexOp::Cube;
    else if (r == -2.0) op = kernels::ComplexOp::InvSquare;
  }
  launch_complex(op, iter, type, base.is_conj(), false);  // unary ops ignore the exponent
  return true;
}

bool complex_pow_scalar_tensor(at::Tensor& out, const at::Scalar& base, const at::Tensor& exp) {
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(base);
  if (base.equal(1.0)) {  // pow_out(Scalar, Tensor): ones, whatever the exponent
    at::TensorIterator iter = at::TensorIterator::binary_op(out, wrapped, exp);
    if (!c10::isComplexType(iter.common_dtype())) return false;
    if (!out.defined()) out = iter.output();
    out.fill_(1);
    return true;
  }
  return complex_elementwise("pow", out, wrapped, &exp);
}

// ---------------------------------------------------------------- cumsum / cumprod / prod

namespace {

// Index spaces of complex_rows, filled fastest dim first from the tensors' last dims.
struct RowsBuilder {
  kernels::Geometry rows, along;
  int64_t num_rows = 1, row_length = 1;

  static void push(kernels::Geometry& g, int64_t size, int64_t out_stride, int64_t in_stride,
                   const char* name) {
    if (size == 1) return;
    TORCH_CHECK(g.ndim < kernels::kMaxDims, "torch-vk: ", name, " over a tensor with more than ",
                kernels::kMaxDims, " non-trivial dimensions is not supported");
    g.sizes[g.ndim] = size;
    g.strides[0][g.ndim] = out_stride;
    g.strides[1][g.ndim] = in_stride;
    ++g.ndim;
  }
};

// Scalar strides of complex (x2) / real (x1) tensors.
int64_t scalar_unit(const at::Tensor& t) { return t.is_complex() ? 2 : 1; }

void run_rows(kernels::ComplexRowsOp op, const RowsBuilder& b, const at::Tensor& out,
              const at::Tensor& in, bool f64, const char* name) {
  kernels::ComplexRows p;
  p.op = op;
  p.kind = f64 ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  p.num_rows = b.num_rows;
  p.row_length = b.row_length;
  p.rows = b.rows;
  p.along = b.along;
  p.out = operand(raw_real_view(out), name);
  const at::Tensor src = in.is_complex() ? raw_real_view(in) : in;
  p.in.data = operand(src, name);
  p.in.real = !in.is_complex();
  p.in.conj = in.is_conj();
  const c10::DeviceGuard guard(out.device());
  tvk::Stream& stream = current_stream(out.device().index());
  translate_errors([&] { kernels::complex_rows(stream, p); });
}

}  // namespace

void complex_scan(bool product, const at::Tensor& self, int64_t dim, const at::Tensor& out) {
  if (out.numel() == 0) return;
  check_storage_dtype(out.scalar_type(), product ? "cumprod" : "cumsum");
  const at::Tensor src = (self.scalar_type() == out.scalar_type() ? self : self.to(out.scalar_type()))
                             .resolve_neg();
  if (src.dim() == 0) {  // a scan of one element is the element
    out.copy_(src);
    return;
  }
  dim = at::maybe_wrap_dim(dim, src.dim());
  with_plain_output(out, [&](const at::Tensor& dst) {
    if (!product) {
      // Two independent real scans (re, im) over the real view: exactly the complex sums.
      at::Tensor dst_real = raw_real_view(dst);
      at::cumsum_out(dst_real, at::view_as_real(src.resolve_conj()), dim);
      return;
    }
    RowsBuilder b;
    for (int64_t d = src.dim() - 1; d >= 0; --d) {
      const int64_t out_stride = dst.stride(d) * 2, in_stride = src.stride(d) * scalar_unit(src);
      if (d == dim) {
        RowsBuilder::push(b.along, src.size(d), out_stride, in_stride, "cumprod");
        b.row_length = src.size(d);
      } else {
        RowsBuilder::push(b.rows, src.size(d), out_stride, in_stride, "cumprod");
        b.num_rows *= src.size(d);
      }
    }
    // The CPU accumulates complex64 in complex<double>: so does the kernel where it can.
    const bool f64 = out.scalar_type() == at::kComplexDouble ||
                     (out.device().is_privateuseone() && is_supported_dtype(at::kDouble, -1));
    run_rows(kernels::ComplexRowsOp::CumProd, b, dst, src, f64, "cumprod");
  });
}

void complex_prod(const at::Tensor& self, const std::bitset<64>& mask, bool keepdim,
                  const at::Tensor& out) {
  if (out.numel() == 0) return;
  check_storage_dtype(out.scalar_type(), "prod");
  // The CPU converts the input to the output dtype first and accumulates in it.
  const at::Tensor src =
      (self.is_complex() && self.scalar_type() != out.scalar_type() ? self.to(out.scalar_type()) : self)
          .resolve_neg();
  with_plain_output(out, [&](const at::Tensor& dst) {
    RowsBuilder b;
    // Output dims map to input dims in order; without keepdim the reduced dims are absent.
    int64_t out_dim = dst.dim() - 1;
    for (int64_t d = src.dim() - 1; d >= 0; --d) {
      const int64_t in_stride = src.stride(d) * scalar_unit(src);
      if (mask[d]) {
        RowsBuilder::push(b.along, src.size(d), 0, in_stride, "prod");
        b.row_length *= src.size(d);
        if (keepdim) --out_dim;
        continue;
      }
      RowsBuilder::push(b.rows, src.size(d), dst.stride(out_dim) * 2, in_stride, "prod");
      b.num_rows *= src.size(d);
      --out_dim;
    }
    run_rows(kernels::ComplexRowsOp::Prod, b, dst, src, out.scalar_type() == at::kComplexDouble,
             "prod");
  });
}

}  // namespace tvk::aten
