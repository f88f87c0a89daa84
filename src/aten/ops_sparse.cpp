// Sparse COO tensors on vk: SparsePrivateUse1 kernels for sparse inputs, PrivateUse1 kernels for
// dense -> sparse. Every kernel is a composite of native vk ops (nonzero, unique, searchsorted,
// index_select, index_add_, element-wise), plus the family's one L2 kernel (CSR sparse @ dense,
// src/kernels/sparse.h); nothing is copied to the CPU.
//
// PyTorch 2.13 lets PrivateUse1 hold sparse COO tensors: a tensor created with layout kSparse on
// device "vk" is a SparseTensorImpl with dispatch key SparsePrivateUse1, and only the kernels
// registered under that key run (there is no boxed fallback for it: an op missing here raises
// PyTorch's own "Could not run 'aten::X' with arguments from the 'Sparsevk' backend").
//
// Device-agnostic parts of PyTorch's sparse implementation (SparseTensor.cpp: construction,
// metadata accessors, clone, resize, zero_, sparse -> sparse copy, _to_dense = zeros().add_(self),
// sum = values().sum()) are registered as they are: they only manipulate the SparseTensorImpl and
// call other ops, which then dispatch to vk. The kernels written here replace the CPU/CUDA ones
// (SparseTensorMath.cpp / cuda/SparseCUDATensorMath.cu):
//
//   _coalesce                 linear index over the sparse dims -> unique(sorted, inverse) ->
//                             index_add_ of the values into the unique slots (reads the unique
//                             count back on the host, as CUDA does)
//   _to_sparse (+ sparse_dim) dense -> COO: nonzero over the sparse dims (count read back, as
//                             CUDA does), values gathered with index(); the result is coalesced
//   add / add_ / add.out      dense + sparse: index_add_ of alpha * values into a copy of the
//                             dense operand; sparse + sparse: concatenated indices and values
//                             (uncoalesced, as CUDA)
//   sub / sub_, neg / neg_    add with -alpha; values negated
//   mul / mul_, div           sparse * or / 0-dim (scalar): values scaled, indices shared
//   mm / addmm (+ .out, _)    2-D sparse @ dense (mm also dense @ sparse, transposed): the CSR
//                             kernel of shaders/sparse.comp for floating dtypes, over the
//                             coalesced operand (as CUDA); integer dtypes: index_select of the
//                             dense rows named by the column indices, scaled by the values,
//                             index_add_ into the output rows
//   sparse_mask               self's values (dense: index(); sparse: coalesced, then a binary
//                             search of the mask's positions) at the mask's indices
// Backward of mm(sparse, dense) w.r.t. the dense operand is autograd's mat1.t().mm(grad), which
// runs on these kernels (transpose of a COO tensor is PyTorch's clone + index row swap); w.r.t.
// the sparse operand's values it goes through sparse_mask (a sparse grad masked by mat1).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_to_dense_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include "aten/vk_common.h"
#include "kernels/sparse.h"

