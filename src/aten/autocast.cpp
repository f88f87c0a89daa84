// Autocast for "vk": torch.autocast("vk", dtype=float16 | bfloat16) casts exactly what CUDA's
// autocast casts. The op lists are PyTorch's own (ATen/autocast_mode.h, the lists CUDA
// registers): matmul / convolution / attention-like ops run in the autocast dtype, numerically
// sensitive ops (exp, log, norms, losses, softmax, ...) in float32, multi-input ops promote to
// the widest input type. binary_cross_entropy is refused, as under CUDA autocast.
// Every op without an entry falls through to the next dispatch key unchanged.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "aten/torch_compat.h"

namespace {

at::Tensor binary_cross_entropy_refused(const at::Tensor&, const at::Tensor&,
                                        const std::optional<at::Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
              "BCEWithLogits are\n"
              "safe to autocast.");
}

// PyTorch's list macros name at:: types unqualified (they are expanded inside at::autocast
// upstream). Before 2.13 the lists also hold the named-dimension overloads
// (norm.names_ScalarOpt_dim, softmax.Dimname, ...).
#if TVK_TORCH_HAS_NAMED_TENSORS
using at::DimnameList;
#endif
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TVK_AUTOCAST_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TVK_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TVK_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TVK_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(TVK_AUTOCAST_LOWER_PRECISION)
  AT_FORALL_FP32(TVK_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TVK_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TVK_AUTOCAST_PROMOTE)
#undef TVK_AUTOCAST_LOWER_PRECISION
#undef TVK_AUTOCAST_FP32
#undef TVK_AUTOCAST_FP32_SET_OPT_DTYPE
#undef TVK_AUTOCAST_PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN(binary_cross_entropy_refused));
}
