// SPIR-V float-controls patch (runtime/pipeline.h, patch_float_controls): every embedded shader
// patched with every mode is re-parsed and checked for the added instructions, their section
// order (SPIR-V 2.4 "Logical Layout of a Module"), that the original instructions are kept in
// order, idempotence, spirv-val (SPIRV-Tools, when linked) and the device's own checks
// (pipelines are created from the patched modules under the validation layer when
// TORCH_VK_VALIDATION=1). The denorm-independence rules and malformed input are checked on
// requests built by hand.
//
// Suite: FloatControls (run with --gtest_filter='FloatControls*').
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#if TVK_HAVE_SPIRV_TOOLS
#include <spirv-tools/libspirv.hpp>
#endif

#include "runtime/device.h"
#include "runtime/pipeline.h"

namespace {

using namespace tvk;

// Opcodes and enumerants, from the SPIR-V specification (independent of the patcher's table).
enum : uint32_t {
  OpSourceContinued = 2, OpSource = 3, OpSourceExtension = 4, OpName = 5, OpMemberName = 6,
  OpString = 7, OpExtension = 10, OpExtInstImport = 11, OpMemoryModel = 14, OpEntryPoint = 15,
  OpExecutionMode = 16, OpCapability = 17, OpTypeFloat = 22, OpExecutionModeId = 331,
  OpModuleProcessed = 330,
};
constexpr uint32_t kCapDenormPreserve = 4464, kCapSignedZeroInfNanPreserve = 4466;
constexpr uint32_t kModeDenormPreserve = 4459, kModeDenormFlushToZero = 4460,
                   kModeSignedZeroInfNanPreserve = 4461;

struct Instruction {
  uint32_t opcode;
  std::vector<uint32_t> words;  // including the first (count | opcode) word
};

// Splits a module into instructions; fails the test on a malformed stream.
std::vector<Instruction> parse(const std::vector<uint32_t>& m) {
  std::vector<Instruction> out;
  EXPECT_GE(m.size(), 5u);
  EXPECT_EQ(m[0], 0x07230203u);
  for (size_t pos = 5; pos < m.size();) {
    const uint32_t count = m[pos] >> 16;
    if (count == 0 || pos + count > m.size()) {
      ADD_FAILURE() << "malformed instruction at word " << pos;
      return out;
    }
    out.push_back({m[pos] & 0xffffu, std::vector<uint32_t>(m.begin() + pos, m.begin() + pos + count)});
    pos += count;
  }
  return out;
}

std::string string_operand(const std::vector<uint32_t>& words, size_t first) {
  std::string s;
  for (size_t w = first; w < words.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((words[w] >> (8 * b)) & 0xff);
      if (!c) return s;
      s.push_back(c);
    }
  return s;
}

// Logical-layout section of the preamble instructions (1..6); 7 for everything after.
int section(uint32_t opcode) {
  switch (opcode) {
    case OpCapability: return 1;
    case OpExtension: return 2;
    case OpExtInstImport: return 3;
    case OpMemoryModel: return 4;
    case OpEntryPoint: return 5;
    case OpExecutionMode:
    case OpExecutionModeId: return 6;
    default: return 7;
  }
}

struct ModuleFacts {
  std::set<uint32_t> capabilities;
  std::set<std::string> extensions;
  std::vector<uint32_t> entries;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> modes;  // (entry, mode, width)
  std::set<uint32_t> float_widths;
};

ModuleFacts facts(const std::vector<Instruction>& ins) {
  ModuleFacts f;
  for (const auto& i : ins) {
    if (i.opcode == OpCapability) f.capabilities.insert(i.words[1]);
    if (i.opcode == OpExtension) f.extensions.insert(string_operand(i.words, 1));
    if (i.opcode == OpEntryPoint) f.entries.push_back(i.words[2]);
    if (i.opcode == OpExecutionMode && i.words.size() >= 4)
      f.modes.emplace(i.words[1], i.words[2], i.words[3]);
    if (i.opcode == OpTypeFloat) f.float_widths.insert(i.words[2]);
  }
  return f;
}

FloatControlsRequest everything() {
  FloatControlsRequest r;
  r.signed_zero_inf_nan_preserve = {true, true, true};
  r.denorm_preserve = {true, true, true};
  r.denorm_behavior_independence = 1;  // ALL
  return r;
}

std::vector<uint32_t> words_of(const ShaderBinary& s) {
  return std::vector<uint32_t>(s.spirv, s.spirv + s.spirv_bytes / 4);
}

std::vector<uint32_t> patch(const std::vector<uint32_t>& m, const FloatControlsRequest& r) {
  return patch_float_controls(m.data(), m.size(), r);
}

// The checks every patched module must pass: preamble order, original instructions kept in
// order with only float-control instructions added, and the modes of `r` for each declared width.
void check_patched(const std::string& name, const std::vector<uint32_t>& original,
                   const std::vector<uint32_t>& patched, const FloatControlsRequest& r) {
  SCOPED_TRACE(name);
  ASSERT_EQ(std::vector<uint32_t>(patched.begin(), patched.begin() + 5),
            std::vector<uint32_t>(original.begin(), original.begin() + 5));
  const auto before = parse(original);
  const auto after = parse(patched);
  int last = 0;
  for (const auto& i : after) {
    const int s = section(i.opcode);
    EXPECT_GE(s, last) << "opcode " << i.opcode << " after section " << last;
    if (s < 7) last = s;
    else last = 7;
  }
  // Original instructions, in order, with only float-control instructions in between.
  size_t k = 0;
  for (const auto& i : after) {
    if (k < before.size() && i.words == before[k].words) {
      ++k;
      continue;
    }
    const bool added_cap = i.opcode == OpCapability &&
                           (i.words[1] == kCapDenormPreserve || i.words[1] == kCapSignedZeroInfNanPreserve);
    const bool added_ext = i.opcode == OpExtension && string_operand(i.words, 1) == "SPV_KHR_float_controls";
    const bool added_mode = i.opcode == OpExecutionMode && i.words.size() == 4 &&
                            (i.words[2] == kModeDenormPreserve || i.words[2] == kModeSignedZeroInfNanPreserve);
    EXPECT_TRUE(added_cap || added_ext || added_mode) << "unexpected instruction, opcode " << i.opcode;
  }
  EXPECT_EQ(k, before.size()) << "original instructions lost or reordered";

  const ModuleFacts f0 = facts(before), f = facts(after);
  bool any = false;
  for (uint32_t entry : f.entries) {
    for (uint32_t width : {16u, 32u, 64u}) {
      const int w = width == 16 ? 0 : width == 32 ? 1 : 2;
      const bool declared = f.float_widths.count(width) > 0;
      const bool szinp = f.modes.count({entry, kModeSignedZeroInfNanPreserve, width}) > 0;
      EXPECT_EQ(szinp, declared && r.signed_zero_inf_nan_preserve[w]) << "width " << width;
      const bool flushed = f0.modes.count({entry, kModeDenormFlushToZero, width}) > 0;
      if (r.denorm_behavior_independence == 1) {
        const bool denorm = f.modes.count({entry, kModeDenormPreserve, width}) > 0;
        EXPECT_EQ(denorm, declared && r.denorm_preserve[w] && !flushed) << "width " << width;
      }
      any = any || szinp || f.modes.count({entry, kModeDenormPreserve, width});
    }
  }
  if (any) {
    bool has_szinp = false, has_denorm = false;
    for (const auto& [e, mode, width] : f.modes) {
      has_szinp = has_szinp || mode == kModeSignedZeroInfNanPreserve;
      has_denorm = has_denorm || mode == kModeDenormPreserve;
    }
    EXPECT_EQ(f.capabilities.count(kCapSignedZeroInfNanPreserve) > 0, has_szinp);
    EXPECT_EQ(f.capabilities.count(kCapDenormPreserve) > 0, has_denorm);
    const bool needs_extension = original[1] < 0x00010400u;
    EXPECT_EQ(f.extensions.count("SPV_KHR_float_controls") > 0,
              needs_extension || f0.extensions.count("SPV_KHR_float_controls") > 0);
  } else {
    EXPECT_EQ(patched, original) << "nothing to add, yet the module changed";
  }
}

#if TVK_HAVE_SPIRV_TOOLS
// spirv-val for Vulkan 1.2 (SPIR-V up to 1.5), with the options the validation layer uses for
// buffer_reference shaders (scalar block layout is not needed by our std430 blocks).
std::string spirv_val(const std::vector<uint32_t>& m) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& p, const char* msg) {
    messages += "word " + std::to_string(p.index) + ": " + msg + "\n";
  });
  return tools.Validate(m) ? std::string() : (messages.empty() ? "invalid" : messages);
}
#endif

