// PyTorch's transformer inference "fast path" ops on vk, as native composites of other vk ops
// (GEMMs, layer norm, softmax, element-wise): nothing is copied to the CPU.
//
// nn.TransformerEncoderLayer and nn.MultiheadAttention call these in eval mode under no_grad
// (or with no parameter requiring grad) for tensors on cpu, cuda or the PrivateUse1 device, so
// every vk model with a transformer reaches them at inference time. Semantics follow the CPU
// implementations in aten/src/ATen/native/transformers/{attention,transformer}.cpp and
// SoftMax.cpp:
//
//   _masked_softmax (+ _masked_softmax_backward)
//       softmax with a boolean mask (True = masked out); rows with every entry masked give NaN
//       (as the CPU's kernel in PyTorch 2.13).
//       mask_type 0: an [L, L] attention mask, 1: a [B, L] key padding mask (4-D input),
//       2 / other shapes: a mask of the input's shape. Non-boolean masks are converted to bool.
//   _native_multi_head_attention
//       in-projection (one GEMM for self-attention), (q + bq) / sqrt(head_dim), q k^T, masked
//       softmax, attention x v, out-projection; weights averaged over heads on request.
//   _transformer_encoder_layer_fwd
//       one encoder layer (post- or pre-norm, ReLU or exact GELU feed-forward) built on
//       _native_multi_head_attention with need_weights = false, as transformer.cpp.
//
// Nested tensors (nn.TransformerEncoder's eval path with a src_key_padding_mask packs the batch
// with _nested_tensor_from_mask, runs each layer on the packed batch and unpacks it with
// to_padded_tensor). A vk nested tensor is PyTorch's NestedTensorImpl over a vk buffer (its
// nested sizes / strides / offsets live on the host, as on CUDA). Supported here:
//   _nested_tensor_from_mask_left_aligned, _nested_tensor_from_mask (PrivateUse1)
//       the sequence lengths are read back to the host: the nested layout depends on the data,
//       exactly as on the CPU and CUDA (which copy the sizes to the CPU too).
//   _transformer_encoder_layer_fwd, to_padded_tensor (NestedTensorPrivateUse1)
//       the encoder layer pads the batch, runs the dense layer with the equivalent key padding
//       mask (valid tokens see exactly the keys the CPU's nested path lets them see) and packs
//       the valid rows again.
// Other ops on vk nested tensors are not implemented (PyTorch reports them as missing for the
// NestedTensorvk backend).
#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

void check_not_nested(const char* name, const at::Tensor& t) {
  if (t.is_nested())
    throw c10::NotImplementedError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                   std::string("torch-vk: ") + name + " with nested-tensor inputs is not supported");
}