namespace tvk::aten {
namespace {

// A new COO tensor on self's device from indices (sparse_dim, nnz) and values (nnz, dense...).
at::Tensor make_coo(int64_t sparse_dim, int64_t dense_dim, at::IntArrayRef sizes, const at::Tensor& indices,
                    const at::Tensor& values, bool coalesced) {
  return at::_sparse_coo_tensor_with_dims_and_tensors(
      sparse_dim, dense_dim, sizes, indices, values,
      values.options().layout(at::kSparse), coalesced);
}

// Row-major linear position of each nonzero over the first sparse_dim dims of `sizes`
// (int64, shape (nnz,)). Positions fit int64 because the sizes' product does.
at::Tensor linear_sparse_index(const at::Tensor& indices, at::IntArrayRef sizes, int64_t sparse_dim) {
  if (sparse_dim == 0) return at::zeros({indices.size(1)}, indices.options().dtype(at::kLong));
  at::Tensor linear = indices.select(0, sparse_dim - 1).to(at::kLong, /*non_blocking=*/false, /*copy=*/true);
  int64_t stride = sizes[sparse_dim - 1];
  for (int64_t d = sparse_dim - 2; d >= 0; --d) {
    linear.add_(indices.select(0, d), stride);
    stride *= sizes[d];
  }
  return linear;
}

// ---------------------------------------------------------------- coalesce

// CPU / CUDA _coalesce: sorted unique indices, values of duplicates summed. The result is a new
// tensor (never self) flagged coalesced.
at::Tensor sparse_coalesce(const at::Tensor& self) {
  TORCH_CHECK(self.is_sparse(), "coalesce: expected a sparse COO tensor");
  const int64_t sparse_dim = self.sparse_dim(), dense_dim = self.dense_dim(), nnz = self._nnz();
  const at::Tensor indices = self._indices(), values = self._values();
  if (nnz < 2) return make_coo(sparse_dim, dense_dim, self.sizes(), indices.clone(), values.clone(), true);

  const at::Tensor linear = linear_sparse_index(indices, self.sizes(), sparse_dim);
  auto [unique_linear, inverse, counts] =
      at::_unique2(linear, /*sorted=*/true, /*return_inverse=*/true, /*return_counts=*/false);
  const int64_t new_nnz = unique_linear.size(0);

  std::vector<int64_t> value_sizes = values.sizes().vec();
  value_sizes[0] = new_nnz;
  at::Tensor new_values = at::zeros(value_sizes, values.options());
  new_values.index_add_(0, inverse, values);

  at::Tensor new_indices = at::empty({sparse_dim, new_nnz}, indices.options());
  at::Tensor rest = unique_linear;
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    const int64_t size = self.size(d);
    new_indices.select(0, d).copy_(at::remainder(rest, size));
    if (d > 0) rest = at::div(rest, size, "floor");
  }
  return make_coo(sparse_dim, dense_dim, self.sizes(), new_indices, new_values, true);
}

// ---------------------------------------------------------------- dense -> sparse

// CPU dense_to_sparse (SparseTensor.cpp): nonzero positions over the first sparse_dim dims (a
// position counts when any of its dense-dim elements is nonzero), in row-major order, so the
// result is coalesced.
at::Tensor dense_to_sparse_dim(const at::Tensor& self, int64_t sparse_dim) {
  const int64_t dims = self.dim();
  TORCH_CHECK(sparse_dim > 0 || dims == 0, "sparse_dim must be >0 if dimensionality > 0");
  TORCH_CHECK(sparse_dim <= dims, "sparse_dim must be less than or equal to self.dim()");
  at::Tensor mask = self.ne(0);
  if (sparse_dim < dims) {
    std::vector<int64_t> lead(self.sizes().begin(), self.sizes().begin() + sparse_dim);
    lead.push_back(-1);
    // A tensor with a zero-size dense dim has no nonzero elements anywhere.
    mask = self.numel() == 0 ? at::zeros(at::IntArrayRef(lead.data(), sparse_dim), mask.options())
                             : mask.reshape(lead).any(-1);
  }
  const at::Tensor indices = sparse_dim == 0 ? at::zeros({0, 1}, self.options().dtype(at::kLong))
                                             : mask.nonzero().t().contiguous();
  at::Tensor values;
  if (sparse_dim == 0) {
    values = self.unsqueeze(0).clone();
  } else {
    c10::List<std::optional<at::Tensor>> index;
    for (int64_t d = 0; d < sparse_dim; ++d) index.push_back(indices.select(0, d));
    values = self.index(index);
  }
  return make_coo(sparse_dim, dims - sparse_dim, self.sizes(), indices, values, true);
}

at::Tensor to_sparse_sparse_dim(const at::Tensor& self, int64_t sparse_dim) {
  return dense_to_sparse_dim(self, sparse_dim);
}

at::Tensor to_sparse_layout(const at::Tensor& self, std::optional<at::Layout> layout,
                            at::OptionalIntArrayRef blocksize, std::optional<int64_t> dense_dim) {
  const at::Layout target = layout.value_or(at::kSparse);
  TORCH_CHECK_NOT_IMPLEMENTED(target == at::kSparse,
                              "torch-vk: to_sparse with layout ", target,
                              " is not supported on the vk device (only sparse COO)");
  TORCH_CHECK(!blocksize.has_value(), "to_sparse for ", self.layout(), " to ", target,
              " conversion does not use specified blocksize");
  const int64_t dims = self.dim();
  const int64_t dense = dense_dim.value_or(0);
  TORCH_CHECK(dense >= 0 && dense <= dims, "to_sparse: dense_dim out of range");
  return dense_to_sparse_dim(self, dims - dense);
}

// ---------------------------------------------------------------- add

// dense (in place) += alpha * sparse. dense must have sparse's sizes.
at::Tensor& add_sparse_into_dense_(at::Tensor& dense, const at::Tensor& sparse, const at::Scalar& alpha) {
  TORCH_CHECK(dense.sizes().equals(sparse.sizes()),
              "add: expected 'self' and 'other' to have same size, but self has size ", dense.sizes(),
              " while other has size ", sparse.sizes(), " (FYI: dense-sparse addition does not currently support "
              "broadcasting)");
  const int64_t nnz = sparse._nnz();
  if (nnz == 0 || dense.numel() == 0) return dense;
  const int64_t sparse_dim = sparse.sparse_dim();
  at::Tensor values = sparse._values();
  values = alpha.equal(1) ? values.to(dense.scalar_type()) : values.mul(alpha).to(dense.scalar_type());
  const at::Tensor linear = linear_sparse_index(sparse._indices(), sparse.sizes(), sparse_dim);

  std::vector<int64_t> slab_sizes{-1};
  slab_sizes.insert(slab_sizes.end(), dense.sizes().begin() + sparse_dim, dense.sizes().end());
  if (dense.is_contiguous()) {
    dense.view(slab_sizes).index_add_(0, linear, values);
  } else {
    at::Tensor target = dense.contiguous();
    target.view(slab_sizes).index_add_(0, linear, values);
    dense.copy_(target);
  }
  return dense;
}

void check_same_device(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.device() == b.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              a.device(), " and ", b.device(), "!");
}