TEST(FloatControls, EveryEmbeddedShaderPatchesCleanly) {
  const auto& shaders = all_shaders();
  ASSERT_FALSE(shaders.empty());
  std::set<uint32_t> widths_seen;
  for (const ShaderBinary& s : shaders) {
    const std::vector<uint32_t> original = words_of(s);
    const std::vector<uint32_t> patched = patch(original, everything());
    check_patched(s.name, original, patched, everything());
    EXPECT_EQ(patch(patched, everything()), patched) << s.name << ": patch is not idempotent";
    for (uint32_t w : facts(parse(original)).float_widths) widths_seen.insert(w);
  }
  // The table covers float32 and float64 kernels, so both widths were exercised.
  EXPECT_TRUE(widths_seen.count(32));
  EXPECT_TRUE(widths_seen.count(64));
}

#if TVK_HAVE_SPIRV_TOOLS
TEST(FloatControls, PatchedShadersPassSpirvVal) {
  for (const ShaderBinary& s : all_shaders()) {
    const std::vector<uint32_t> original = words_of(s);
    const std::string errors = spirv_val(patch(original, everything()));
    // Only judge what the validator accepted before the patch.
    if (!errors.empty() && spirv_val(original).empty()) ADD_FAILURE() << s.name << ":\n" << errors;
  }
}
#endif