// The mask broadcast to the input's shape, following masked_softmax_cpu's mask_type rules.
at::Tensor expand_softmax_mask(const at::Tensor& input, const at::Tensor& mask_in, std::optional<int64_t> mask_type) {
  TORCH_CHECK(mask_in.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  int64_t type = mask_type.value_or(2);
  if (mask_in.dim() != 2 || input.dim() != 4) type = 2;  // types 0 and 1 are for 2-D masks of 4-D inputs
  TORCH_CHECK(type == 0 || type == 1 || type == 2,
              "Mask Type should be 0 (src_mask), 1 (src_key_padding_mask), or 2 (default_mask)");
  if (type == 2) {
    TORCH_CHECK(input.sizes() == mask_in.sizes(), "For mask_type == 2 mask shape should match input shape");
    return mask_in;
  }
  if (type == 1) {
    TORCH_CHECK(input.size(0) == mask_in.size(0) && input.size(3) == mask_in.size(1),
                "For mask_type == 1 mask shape should be (B, L)");
    return mask_in.view({input.size(0), 1, 1, input.size(3)}).expand(input.sizes());
  }
  TORCH_CHECK(input.size(2) == mask_in.size(0) && input.size(3) == mask_in.size(1),
              "For mask_type == 0 mask shape should be (L, L)");
  return mask_in.view({1, 1, input.size(2), input.size(3)}).expand(input.sizes());
}

at::Tensor masked_softmax(const at::Tensor& input, const at::Tensor& mask_in, std::optional<int64_t> dim_opt,
                          std::optional<int64_t> mask_type) {
  const auto dtype = input.scalar_type();
  if (!(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16))
    raise_not_implemented_for("masked_softmax", dtype);
  const int64_t dim = dim_opt.has_value() ? at::maybe_wrap_dim(*dim_opt, input.dim()) : input.dim() - 1;
  const at::Tensor mask = expand_softmax_mask(input, mask_in, mask_type);
  if (input.numel() == 0) return at::empty_like(input, at::MemoryFormat::Contiguous);
  // A fully masked row is all -inf and gives NaN, as the CPU kernel does (PyTorch 2.13).
  return at::_softmax(input.masked_fill(mask, -std::numeric_limits<double>::infinity()), dim, false);
}

at::Tensor masked_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, const at::Tensor& mask_in,
                                   std::optional<int64_t> dim_opt) {
  TORCH_CHECK(grad_output.sizes() == mask_in.sizes() && output.sizes() == mask_in.sizes(),
              "Mask shape should match input shape");
  TORCH_CHECK(mask_in.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  const int64_t dim = dim_opt.has_value() ? at::maybe_wrap_dim(*dim_opt, output.dim()) : output.dim() - 1;
  const at::Tensor grad = grad_output.masked_fill(mask_in, 0);
  const at::Tensor dot = (grad * output).sum(dim, /*keepdim=*/true);
  return (output * (grad - dot)).masked_fill(mask_in, 0);
}

// ---------------------------------------------------------------- multi-head attention

// [B, T, D] -> [B, heads, T, D / heads]
at::Tensor split_heads(const at::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim, int64_t num_head,
    const at::Tensor& qkv_weight, const at::Tensor& qkv_bias, const at::Tensor& proj_weight,
    const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask, bool need_weights, bool average_attn_weights,
    std::optional<int64_t> mask_type) {
  // The CPU's checks (native_multi_head_attention_cpu), in its order and words.
  for (const at::Tensor* t : {&query, &key, &value}) check_not_nested("_native_multi_head_attention", *t);
  const int64_t D = embed_dim;
  TORCH_CHECK(query.dim() == 3, "expected 3-D `query`, got ", query.dim(), "-D tensor");
  TORCH_CHECK(query.sizes()[2] == embed_dim, "passed-in embed_dim ", embed_dim, " didn't match last dim of query ",
              query.sizes()[2]);
  TORCH_CHECK(key.dim() == 3, "expected 3-D `key`, got ", key.dim(), "-D tensor");
  TORCH_CHECK(value.dim() == 3, "expected 3-D `value`, got ", value.dim(), "-D tensor");
  TORCH_CHECK(query.sizes() == key.sizes() && key.sizes() == value.sizes(),
              "expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(qkv_weight.dim() == 2, "expected 2-D `qkv_weight`, got ", qkv_weight.dim(), "-D tensor");
  TORCH_CHECK(D * 3 == qkv_weight.sizes()[0], "expected `qkv_weight` first dim to be 3x embed_dim");
  TORCH_CHECK(D == qkv_weight.sizes()[1], "expected `qkv_weight` second dim to be embed_Dim");
  TORCH_CHECK(qkv_bias.dim() == 1, "expected 1-D `qkv_bias`, got ", qkv_bias.dim(), "-D tensor");
  TORCH_CHECK(qkv_bias.sizes()[0] == 3 * D, "expected `qkv_bias` first dim and first dim of query to be equal");
  TORCH_CHECK(D % num_head == 0, "`embed_dim` must divide evenly by `num_heads`");

  const int64_t batch = query.size(0);
  const int64_t tokens = query.size(1);
  if (batch * tokens * D == 0) return {at::empty_like(query), at::Tensor()};

  // In-projection: one GEMM for self-attention, as qkv_projection does.
  at::Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {
    auto qkv = at::linear(query, qkv_weight, qkv_bias).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    auto w = qkv_weight.chunk(3, 0);
    auto b = qkv_bias.chunk(3, 0);
    q = at::linear(query, w[0], b[0]);
    if (key.is_same(value)) {
      auto kv = at::linear(key, qkv_weight.narrow(0, D, 2 * D), qkv_bias.narrow(0, D, 2 * D)).chunk(2, -1);
      k = kv[0], v = kv[1];
    } else {
      k = at::linear(key, w[1], b[1]);
      v = at::linear(value, w[2], b[2]);
    }
  }
  const int64_t head_dim = D / num_head;
  // (q + bias) / sqrt(head_dim), as _transform_bias_rescale_qkv (the scale in the input dtype).
  const double inv_sqrt = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const at::Tensor qh = split_heads(q, num_head) * inv_sqrt;
  const at::Tensor kh = split_heads(k, num_head);
  const at::Tensor vh = split_heads(v, num_head);
  at::Tensor scores = at::matmul(qh, kh.transpose(-2, -1));  // [B, heads, T, T]
  if (mask.has_value() && mask->defined()) {
    const at::Tensor bool_mask = mask->scalar_type() == at::kBool ? *mask : mask->to(at::kBool);
    scores = at::_masked_softmax(scores, bool_mask, scores.dim() - 1, mask_type);
  } else {
    scores = at::_softmax(scores, -1, false);
  }
  const at::Tensor context = at::matmul(scores, vh);  // [B, heads, T, head_dim]
  const at::Tensor merged = context.transpose(1, 2).reshape({batch, tokens, D});
  at::Tensor out = at::linear(merged, proj_weight, proj_bias);
  if (!need_weights) return {out, at::Tensor()};
  if (average_attn_weights) scores = scores.sum(1) / num_head;
  return {out, scores};
}

// ---------------------------------------------------------------- encoder layer

at::Tensor transformer_encoder_layer_fwd(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type) {
  check_not_nested("_transformer_encoder_layer_fwd", src);
  if (src.numel() == 0) return src.clone();
  auto norm = [&](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    return at::layer_norm(x, {embed_dim}, w, b, eps);
  };
  at::Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = std::get<0>(at::_native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                                   proj_bias, mask, /*need_weights=*/false,
                                                   /*average_attn_weights=*/true, mask_type));
  x.add_(src);
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  const at::Tensor pre_ffn = x;
  if (norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  x = at::linear(x, ffn_weight_1, ffn_bias_1);
  x = use_gelu ? at::gelu(x) : at::relu(x);
  x = at::linear(x, ffn_weight_2, ffn_bias_2);
  x.add_(pre_ffn);
  if (!norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  return x;
}

// ---------------------------------------------------------------- nested tensors

// The checks shared by the two from-mask ops (NestedTensorTransformerFunctions.cpp); returns
// (lengths = valid tokens per row, first_pad = index of each row's first padding position).
std::tuple<at::Tensor, at::Tensor> mask_row_lengths(const at::Tensor& t, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::ScalarType::Bool, "Expected mask to be of ScalarType Bool, but got ",
              mask.scalar_type(), " instead.");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  TORCH_CHECK(t.dim() == 3, "Input should be a 3D tensor, N * L * D");
  const int64_t n = mask.size(0), l = mask.size(1);
  TORCH_CHECK(t.size(0) == n && t.size(1) == l, "Mask size should match input size");
  const at::Tensor lengths = mask.sum(1);  // int64
  const at::Tensor first_pad = at::cat({mask, at::zeros({n, 1}, mask.options())}, 1).to(at::kInt).argmin(1);
  return {lengths, first_pad};
}

bool nested_tensor_from_mask_left_aligned(const at::Tensor& t, const at::Tensor& mask) {
  auto [lengths, first_pad] = mask_row_lengths(t, mask);
  return at::equal(first_pad, lengths);  // reads back one flag: the op returns a host bool
}

// Host-built row indices of the valid tokens of a padded [N, L, ...] batch viewed as [N * L, ...]:
// row b * L + s for s < lengths[b], in nested (row-major) order.
at::Tensor valid_row_indices(const at::Tensor& lengths_cpu, int64_t padded_len) {
  const int64_t n = lengths_cpu.size(0);
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t len = lengths_cpu[b].item<int64_t>();
    for (int64_t s = 0; s < len; ++s) rows.push_back(b * padded_len + s);
  }
  return at::tensor(rows, at::TensorOptions().dtype(at::kLong));
}

// A vk nested tensor holding rows [b, :lengths[b], :] of the dense [N, L, D] tensor `t`: one
// index_select of the valid rows (one upload of the indices), whatever N is.
at::Tensor pack_rows(const at::Tensor& t, const at::Tensor& lengths_cpu) {
  const int64_t n = t.size(0), l = t.size(1), d = t.size(2);
  at::Tensor sizes = at::empty({n, 2}, at::TensorOptions().dtype(at::kLong));
  sizes.select(1, 0).copy_(lengths_cpu);
  sizes.select(1, 1).fill_(d);
  const at::Tensor rows = valid_row_indices(lengths_cpu, l);
  at::Tensor buffer = rows.numel() == 0
                          ? at::empty({0}, t.options())
                          : t.reshape({n * l, d}).index_select(0, rows.to(t.device())).reshape({-1});
  return at::detail::make_tensor<at::native::NestedTensorImpl>(std::move(buffer), std::move(sizes));
}

at::Tensor nested_tensor_from_mask(const at::Tensor& t, const at::Tensor& mask, bool mask_check) {
  auto [lengths, first_pad] = mask_row_lengths(t, mask);
  if (mask_check) TORCH_CHECK(at::equal(first_pad, lengths), "Mask must be left-aligned without gaps");
  return pack_rows(t, lengths.cpu());  // the nested sizes live on the host
}

// The host-side sizes of a vk nested tensor's rows: [N, dims] int64, plus its storage as a 1-D
// tensor and the per-row strides / offsets (nested tensors may be non-contiguous views).
struct NestedRows {
  at::Tensor storage, sizes, strides, offsets;
};

NestedRows nested_rows(const at::Tensor& nt) {
  const at::native::NestedTensorImpl* impl = at::native::get_nested_tensor_impl(nt);
  return {impl->get_unsafe_storage_as_tensor(), impl->get_nested_sizes(), impl->get_nested_strides(),
          impl->get_storage_offsets()};
}

at::Tensor nested_row(const NestedRows& rows, int64_t b) {
  const int64_t dims = rows.sizes.size(1);
  std::vector<int64_t> size(dims), stride(dims);
  for (int64_t i = 0; i < dims; ++i) {
    size[i] = rows.sizes[b][i].item<int64_t>();
    stride[i] = rows.strides[b][i].item<int64_t>();
  }
  return rows.storage.as_strided(size, stride, rows.offsets[b].item<int64_t>());
}

at::Tensor nested_to_padded(const at::Tensor& self, double padding, at::OptionalIntArrayRef output_size) {
  const NestedRows rows = nested_rows(self);
  if (rows.sizes.numel() == 0 || rows.sizes.dim() == 0) return rows.storage.narrow(0, 0, 0).clone();
  TORCH_CHECK(self.numel() > 0, "to_padded_tensor: at least one constituent tensor should have non-zero numel");
  const int64_t n = rows.sizes.size(0), dims = rows.sizes.size(1);
  std::vector<int64_t> padded{n};
  const at::Tensor max_size = std::get<0>(rows.sizes.max(0));
  for (int64_t i = 0; i < dims; ++i) padded.push_back(max_size[i].item<int64_t>());
  if (output_size.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(output_size->size()) == dims + 1,
                "Length of output_size does not match NestedTensor dims. Broadcasting is not supported.");
    for (int64_t i = 0; i <= dims; ++i)
      TORCH_CHECK((*output_size)[i] >= padded[i],
                  "Value in output_size is less than NestedTensor padded size. Truncation is not supported.");
    padded.assign(output_size->begin(), output_size->end());
  }
  at::Tensor out = at::full(padded, padding, rows.storage.options());
  const at::native::NestedTensorImpl* impl = at::native::get_nested_tensor_impl(self);
  const bool regular_2d = dims == 2 && (rows.sizes.select(1, 1) == padded[2]).all().item<bool>();
  if (regular_2d && at::native::nested_tensor_impl_is_contiguous(impl)) {
    // Contiguous [len_b, D] rows: one index_copy_ of the whole buffer into the padded rows.
    const at::Tensor lengths_cpu = rows.sizes.select(1, 0).contiguous();
    const at::Tensor dst_rows = valid_row_indices(lengths_cpu, padded[1]);
    const int64_t total = dst_rows.numel(), d = padded[2];
    out.view({n * padded[1], d}).index_copy_(0, dst_rows.to(out.device()),
                                             impl->get_buffer().narrow(0, 0, total * d).view({total, d}));
    return out;
  }
  for (int64_t b = 0; b < n; ++b) {  // general layout: one copy per row
    const at::Tensor row = nested_row(rows, b);
    at::Tensor dst = out.select(0, b);
    for (int64_t i = 0; i < dims; ++i) dst = dst.narrow(i, 0, row.size(i));
    dst.copy_(row);
  }
  return out;
}

