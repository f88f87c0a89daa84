// Version gates for the PyTorch releases torch-vk builds against (2.11 - 2.14, DESIGN.md).
// Each gate names the release that changed the API, so it can go when that release is the oldest.
#pragma once

#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

// Named tensors (at::Dimname, at::DimnameList) were removed in 2.13. Before that,
// at::impl::MetaBase::set_output_strided / set_output_raw_strided take a trailing
// `DimnameList names` parameter, so an override must declare it:
//   void set_output_raw_strided(int64_t i, IntArrayRef sizes, IntArrayRef strides,
//                               TensorOptions options TVK_META_NAMES_PARAM) override;
// and PyTorch's autocast op lists (ATen/autocast_mode.h) still hold the Dimname overloads.
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
#define TVK_TORCH_HAS_NAMED_TENSORS 1
#define TVK_META_NAMES_PARAM , at::DimnameList = {}
#else
#define TVK_TORCH_HAS_NAMED_TENSORS 0
#define TVK_META_NAMES_PARAM
#endif