TEST(FloatControls, OnlyRequestedModesAndWidths) {
  const ShaderBinary* s = nullptr;
  for (const ShaderBinary& b : all_shaders())
    if (facts(parse(words_of(b))).float_widths.count(64)) s = &b;
  ASSERT_NE(s, nullptr) << "no float64 shader in the table";
  const std::vector<uint32_t> original = words_of(*s);
  for (int mask = 0; mask < 64; ++mask) {
    FloatControlsRequest r;
    for (int w = 0; w < 3; ++w) {
      r.signed_zero_inf_nan_preserve[w] = (mask >> w) & 1;
      r.denorm_preserve[w] = (mask >> (3 + w)) & 1;
    }
    check_patched(std::string(s->name) + " mask " + std::to_string(mask), original,
                  patch(original, r), r);
  }
  FloatControlsRequest none;
  EXPECT_FALSE(none.any());
  EXPECT_EQ(patch(original, none), original);
}

// Denorm independence NONE: all declared widths get DenormPreserve, or none does;
// 32_BIT_ONLY: 16 and 64 together; 32 on its own.
TEST(FloatControls, DenormIndependence) {
  const ShaderBinary* f64 = nullptr;
  for (const ShaderBinary& b : all_shaders()) {
    auto w = facts(parse(words_of(b))).float_widths;
    if (w.count(64) && w.count(32) && !w.count(16)) f64 = &b;
  }
  ASSERT_NE(f64, nullptr);
  const std::vector<uint32_t> m = words_of(*f64);
  auto denorm_widths = [&](const FloatControlsRequest& r) {
    std::set<uint32_t> out;
    for (const auto& [e, mode, width] : facts(parse(patch(m, r))).modes)
      if (mode == kModeDenormPreserve) out.insert(width);
    return out;
  };
  FloatControlsRequest r;
  r.denorm_preserve = {false, true, false};  // 32 only supported
  r.denorm_behavior_independence = 2;        // NONE: 64 is declared too, so nothing
  EXPECT_TRUE(denorm_widths(r).empty());
  r.denorm_behavior_independence = 0;        // 32_BIT_ONLY: 32 alone is fine
  EXPECT_EQ(denorm_widths(r), (std::set<uint32_t>{32}));
  r.denorm_behavior_independence = 1;
  EXPECT_EQ(denorm_widths(r), (std::set<uint32_t>{32}));
  r.denorm_preserve = {false, true, true};
  r.denorm_behavior_independence = 2;
  EXPECT_EQ(denorm_widths(r), (std::set<uint32_t>{32, 64}));
  r.denorm_behavior_independence = 0;        // 16 is not declared: 64 may go alone
  EXPECT_EQ(denorm_widths(r), (std::set<uint32_t>{32, 64}));
  r.denorm_preserve = {false, false, true};
  r.denorm_behavior_independence = 2;        // 32 unsupported: nothing
  EXPECT_TRUE(denorm_widths(r).empty());
}