// sparse + alpha * sparse: indices and values concatenated (CUDA's choice; uncoalesced result).
at::Tensor add_sparse_sparse(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                             at::ScalarType result_type) {
  TORCH_CHECK(self.sizes().equals(other.sizes()), "add: expected sizes of 'self' and 'other' to match, but ",
              self.sizes(), " != ", other.sizes());
  TORCH_CHECK(self.sparse_dim() == other.sparse_dim(),
              "add: expected 'self' and 'other' to have same sparse dimensions, but ", self.sparse_dim(),
              " != ", other.sparse_dim());
  at::Tensor other_values = other._values();
  if (!alpha.equal(1)) other_values = other_values.mul(alpha);
  at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
  at::Tensor values = at::cat({self._values().to(result_type), other_values.to(result_type)}, 0);
  return make_coo(self.sparse_dim(), self.dense_dim(), self.sizes(), indices, values, false);
}

at::Tensor sparse_add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_same_device(self, other);
  const at::ScalarType result_type = at::result_type(self, other);
  if (self.is_sparse() && other.is_sparse()) return add_sparse_sparse(self, other, alpha, result_type);
  // CPU add_out_sparse_cpu: "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
  TORCH_CHECK(!self.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  at::Tensor result = self.to(result_type, /*non_blocking=*/false, /*copy=*/true)
                          .contiguous();
  return add_sparse_into_dense_(result, other, alpha);
}

at::Tensor& sparse_add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_same_device(self, other);
  if (self.is_sparse()) {
    TORCH_CHECK(other.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
    at::Tensor sum = add_sparse_sparse(self, other, alpha, self.scalar_type());
    return at::native::copy_sparse_(self, sum);
  }
  TORCH_CHECK(at::canCast(at::result_type(self, other), self.scalar_type()), "result type ",
              at::result_type(self, other), " can't be cast to the desired output type ", self.scalar_type());
  return add_sparse_into_dense_(self, other, alpha);
}

at::Tensor& sparse_add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  at::Tensor result = sparse_add(self, other, alpha);
  if (out.is_sparse()) {
    TORCH_CHECK(result.is_sparse(), "add: expected a dense 'out' for a dense result");
    at::native::copy_sparse_(out, result);
  } else {
    TORCH_CHECK(!result.is_sparse(), "add: expected a sparse 'out' for a sparse result");
    at::native::resize_output(out, result.sizes());
    out.copy_(result);
  }
  return out;
}

// ---------------------------------------------------------------- mul by a scalar

