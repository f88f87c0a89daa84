// Native scaled_dot_product_attention for vk.
//
// torch.nn.functional.scaled_dot_product_attention asks _fused_sdp_choice_stub (registered
// here for PrivateUse1) which backend to use:
//   * overrideable -> _scaled_dot_product_fused_attention_overrideable: the fused forward kernel
//     (src/kernels/attention.h) writes the output and the row logsumexp in one pass; its
//     backward recomputes the probabilities from the saved logsumexp, on GPUs in the fused
//     two-pass kernel (attention_backward, head dims up to 256; a float mask's gradient from
//     its d(score) tile), else (CPU devices) with native matmul and element-wise ops (fp32
//     math for float16 / bfloat16).
//     A boolean attn_mask reaches the op already converted by PyTorch's composite
//     scaled_dot_product_attention (convert_boolean_attn_mask: at::where(mask, 0, -inf) in q's
//     dtype, one element-wise dispatch over the mask's own, unbroadcast shape); the Rows
//     kernel skips -inf keys as it skips false ones, so only that small dispatch remains. Float
//     masks of any kernel dtype are read as they are (no conversion to q's dtype).
//     Dropout (0 < dropout_p < 1) runs in the same kernels: the forward reserves Philox
//     counters from the device's default generator (as CUDA's flash attention does from its
//     own) and returns (seed, offset) as philox_seed / philox_offset (CPU int64 scalars);
//     the backward regenerates the same keep decisions from them (src/kernels/attention.h,
//     AttentionDropout).
//   * math -> PyTorch's composite math path (matmul, softmax, ...: all native on vk) for what
//     the kernel does not cover: float64, head dims above 256, nested tensors, masks that do
//     not broadcast to [batch, heads, L, S], mismatched batch dims, dropout while the stream
//     captures a graph (the kernels take the seed and offset as values, not from the graph's
//     Philox block), dropout_p outside [0, 1), ...
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "aten/generator.h"
#include "aten/vk_common.h"
#include "kernels/attention.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

bool is_kernel_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

// The mask as the kernel reads it: broadcast to [B, H, L, S] (3-D inputs: [H, L, S] with a
// leading 1), a view without a copy. Nullopt when it cannot be.
std::optional<at::Tensor> kernel_mask(const at::Tensor& mask, const at::Tensor& q,
                                      const at::Tensor& k) {
  const int64_t L = q.size(-2), S = k.size(-2);
  std::vector<int64_t> shape = q.sizes().vec();
  shape.back() = S;  // [..., L, S]
  (void)L;
  if (mask.dim() > static_cast<int64_t>(shape.size())) return std::nullopt;
  if (!at::is_expandable_to(mask.sizes(), shape)) return std::nullopt;
  at::Tensor m = mask.expand(shape);
  if (m.dim() == 3) m = m.unsqueeze(0);
  return m;
}

