// L2: run-time generated kernels (torch.compile's fused kernels, torch_vk/compiler/).
//
// compile_generated() turns GLSL compute source into SPIR-V with the run-time compiler
// (glslang + the SPIRV-Tools optimizer, linked statically), memoizes the result in-process and
// caches it on disk; launch_generated() records one dispatch of such a kernel.
//
// Source contract (the generator writes its GLSL accordingly):
//   * `#version 460`, one compute entry point `main`, `layout(local_size_x_id = 0) in;` (the
//     workgroup size is specialization constant 0, like the embedded shaders).
//   * Memory through GL_EXT_buffer_reference (no descriptor sets); 64-bit integers are
//     available (GL_EXT_shader_explicit_arithmetic_types_int64); 8/16-bit storage
//     extensions may be enabled. `#include "common.glsl"` / "math.glsl" / "ops.glsl" resolve
//     to the headers embedded at build time (kernels::shader_source); the
//     GL_GOOGLE_include_directive extension is enabled implicitly.
//   * Arguments: launch_generated() packs `addresses` (uint64 each), then `ints` (int64 each),
//     then `floats` (float32 each), tightly, in that order (std430-compatible: no padding
//     arises). When the block fits in kMaxPushConstantBytes (generated_args_indirect() is
//     false) it is the push-constant block itself:
//         layout(push_constant) uniform Args { uint64_t a0; ...; int64_t i0; ...; float f0; ... };
//     otherwise the push constants hold only the 8-byte device address of the block (16-byte
//     aligned, read-only, valid while the dispatch runs):
//         layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ArgBlock { ... };
//         layout(push_constant) uniform Push { ArgBlock args; };
//     The declared push-constant block must not be larger than what is pushed.
//   * Grid: 1-D, groups_x workgroups (at most the device limit): kernels loop grid-stride.
//
// Disk cache: $TORCH_VK_CACHE_DIR (default ~/.cache/torch_vk)/spirv/<key>.spv, key = 128 bits
// of SHA-256 over the source, the embedded headers it includes, the torch-vk cache version,
// the compiler versions and options, and every visible device's driverVersion and
// pipelineCacheUUID. A file holds the SPIR-V words followed by a 16-byte trailer (magic,
// word count, FNV-1a checksum); anything that does not check out is recompiled and rewritten.
// Writes are atomic (temporary file + rename); an unwritable directory only disables the
// disk cache.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/pipeline.h"

namespace tvk {
class AccessSet;
class Stream;
}

namespace tvk::kernels {

// A compiled generated kernel. Owned by the process-wide registry and never freed, so
// references, `binary` and the pipelines created from it stay valid for the process lifetime.
struct GeneratedKernel {
  int64_t id = 0;              // index for generated_kernel(id) (the Python handle)
  std::string name;            // the name given at the first compile (diagnostics only)
  std::vector<uint32_t> spirv; // the SPIR-V module
  ShaderBinary binary{};       // points at name / spirv (PipelineCache key)
};

// True when this build has a run-time shader compiler. Without one compile_generated()
// throws std::runtime_error("torch-vk was built without a run-time shader compiler ...").
bool generated_compiler_available();
// Compiler identification, e.g. "glslang 12.0.0, SPIRV-Tools v2023.1 ...".
std::string generated_compiler_version();

// Compiles (or finds) the kernel for `glsl_source`. Memoized by source text; on a memory
// miss the disk cache is tried before compiling. Thread-safe. Throws std::invalid_argument
// for a compile error, with the compiler's log and the numbered source lines around each
// reported error.
const GeneratedKernel& compile_generated(std::string_view glsl_source, std::string_view name);

// The kernel with `id` (GeneratedKernel::id); throws std::invalid_argument for an unknown id.
const GeneratedKernel& generated_kernel(int64_t id);

// True when the packed argument block does not fit in the push constants (see above).
bool generated_args_indirect(int n_addresses, int n_ints, int n_floats);

// A storage texel buffer argument: the view of `format` over the segment of `address`.
struct TexelArgument {
  uint64_t address = 0;
  TexelFormat format = TexelFormat::R32Float;
};

// Records one dispatch of `kernel` with `groups_x` workgroups of `local_size_x` invocations.
// With `n_texels` > 0 (devices with texel buffers), texels[i] is bound at binding i of set 0
// (`layout(set = 0, binding = i, r32f / rgba32f) uniform imageBuffer ...`) and the index of
// its first texel is appended to the ints (after the caller's n_ints values, in order).
// Throws std::invalid_argument for negative counts, null arrays with a positive count,
// groups_x outside 1..maxComputeWorkGroupCount[0], local_size_x outside the device's
// workgroup limits, more than kMaxTexelBindings texels or one without a texel view
// (Allocator::texel_view). `accesses`: the memory the kernel may read and write (its tensors'
// storage; Stream::dispatch), null for any memory. Never waits.
void launch_generated(Stream& stream, const GeneratedKernel& kernel, uint32_t groups_x,
                      uint32_t local_size_x, const uint64_t* addresses, int n_addresses,
                      const int64_t* ints, int n_ints, const float* floats, int n_floats,
                      const TexelArgument* texels = nullptr, int n_texels = 0,
                      const AccessSet* accesses = nullptr);

struct GeneratedKernelStats {
  uint64_t compiles = 0;     // sources compiled by the run-time compiler
  uint64_t memory_hits = 0;  // compile_generated() answered from the in-process registry
  uint64_t disk_hits = 0;    // answered from the disk cache (a memory miss)
};
GeneratedKernelStats generated_kernel_stats();

// Test hooks. clear_generated_memory_cache_for_testing(): later compiles miss the in-process
// memo (kernels already returned stay valid: they are retired, not freed).
// reset_generated_kernel_stats(): zeroes the counters.
void clear_generated_memory_cache_for_testing();
void reset_generated_kernel_stats();
// The disk-cache file compile_generated() would use for `glsl_source` ("" when the disk
// cache is disabled: no cache directory). For tests (corrupting an entry).
std::string generated_cache_path(std::string_view glsl_source);

}  // namespace tvk::kernels