// sparse * 0-dim dense (Python scalars arrive as wrapped 0-dim tensors): values scaled, indices
// shared, coalesced flag kept (CPU mul_out_sparse_zerodim).
at::Tensor sparse_mul(const at::Tensor& self, const at::Tensor& other) {
  const at::Tensor& sparse = self.is_sparse() ? self : other;
  const at::Tensor& factor = self.is_sparse() ? other : self;
  TORCH_CHECK_NOT_IMPLEMENTED(!factor.is_sparse() && factor.dim() == 0,
                              "torch-vk: mul of a sparse tensor supports only a scalar (0-dim) factor on "
                              "the vk device");
  at::Tensor values = sparse._values().mul(factor.to(sparse.device()));
  return make_coo(sparse.sparse_dim(), sparse.dense_dim(), sparse.sizes(), sparse._indices().clone(), values,
                  sparse.is_coalesced());
}

at::Tensor& sparse_mul_(at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.is_sparse() && !other.is_sparse() && other.dim() == 0,
                              "torch-vk: in-place mul of a sparse tensor supports only a scalar (0-dim) factor "
                              "on the vk device");
  TORCH_CHECK(at::canCast(at::result_type(self, other), self.scalar_type()), "result type ",
              at::result_type(self, other), " can't be cast to the desired output type ", self.scalar_type());
  self._values().mul_(other.to(self.device()));
  return self;
}

// sub = add with -alpha (CPU sub_out_sparse), with the CPU's bool check.
at::Tensor sparse_sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  TORCH_CHECK(self.scalar_type() != at::kBool || other.scalar_type() != at::kBool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  return sparse_add(self, other, -alpha);
}

at::Tensor& sparse_sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  TORCH_CHECK(self.scalar_type() != at::kBool || other.scalar_type() != at::kBool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  return sparse_add_(self, other, -alpha);
}

// -sparse: values negated, indices shared (neg is linear, so the coalesced flag is kept).
at::Tensor sparse_neg(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  return make_coo(self.sparse_dim(), self.dense_dim(), self.sizes(), self._indices().clone(), self._values().neg(),
                  self.is_coalesced());
}

at::Tensor& sparse_neg_(at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  self._values().neg_();
  return self;
}

// sparse / 0-dim dense (CPU div_sparse without rounding mode: true division, linear in the
// values, so duplicates need no coalescing).
at::Tensor sparse_div(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.is_sparse() && !other.is_sparse() && other.dim() == 0,
                              "torch-vk: div of a sparse tensor supports only a scalar (0-dim) divisor on the vk "
                              "device");
  return make_coo(self.sparse_dim(), self.dense_dim(), self.sizes(), self._indices().clone(),
                  self._values().div(other.to(self.device())), self.is_coalesced());
}

// ---------------------------------------------------------------- sparse @ dense

// CPU addmm_out_sparse_dense / s_addmm_out_sparse_dense_worker checks.
void check_sparse_mm_operands(const at::Tensor& sparse, const at::Tensor& dense) {
  TORCH_CHECK(sparse.sparse_dim() == 2, "addmm: matrices expected, got ", sparse.sparse_dim(), "D tensor");
  TORCH_CHECK(sparse.dense_dim() == 0, "addmm: scalar values expected, got ", sparse.dense_dim(), "D values");
  TORCH_CHECK(dense.dim() == 2, "addmm: matrices expected, got ", dense.dim(), "D tensor");
  TORCH_CHECK(!dense.is_sparse(), "torch-vk: sparse @ sparse is not supported on the vk device");
  TORCH_CHECK(sparse.size(1) == dense.size(0), "addmm: Argument #3 (dense): Expected dim 0 size ",
              sparse.size(1), ", got ", dense.size(0));
  TORCH_CHECK(sparse.scalar_type() == dense.scalar_type(), "Expected object of scalar type ",
              sparse.scalar_type(), " but got scalar type ", dense.scalar_type(), " for argument 'dense'");
  check_same_device(sparse, dense);
}