// Whether the fused kernel takes these inputs (everything else goes to the math path).
bool fused_supports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                    bool enable_gqa) {
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (!(dropout_p >= 0.0 && dropout_p < 1.0)) return false;
  if (dropout_p > 0.0 && current_stream(q.device().index()).capture_graph()) return false;
  if (q.dim() != k.dim() || q.dim() != v.dim() || (q.dim() != 3 && q.dim() != 4)) return false;
  for (const at::Tensor* t : {&q, &k, &v})
    if (t->device() != q.device() || t->layout() != at::kStrided) return false;
  if (!is_kernel_dtype(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type())
    return false;
  const int64_t E = q.size(-1), Ev = v.size(-1);
  if (k.size(-1) != E || E < 1 || Ev < 1 || E > kernels::kAttentionMaxHeadDim ||
      Ev > kernels::kAttentionMaxHeadDim)
    return false;
  if (k.size(-2) != v.size(-2)) return false;
  if (q.dim() == 4 && (k.size(0) != q.size(0) || v.size(0) != q.size(0))) return false;
  const int64_t H = q.size(-3), Hk = k.size(-3);
  if (v.size(-3) != Hk) return false;
  if (Hk != H && !(enable_gqa && Hk > 0 && H % Hk == 0)) return false;
  const int64_t B = q.dim() == 4 ? q.size(0) : 1;
  if (B * H > 65535 || (q.size(-2) + 15) / 16 > 65535) return false;
  if (mask.has_value() && mask->defined()) {
    if (is_causal) return false;  // the math path raises the error
    if (mask->device() != q.device()) return false;
    // The kernel reads bool and any float storage dtype directly (fp32 math).
    if (mask->scalar_type() != at::kBool && !is_kernel_dtype(mask->scalar_type())) return false;
    if (!kernel_mask(*mask, q, k)) return false;
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  if (at::globalContext().userEnabledOverrideableSDP() &&
      fused_supports(q, k, v, mask, dropout_p, is_causal, enable_gqa))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  TORCH_CHECK(at::globalContext().userEnabledMathSDP(),
              "No available kernel for scaled_dot_product_attention on vk: the fused kernel does "
              "not support these inputs and the math backend is disabled");
  return static_cast<int64_t>(at::SDPBackend::math);
}

// The head dim must be contiguous for the kernel.
at::Tensor head_dim_contiguous(const at::Tensor& t) {
  return (t.size(-1) <= 1 || t.stride(-1) == 1) ? t : t.contiguous();
}

// The output laid out like the query (as the op's meta function does): same strides when the
// shapes match, else the query's dim order (by decreasing stride) with dense strides.
at::Tensor output_like(const at::Tensor& query, const std::vector<int64_t>& shape) {
  if (query.sizes().vec() == shape) return at::empty_like(query);
  if (query.dim() != 4) return at::empty(shape, query.options());
  std::vector<int64_t> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::vector<int64_t> strides(4);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= shape[*it];
  }
  return at::empty_strided(shape, strides, query.options());
}

kernels::AttentionStrides strides_of(const at::Tensor& t4) {
  return {t4.stride(0), t4.stride(1), t4.stride(2)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
           at::Tensor, at::Tensor>
fused_attention_forward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                        const std::optional<at::Tensor>& attn_bias, double dropout_p,
                        bool is_causal, bool return_debug_mask, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable";
  TORCH_CHECK(query.dim() == 3 || query.dim() == 4, op, ": query must be 3-D or 4-D, got ",
              query.dim(), "-D");
  TORCH_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), op,
              ": query, key and value must have the same number of dims");
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, op, ": dropout_p must be in [0, 1), got ",
              dropout_p);
  TORCH_CHECK(!return_debug_mask, op, ": return_debug_mask is not supported");
  TORCH_CHECK(is_kernel_dtype(query.scalar_type()) && key.scalar_type() == query.scalar_type() &&
                  value.scalar_type() == query.scalar_type(),
              op, ": query, key and value must share a dtype among float32, float16 and bfloat16");
  TORCH_CHECK(key.size(-1) == query.size(-1), op, ": query and key head dims differ");
  TORCH_CHECK(key.size(-2) == value.size(-2), op, ": key and value sequence lengths differ");
  TORCH_CHECK(key.size(-3) == value.size(-3), op, ": key and value head counts differ");
  const at::Tensor q4 = head_dim_contiguous(query.dim() == 3 ? query.unsqueeze(0) : query);
  const at::Tensor k4 = head_dim_contiguous(key.dim() == 3 ? key.unsqueeze(0) : key);
  const at::Tensor v4 = head_dim_contiguous(value.dim() == 3 ? value.unsqueeze(0) : value);
  const int64_t B = q4.size(0), H = q4.size(1), L = q4.size(2), E = q4.size(3);
  const int64_t Hk = k4.size(1), S = k4.size(2), Ev = v4.size(3);
  TORCH_CHECK(k4.size(0) == B && v4.size(0) == B, op, ": batch sizes differ");
  TORCH_CHECK(Hk > 0 ? H % Hk == 0 : H == 0, op, ": query heads (", H,
              ") must be a multiple of key / value heads (", Hk, ")");

  std::vector<int64_t> out_shape = query.sizes().vec();
  out_shape.back() = Ev;
  const at::Tensor out = output_like(query, out_shape);
  at::Tensor lse = at::empty({B, H, L}, query.options().dtype(at::kFloat));
  // The kernel writes rows with a unit stride along the head dim.
  const bool direct = out.stride(-1) == 1 || Ev == 1;
  const at::Tensor target = direct ? out : at::empty(out_shape, query.options());
  const at::Tensor out4 = target.dim() == 3 ? target.unsqueeze(0) : target;

  kernels::AttentionForward p;
  p.batch = B;
  p.heads = H;
  p.group = Hk > 0 ? H / Hk : 1;
  p.L = L;
  p.S = S;
  p.E = E;
  p.Ev = Ev;
  p.scale = static_cast<float>(scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(E)));
  p.causal = is_causal;
  if (dropout_p > 0.0) {
    const c10::DeviceIndex index = query.device().index();
    TORCH_CHECK(!current_stream(index).capture_graph(), op,
                ": dropout is not supported while capturing a graph (the math path is)");
    auto* gen = at::get_generator_or_default<VkGeneratorImpl>(std::nullopt, default_generator(index));
    std::lock_guard<std::mutex> lock(gen->mutex_);
    const auto [seed, offset] = gen->philox_engine_inputs(kernels::kAttentionDropoutCounters);
    p.dropout = {dropout_p, seed, offset};
  }
  at::Tensor mask;
  if (attn_bias.has_value() && attn_bias->defined()) {
    at::Tensor bias = *attn_bias;
    if (bias.scalar_type() != at::kBool && !is_kernel_dtype(bias.scalar_type()))
      bias = bias.to(query.scalar_type());
    std::optional<at::Tensor> m = kernel_mask(bias, query, key);
    TORCH_CHECK(m.has_value(), op, ": attn_bias of shape ", attn_bias->sizes(),
                " does not broadcast to the attention scores");
    mask = *m;
    p.mask = operand(mask, op);
    for (int d = 0; d < 4; ++d) p.mask_strides[d] = mask.size(d) == 1 ? 0 : mask.stride(d);
  }
  if (B * H * L > 0 && key.size(-2) == 0) {
    // No keys at all: every row has no allowed key (out = 0, lse = -inf, as the kernels give
    // for fully masked rows). Empty keys have no address to hand to the kernel.
    out.zero_();
    lse.fill_(-std::numeric_limits<double>::infinity());
  } else if (B * H * L > 0) {
    p.q = operand(q4, op);
    p.k = operand(k4, op);
    p.v = operand(v4, op);
    p.out = operand(out4, op);
    p.lse = operand(lse, op);
    p.q_strides = strides_of(q4);
    p.k_strides = strides_of(k4);
    p.v_strides = strides_of(v4);
    p.out_strides = strides_of(out4);
    const c10::DeviceGuard guard(query.device());
    tvk::Stream& stream = current_stream(query.device().index());
    translate_errors([&] { kernels::attention_forward(stream, p); });
    if (!direct) out.copy_(target);
  }
  // (seed, offset) as CPU int64 scalars (their bits), for the backward.
  const auto seed_options = at::TensorOptions().dtype(at::kLong);
  return {out,
          lse,
          at::Tensor(),
          at::Tensor(),
          c10::SymInt(L),
          c10::SymInt(S),
          at::scalar_tensor(static_cast<int64_t>(p.dropout.seed), seed_options),
          at::scalar_tensor(static_cast<int64_t>(p.dropout.offset), seed_options),
          at::empty({0}, query.options())};
}

