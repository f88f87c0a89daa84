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
//       softmax with a boolean mask (True = masked out); rows with every entry masked give 0.
//       mask_type 0: an [L, L] attention mask, 1: a [B, L] key padding mask (4-D input),
//       2 / other shapes: a mask of the input's shape. Non-boolean masks are converted to bool.
//   _native_multi_head_attention
//       in-projection (one GEMM for self-attention), (q + bq) / sqrt(head_dim), q k^T, masked
//       softmax, attention x v, out-projection; weights averaged over heads on request.
//   _transformer_encoder_layer_fwd
//       one encoder layer (post- or pre-norm, ReLU or exact GELU feed-forward) built on
//       _native_multi_head_attention with need_weights = false, as transformer.cpp.
// Nested-tensor inputs (the padding-mask fast path of nn.TransformerEncoder) are not supported
// here: vk has no nested-tensor layout yet, and these ops raise for them.
#include <ATen/ATen.h>
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
  // A fully masked row is all -inf -> NaN after softmax; the second fill turns it into 0 as the
  // CPU kernel does (every entry of such a row is masked).
  return at::_softmax(input.masked_fill(mask, -std::numeric_limits<double>::infinity()), dim, false)
      .masked_fill(mask, 0);
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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_masked_softmax", TORCH_FN(masked_softmax));
  m.impl("_masked_softmax_backward", TORCH_FN(masked_softmax_backward));
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer_fwd));
}

}  // namespace tvk::aten