// A module below SPIR-V 1.4 gets OpExtension "SPV_KHR_float_controls" after the capabilities
// (or after its existing extensions), once.
TEST(FloatControls, ExtensionBelowSpirv14) {
  std::vector<uint32_t> m = words_of(all_shaders().front());
  m[1] = 0x00010300u;
  const std::vector<uint32_t> patched = patch(m, everything());
  check_patched("as SPIR-V 1.3", m, patched, everything());
  const auto ins = parse(patched);
  int extensions = 0;
  for (const auto& i : ins)
    if (i.opcode == OpExtension && string_operand(i.words, 1) == "SPV_KHR_float_controls") {
      ++extensions;
      // "SPV_KHR_float_controls" is 22 bytes + NUL: 6 words of string, 7 in all.
      EXPECT_EQ(i.words.size(), 7u);
    }
  EXPECT_EQ(extensions, 1);
  EXPECT_EQ(patch(patched, everything()), patched);
  // SPIR-V 1.5 modules (all of ours) need no extension.
  EXPECT_EQ(facts(parse(patch(words_of(all_shaders().front()), everything())))
                .extensions.count("SPV_KHR_float_controls"),
            0u);
}

TEST(FloatControls, MalformedModulesThrow) {
  std::vector<uint32_t> m = words_of(all_shaders().front());
  std::vector<uint32_t> bad_magic = m;
  bad_magic[0] = 0x12345678u;
  EXPECT_THROW(patch(bad_magic, everything()), std::invalid_argument);
  std::vector<uint32_t> truncated(m.begin(), m.begin() + 6);  // first instruction cut short
  truncated[5] = (40u << 16) | OpCapability;
  EXPECT_THROW(patch(truncated, everything()), std::invalid_argument);
  EXPECT_THROW(patch_float_controls(m.data(), 3, everything()), std::invalid_argument);
  std::vector<uint32_t> zero_count = m;
  zero_count[5] = OpCapability;  // word count 0
  EXPECT_THROW(patch(zero_count, everything()), std::invalid_argument);
}

// The device's request mirrors its VkPhysicalDeviceFloatControlsProperties, and pipelines are
// created from patched modules (under TORCH_VK_VALIDATION=1 the layer validates each one).
TEST(FloatControls, DeviceRequestAndPipelines) {
  if (!Runtime::get().available()) GTEST_SKIP() << Runtime::get().unavailable_reason();
  Device& d = Runtime::get().device(0);
  const FloatControlsRequest& r = d.pipelines().float_controls();
  EXPECT_EQ(r.signed_zero_inf_nan_preserve, d.caps().signed_zero_inf_nan_preserve);
  EXPECT_EQ(r.denorm_preserve, d.caps().denorm_preserve);
  EXPECT_EQ(r.denorm_behavior_independence, d.caps().denorm_behavior_independence);
  const uint64_t errors = Runtime::get().validation_error_count();
  // One pipeline per shader family and kind is plenty; the Python suite creates the rest.
  std::set<std::string> families;
  for (const ShaderBinary& s : all_shaders()) {
    const std::string name = s.name;
    const std::string family = name.substr(0, name.find('.'));
    const bool f64 = facts(parse(words_of(s))).float_widths.count(64) > 0;
    if (f64 && !d.caps().float64) continue;
    if (name.find("subgroup") != std::string::npos && !d.caps().subgroup_arithmetic) continue;
    if (name.find("coopmat") != std::string::npos && !d.caps().cooperative_matrix) continue;
    if (!families.insert(family + (f64 ? ".f64" : "")).second) continue;
    EXPECT_NE(d.pipelines().get(s, 64), VK_NULL_HANDLE) << name;
  }
  EXPECT_EQ(Runtime::get().validation_error_count(), errors);
}

}  // namespace