// Whether the backward takes the fused kernel: TORCH_VK_ATTENTION_BACKWARD=fused|gemm (read at
// every call), else fused on GPUs and the GEMM recomputation on CPU devices (lavapipe, where
// barriers are coroutine switches and the GEMMs are tuned for SIMD lanes).
bool fused_backward_wanted(tvk::Stream& stream) {
  if (const char* v = std::getenv("TORCH_VK_ATTENTION_BACKWARD"); v && *v) {
    if (std::strcmp(v, "fused") == 0) return true;
    if (std::strcmp(v, "gemm") == 0) return false;
  }
  return stream.device().caps().device_type != "cpu";
}

// The fused backward (src/kernels/attention.h, attention_backward) when it covers the problem;
// false (nothing recorded) otherwise. q4 .. lse: the forward's tensors as 4-D views. A float
// mask's gradient (grad_input_mask[3]) comes from the dq pass's d(score) tile, summed to the
// mask's shape.
bool fused_backward(const char* op, const at::Tensor& query, const at::Tensor& key,
                    const at::Tensor& value, const at::Tensor& grad_out, const at::Tensor& out,
                    const at::Tensor& logsumexp, const at::Tensor& attn_bias, bool is_causal,
                    double scale, const kernels::AttentionDropout& dropout,
                    std::array<bool, 4> grad_input_mask, at::Tensor& dq, at::Tensor& dk,
                    at::Tensor& dv, at::Tensor& dbias) {
  const c10::DeviceGuard guard(query.device());
  tvk::Stream& stream = current_stream(query.device().index());
  if (!fused_backward_wanted(stream)) return false;
  if (!is_kernel_dtype(query.scalar_type()) || grad_out.scalar_type() != query.scalar_type() ||
      out.scalar_type() != query.scalar_type() || key.scalar_type() != query.scalar_type() ||
      value.scalar_type() != query.scalar_type())
    return false;
  const bool three_d = query.dim() == 3;
  auto as4 = [&](const at::Tensor& t) { return head_dim_contiguous(three_d ? t.unsqueeze(0) : t); };
  const at::Tensor q4 = as4(query), k4 = as4(key), v4 = as4(value), o4 = as4(out), do4 = as4(grad_out);
  const int64_t B = q4.size(0), H = q4.size(1), L = q4.size(2), E = q4.size(3);
  const int64_t Hk = k4.size(1), S = k4.size(2), Ev = v4.size(3);
  if (Hk == 0 || H % Hk != 0 || o4.sizes() != do4.sizes() || o4.size(3) != Ev) return false;
  kernels::AttentionBackward bp;
  kernels::AttentionForward& p = bp.forward;
  p.batch = B, p.heads = H, p.group = H / Hk, p.L = L, p.S = S, p.E = E, p.Ev = Ev;
  p.scale = static_cast<float>(scale);
  p.causal = is_causal;
  p.dropout = dropout;
  if (!kernels::attention_backward_supported(stream, bp)) return false;
  const bool mask_grad =
      grad_input_mask[3] && attn_bias.defined() && at::isFloatingType(attn_bias.scalar_type());
  if (mask_grad && B * H * L * S > std::numeric_limits<int32_t>::max()) return false;
  at::Tensor mask;
  if (attn_bias.defined()) {
    at::Tensor bias = attn_bias;
    if (bias.scalar_type() != at::kBool && !is_kernel_dtype(bias.scalar_type()))
      bias = bias.to(at::kFloat);
    std::optional<at::Tensor> m = kernel_mask(bias, query, key);
    if (!m.has_value()) return false;
    mask = *m;
    p.mask = operand(mask, op);
    for (int d = 0; d < 4; ++d) p.mask_strides[d] = mask.size(d) == 1 ? 0 : mask.stride(d);
  }
  // Gradients take the layout of their input (empty_like), written directly when the head dim
  // is contiguous there.
  auto grad_for = [&](const at::Tensor& like) {
    at::Tensor g = at::empty_like(like);
    return g.size(-1) <= 1 || g.stride(-1) == 1 ? g : at::empty(like.sizes(), like.options());
  };
  const at::Tensor gq = grad_for(query), gk = grad_for(key), gv = grad_for(value);
  const at::Tensor gq4 = three_d ? gq.unsqueeze(0) : gq, gk4 = three_d ? gk.unsqueeze(0) : gk;
  const at::Tensor gv4 = three_d ? gv.unsqueeze(0) : gv;
  const at::Tensor lse = logsumexp.to(at::kFloat).contiguous();
  // d(scores) [B, H, L, S] for the mask's gradient: the pass skips the keys a causal tile
  // never reaches, whose gradient is 0.
  const at::Tensor dscores =
      mask_grad ? at::zeros({B, H, L, S}, query.options().dtype(at::kFloat)) : at::Tensor();
  if (mask_grad && dscores.numel() > 0) bp.grad_bias = operand(dscores, op);
  if (B * H > 0 && (L > 0 || S > 0)) {
    if (S == 0) {  // no keys: nothing flows back to q
      gq.zero_();
    } else if (L == 0) {  // no queries: nothing flows back to k, v
      gk.zero_();
      gv.zero_();
    } else {
      p.q = operand(q4, op), p.k = operand(k4, op), p.v = operand(v4, op);
      p.out = operand(o4, op), p.lse = operand(lse, op);
      p.q_strides = strides_of(q4), p.k_strides = strides_of(k4), p.v_strides = strides_of(v4);
      p.out_strides = strides_of(o4);
      bp.grad_out = operand(do4, op);
      bp.grad_out_strides = strides_of(do4);
      bp.grad_q = operand(gq4, op), bp.grad_k = operand(gk4, op), bp.grad_v = operand(gv4, op);
      bp.grad_q_strides = strides_of(gq4), bp.grad_k_strides = strides_of(gk4);
      bp.grad_v_strides = strides_of(gv4);
      translate_errors([&] { kernels::attention_backward(stream, bp); });
    }
  }
  auto finish = [](const at::Tensor& g, const at::Tensor& like) {
    if (g.strides() == like.strides() || like.numel() == 0) return g;
    at::Tensor result = at::empty_like(like);
    result.copy_(g);
    return result;
  };
  if (grad_input_mask[0]) dq = finish(gq, query);
  if (grad_input_mask[1]) dk = finish(gk, key);
  if (grad_input_mask[2]) dv = finish(gv, value);
  if (mask_grad) {
    at::Tensor g = at::sum_to(three_d ? dscores.squeeze(0) : dscores, attn_bias.sizes());
    dbias = at::empty_like(attn_bias);
    dbias.copy_(g);
  }
  return true;
}