// sparse (m, k) @ dense (k, n) -> dense (m, n).
// Floating dtypes: the L2 CSR kernel (kernels::spmm, fp32 / fp64 accumulation, one pass, no
// (nnz, n) temporary) over the coalesced operand: its indices are sorted by row, so the row
// pointers are searchsorted(rows, 0..m). Other dtypes: a composite that index_selects the dense
// rows named by the column indices, scales them by the values and index_add_s them into the
// output rows.
at::Tensor sparse_times_dense(const at::Tensor& sparse, const at::Tensor& dense) {
  const int64_t m = sparse.size(0), n = dense.size(1);
  if (sparse._nnz() == 0 || n == 0 || m == 0) return at::zeros({m, n}, dense.options());
  if (at::isFloatingType(dense.scalar_type())) {
    const at::Tensor coalesced = sparse.is_coalesced() ? sparse : sparse.coalesce();
    const at::Tensor indices = coalesced._indices();
    const at::Tensor values = coalesced._values().contiguous();
    const at::Tensor cols = indices.select(0, 1).contiguous();
    const at::Tensor row_ptr =
        at::searchsorted(indices.select(0, 0).contiguous(), at::arange(m + 1, indices.options()));
    const at::Tensor b = dense.contiguous();
    at::Tensor out = at::empty({m, n}, dense.options());
    constexpr const char* name = "mm (sparse @ dense)";
    kernels::Spmm p;
    p.kind = dense.scalar_type() == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    p.rows = m;
    p.k = dense.size(0);
    p.n = n;
    p.nnz = values.size(0);
    p.row_ptr = operand(row_ptr, name);
    p.cols = operand(cols, name);
    p.values = operand(values, name);
    if (b.numel() > 0) p.dense = operand(b, name);
    p.out = operand(out, name);
    const c10::DeviceGuard guard(dense.device());
    tvk::Stream& stream = current_stream(dense.device().index());
    translate_errors([&] { kernels::spmm(stream, p); });
    return out;
  }
  at::Tensor out = at::zeros({m, n}, dense.options());
  const at::Tensor indices = sparse._indices();
  const at::Tensor products = dense.index_select(0, indices.select(0, 1)).mul_(sparse._values().unsqueeze(1));
  out.index_add_(0, indices.select(0, 0), products);
  return out;
}

at::Tensor sparse_addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  TORCH_CHECK(mat1.is_sparse() && !self.is_sparse(),
              "torch-vk: addmm on the vk device supports addmm(dense, sparse, dense) only");
  check_sparse_mm_operands(mat1, mat2);
  check_same_device(self, mat1);
  TORCH_CHECK(self.scalar_type() == mat1.scalar_type(), "Expected object of scalar type ", mat1.scalar_type(),
              " but got scalar type ", self.scalar_type(), " for argument 't'");
  const at::Tensor t = self.expand({mat1.size(0), mat2.size(1)});
  at::Tensor product = sparse_times_dense(mat1, mat2);
  if (!alpha.equal(1)) product.mul_(alpha);
  if (beta.toComplexDouble() == 0.0) return product;  // beta == 0 ignores self (NaN included)
  return beta.equal(1) ? product.add_(t) : product.add_(t.mul(beta));
}

at::Tensor& sparse_addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, at::Tensor& out) {
  const at::Tensor result = sparse_addmm(self, mat1, mat2, beta, alpha);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor& sparse_addmm_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  return sparse_addmm_out(self, mat1, mat2, beta, alpha, self);
}

at::Tensor sparse_mm(const at::Tensor& self, const at::Tensor& mat2) {
  // dense @ sparse = (sparse^T @ dense^T)^T, as PyTorch's _sparse_mm.
  if (!self.is_sparse() && mat2.is_sparse()) {
    TORCH_CHECK(self.dim() == 2, "addmm: matrices expected, got ", self.dim(), "D tensor");
    return sparse_mm(mat2.t(), self.t()).t();
  }
  TORCH_CHECK(self.is_sparse() && !mat2.is_sparse(),
              "torch-vk: mm on the vk device supports mm(sparse, dense) and mm(dense, sparse) only");
  check_sparse_mm_operands(self, mat2);
  return sparse_times_dense(self, mat2);
}

at::Tensor& sparse_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  const at::Tensor result = sparse_mm(self, mat2);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// ---------------------------------------------------------------- sparse_mask