at::Tensor nested_to_padded_tensor(const at::Tensor& self, double padding, at::OptionalSymIntArrayRef output_size) {
  if (!output_size.has_value()) return nested_to_padded(self, padding, std::nullopt);
  return nested_to_padded(self, padding, C10_AS_INTARRAYREF_SLOW(*output_size));
}

at::Tensor nested_transformer_encoder_layer_fwd(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type) {
  // As the CPU: "NestedTensor with mask is not supported yet" (native_multi_head_attention_cpu).
  TORCH_CHECK(!(mask.has_value() && mask->defined()), "NestedTensor with mask is not supported yet");
  const NestedRows rows = nested_rows(src);
  TORCH_CHECK(rows.sizes.dim() == 2 && rows.sizes.size(1) == 2,
              "_transformer_encoder_layer_fwd: expected a nested tensor of [tokens, embed_dim] rows");
  if (src.numel() == 0) return src.clone();
  const at::Tensor padded = nested_to_padded(src, 0.0, std::nullopt);  // [N, Lmax, D]
  const at::Tensor lengths_cpu = rows.sizes.select(1, 0).contiguous();
  const at::Tensor lengths = lengths_cpu.to(padded.device());
  const at::Tensor key_padding =
      at::arange(padded.size(1), lengths.options()).unsqueeze(0) >= lengths.unsqueeze(1);  // True = padding
  const at::Tensor dense = transformer_encoder_layer_fwd(
      padded, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
      norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2,
      key_padding, /*mask_type=*/1);
  return pack_rows(dense, lengths_cpu);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_masked_softmax", TORCH_FN(masked_softmax));
  m.impl("_masked_softmax_backward", TORCH_FN(masked_softmax_backward));
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer_fwd));
  m.impl("_nested_tensor_from_mask", TORCH_FN(nested_tensor_from_mask));
  m.impl("_nested_tensor_from_mask_left_aligned", TORCH_FN(nested_tensor_from_mask_left_aligned));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(nested_transformer_encoder_layer_fwd));
  m.impl("to_padded_tensor", TORCH_FN(nested_to_padded_tensor));
}

}  // namespace tvk::aten