// Backward by recomputation: the scores q k^T from a GEMM, turned in place into the
// probabilities P = exp(scale * scores + bias - lse) by one kernel (masked entries and rows
// without any allowed key give 0), then the softmax-attention gradients with native GEMMs and
// element-wise ops, in fp32.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/,
    const at::Tensor& /*cum_seq_k*/, int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p,
    bool is_causal, const at::Tensor& philox_seed, const at::Tensor& philox_offset,
    std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, op, ": dropout_p must be in [0, 1), got ",
              dropout_p);
  kernels::AttentionDropout dropout;
  if (dropout_p > 0.0) {
    // The forward's (seed, offset): CPU int64 scalars.
    for (const at::Tensor* t : {&philox_seed, &philox_offset})
      TORCH_CHECK(t->defined() && t->numel() == 1 && t->device().is_cpu() &&
                      t->scalar_type() == at::kLong,
                  op, ": with dropout, philox_seed and philox_offset must be the forward's "
                  "CPU int64 scalars");
    dropout = {dropout_p, static_cast<uint64_t>(philox_seed.item<int64_t>()),
               static_cast<uint64_t>(philox_offset.item<int64_t>())};
  }
  TORCH_CHECK(query.dim() == 3 || query.dim() == 4, op, ": query must be 3-D or 4-D");
  const bool three_d = query.dim() == 3;
  auto as4 = [&](const at::Tensor& t) { return three_d ? t.unsqueeze(0) : t; };
  // fp32 math for float16 / bfloat16 (float32 stays float32).
  auto opmath = [](const at::Tensor& t) {
    return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble ? t : t.to(at::kFloat);
  };
  {
    const double sc0 = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
    at::Tensor dq0, dk0, dv0, dbias0;
    if (fused_backward(op, query, key, value, grad_out, out, logsumexp, attn_bias, is_causal, sc0,
                       dropout, grad_input_mask, dq0, dk0, dv0, dbias0))
      return {dq0, dk0, dv0, dbias0};
  }
  const at::Tensor q = opmath(as4(query)), k = opmath(as4(key)), v = opmath(as4(value));
  const at::Tensor dO = opmath(as4(grad_out)), O = opmath(as4(out));
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3);
  const int64_t Hk = k.size(1), S = k.size(2), Ev = v.size(3);
  const int64_t G = Hk > 0 ? H / Hk : 1;
  const double sc = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  auto expand_heads = [&](const at::Tensor& t) {
    if (G == 1) return t;
    return t.unsqueeze(2).expand({B, Hk, G, t.size(2), t.size(3)}).reshape({B, H, t.size(2), t.size(3)});
  };
  const at::Tensor ke = expand_heads(k), ve = expand_heads(v);

  // P = exp(scale * q k^T + bias - lse) with the forward's exclusions, in place over the scores.
  at::Tensor P = at::matmul(q.to(at::kFloat), ke.to(at::kFloat).transpose(-2, -1)).contiguous();
  kernels::AttentionForward p;
  p.batch = B;
  p.heads = H;
  p.L = L;
  p.S = S;
  p.scale = static_cast<float>(sc);
  p.causal = is_causal;
  p.dropout = dropout;
  p.q.dtype = kernels::DType::Float32;
  at::Tensor mask;
  if (attn_bias.defined()) {
    // The kernel reads bool and float32 / float16 / bfloat16 masks directly.
    const at::ScalarType bt = attn_bias.scalar_type();
    at::Tensor bias = bt == at::kBool || is_kernel_dtype(bt) ? attn_bias : attn_bias.to(at::kFloat);
    std::optional<at::Tensor> m = kernel_mask(bias, query, key);
    TORCH_CHECK(m.has_value(), op, ": attn_bias of shape ", attn_bias.sizes(),
                " does not broadcast to the attention scores");
    mask = *m;
    p.mask = operand(mask, op);
    for (int d = 0; d < 4; ++d) p.mask_strides[d] = mask.size(d) == 1 ? 0 : mask.stride(d);
  }
  const at::Tensor lse = logsumexp.to(at::kFloat).contiguous();
  p.lse = operand(lse, op);
  // With dropout, Pd = P * z (z = keep / (1 - dropout_p), the forward's decisions) beside P.
  const at::Tensor Pd = dropout.p > 0.0 ? at::empty_like(P) : P;
  {
    const c10::DeviceGuard guard(query.device());
    tvk::Stream& stream = current_stream(query.device().index());
    if (P.numel() > 0)
      translate_errors([&] {
        kernels::attention_probabilities(stream, p, operand(P, op), operand(Pd, op));
      });
  }

  at::Tensor dq, dk, dv, dbias;
  const at::Tensor dv_e = at::matmul(Pd.transpose(-2, -1), dO);          // [B, H, S, Ev]
  const at::Tensor dPd = at::matmul(dO, ve.transpose(-2, -1));           // [B, H, L, S]
  const at::Tensor Dr = (dO * O).sum(-1, /*keepdim=*/true);              // [B, H, L, 1]
  // d(scores) = P * (z * dPd - D): Pd * dPd - P * D with dropout, P * (dPd - D) without.
  const at::Tensor dS = dropout.p > 0.0 ? Pd * dPd - P * Dr : P * (dPd - Dr);
  auto reduce_heads = [&](const at::Tensor& t) {
    if (G == 1) return t;
    return t.reshape({B, Hk, G, t.size(2), t.size(3)}).sum(2);
  };
  // Gradients take the layout of their input (empty_like), as PyTorch's meta function and the
  // CUDA kernels give it: compiled graphs view them under that assumption.
  auto finish = [&](at::Tensor t, const at::Tensor& like) {
    if (three_d) t = t.squeeze(0);
    if (t.scalar_type() == like.scalar_type() && t.strides() == like.strides()) return t;
    at::Tensor result = at::empty_like(like);
    result.copy_(t);
    return result;
  };
  if (grad_input_mask[0]) dq = finish(at::matmul(dS, ke).mul_(sc), query);
  if (grad_input_mask[1])
    dk = finish(reduce_heads(at::matmul(dS.transpose(-2, -1), q).mul_(sc)), key);
  if (grad_input_mask[2]) dv = finish(reduce_heads(dv_e), value);
  if (grad_input_mask[3] && attn_bias.defined() && at::isFloatingType(attn_bias.scalar_type())) {
    at::Tensor g = at::sum_to(three_d ? dS.squeeze(0) : dS, attn_bias.sizes());
    dbias = at::empty_like(attn_bias);
    dbias.copy_(g);
  }
  (void)Ev;
  return {dq, dk, dv, dbias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention_forward));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward",
         TORCH_FN(fused_attention_backward));
}

}  // namespace tvk::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &tvk::aten::fused_sdp_choice)
}  // namespace at::native