// CPU sparse_mask (SparseTensor.cpp): self's values at mask's indices, with mask's indices and
// coalesced flag (every duplicate of an uncoalesced mask gets the same value). A dense self is
// gathered with index(); a sparse self is coalesced (duplicates summed, as the CPU) and looked up
// by binary search of the mask's linear positions in its sorted ones (absent positions give 0).
// The backward of mm(sparse, dense) w.r.t. the sparse operand's values goes through here.
at::Tensor sparse_sparse_mask(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.sizes().equals(self.sizes()), "sparse_mask(): operands have incompatible sizes; self has size ",
              self.sizes(), " but mask has size ", mask.sizes());
  check_same_device(self, mask);
  TORCH_CHECK(!self.is_sparse() || self.sparse_dim() == mask.sparse_dim(),
              "sparse_mask(): the number of sparse dimensions in `self` should match that of the `mask`. Got "
              "`self.sparse_dim() == ", self.sparse_dim(), "` != `mask.sparse_dim() == ", mask.sparse_dim(), "`.");
  const int64_t sparse_dim = mask.sparse_dim();
  const at::Tensor indices = mask._indices();
  const int64_t nnz = mask._nnz();
  at::Tensor values;
  if (!self.is_sparse()) {
    if (sparse_dim == 0) {
      values = self.unsqueeze(0).expand(mask._values().sizes()).clone();
    } else {
      c10::List<std::optional<at::Tensor>> index;
      for (int64_t d = 0; d < sparse_dim; ++d) index.push_back(indices.select(0, d));
      values = self.index(index);
    }
  } else {
    const at::Tensor source = self.coalesce();
    std::vector<int64_t> value_sizes = source._values().sizes().vec();
    value_sizes[0] = nnz;
    if (source._nnz() == 0 || nnz == 0) {
      values = at::zeros(value_sizes, source._values().options());
    } else {
      const at::Tensor source_linear = linear_sparse_index(source._indices(), self.sizes(), sparse_dim);
      const at::Tensor mask_linear = linear_sparse_index(indices, mask.sizes(), sparse_dim);
      const at::Tensor position =
          at::searchsorted(source_linear, mask_linear).clamp_max_(source._nnz() - 1);
      std::vector<int64_t> found_sizes(value_sizes.size(), 1);
      found_sizes[0] = nnz;
      const at::Tensor found = source_linear.index_select(0, position).eq(mask_linear).view(found_sizes);
      values = at::where(found, source._values().index_select(0, position),
                         at::zeros({}, source._values().options()));
    }
  }
  return make_coo(sparse_dim, mask.dense_dim(), mask.sizes(), indices.clone(), values, mask.is_coalesced());
}

// ---------------------------------------------------------------- copy_ between layouts

// sparse <- sparse: PyTorch's copy_sparse_ (indices / values copied with copy_, which moves them
// between devices). dense <- sparse: the densified source.
at::Tensor& sparse_copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (self.is_sparse() && src.is_sparse()) return at::native::copy_sparse_(self, src, non_blocking);
  TORCH_CHECK(!self.is_sparse(), "copy_() between dense and sparse Tensors is not implemented! Found self type = ",
              self.toString(), " and src type = ", src.toString());
  return self.copy_(src.to_dense(), non_blocking);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // Construction, metadata and layout bookkeeping: PyTorch's device-agnostic implementations.
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_symint));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("_to_dense", TORCH_FN(at::native::sparse_to_dense));
  m.impl("_to_sparse.sparse_dim",
         TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, int64_t)>(at::native::sparse_coo_to_sparse)));
  m.impl("sum", TORCH_FN(at::native::sum_coo));
  // vk kernels (composites of native vk ops).
  m.impl("copy_", TORCH_FN(sparse_copy_));
  m.impl("_coalesce", TORCH_FN(sparse_coalesce));
  m.impl("sparse_mask", TORCH_FN(sparse_sparse_mask));
  m.impl("add.Tensor", TORCH_FN(sparse_add));
  m.impl("add_.Tensor", TORCH_FN(sparse_add_));
  m.impl("add.out", TORCH_FN(sparse_add_out));
  m.impl("sub.Tensor", TORCH_FN(sparse_sub));
  m.impl("sub_.Tensor", TORCH_FN(sparse_sub_));
  m.impl("neg", TORCH_FN(sparse_neg));
  m.impl("neg_", TORCH_FN(sparse_neg_));
  m.impl("div.Tensor", TORCH_FN(sparse_div));
  m.impl("mul.Tensor", TORCH_FN(sparse_mul));
  m.impl("mul_.Tensor", TORCH_FN(sparse_mul_));
  m.impl("mm", TORCH_FN(sparse_mm));
  m.impl("mm.out", TORCH_FN(sparse_mm_out));
  m.impl("addmm", TORCH_FN(sparse_addmm));
  m.impl("addmm.out", TORCH_FN(sparse_addmm_out));
  m.impl("addmm_", TORCH_FN(sparse_addmm_));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_to_sparse.sparse_dim", TORCH_FN(to_sparse_sparse_dim));
  m.impl("_to_sparse", TORCH_FN(to_sparse_layout));
}

}  // namespace tvk::aten
