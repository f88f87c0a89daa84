// The boxed CPU fallback: every aten op without a native PrivateUse1 kernel runs on the CPU
// (at::native::cpu_fallback copies the vk arguments to the CPU, runs the CPU kernel and copies
// outputs and mutated arguments back). Ops registered natively never reach it: the dispatcher
// picks their kernel.
//
// Mode (environment TORCH_VK_FALLBACK, or torch_vk.set_fallback_mode() at run time):
//   warn   (default) a UserWarning once per operator, then silently
//   silent run on the CPU without a word
//   error  raise NotImplementedError naming the operator (native-coverage testing)
// Every call that ran on the CPU is counted per operator (torch_vk.stats()["fallbacks"]).
#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "aten/vk_backend.h"

namespace tvk::aten {
namespace {

FallbackMode mode_from_env() {
  const char* env = std::getenv("TORCH_VK_FALLBACK");
  if (env == nullptr || *env == '\0') return FallbackMode::Warn;
  std::string value(env);
  if (value == "warn") return FallbackMode::Warn;
  if (value == "silent") return FallbackMode::Silent;
  if (value == "error") return FallbackMode::Error;
  std::fprintf(stderr,
               "torch-vk: ignoring TORCH_VK_FALLBACK=%s (expected warn, silent or error); "
               "using warn\n",
               env);
  return FallbackMode::Warn;
}

std::atomic<int> g_mode{static_cast<int>(mode_from_env())};

struct FallbackRecord {
  std::mutex mutex;
  std::unordered_map<std::string, uint64_t> counts;
  std::unordered_set<std::string> warned;
};

FallbackRecord& record() {
  static auto* r = new FallbackRecord();  // leaked: used until process exit
  return *r;
}

std::string operator_label(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  if (name.overload_name.empty()) return name.name;
  return name.name + "." + name.overload_name;
}

void vk_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  FallbackMode mode = fallback_mode();
  std::string label = operator_label(op);
  TORCH_CHECK_NOT_IMPLEMENTED(mode != FallbackMode::Error, "torch-vk: ", label,
                              " has no native vk kernel and TORCH_VK_FALLBACK=error");
  bool first = false;
  {
    FallbackRecord& r = record();
    std::lock_guard<std::mutex> lock(r.mutex);
    ++r.counts[label];
    if (mode == FallbackMode::Warn) first = r.warned.insert(label).second;
  }
  if (first) {
    // verbatim and no file: the Python warning points at the user's line, without a
    // "(Triggered internally at fallback.cpp)" suffix.
    c10::warn(c10::Warning(c10::UserWarning(), c10::SourceLocation{__func__, nullptr, 0},
                           "torch-vk: " + label +
                               " has no native vk kernel; it runs on the CPU (copies in and "
                               "out). Set TORCH_VK_FALLBACK=error to forbid, =silent to hide.",
                           /*verbatim=*/true));
  }
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void run_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { vk_cpu_fallback(op, stack); }

FallbackMode fallback_mode() { return static_cast<FallbackMode>(g_mode.load()); }

void set_fallback_mode(FallbackMode mode) { g_mode.store(static_cast<int>(mode)); }

void set_fallback_mode(const std::string& mode) {
  if (mode == "warn") {
    set_fallback_mode(FallbackMode::Warn);
  } else if (mode == "silent") {
    set_fallback_mode(FallbackMode::Silent);
  } else if (mode == "error") {
    set_fallback_mode(FallbackMode::Error);
  } else {
    TORCH_CHECK_VALUE(false, "torch-vk: unknown fallback mode '", mode,
                      "' (expected 'warn', 'silent' or 'error')");
  }
}

const char* fallback_mode_name(FallbackMode mode) {
  switch (mode) {
    case FallbackMode::Warn: return "warn";
    case FallbackMode::Silent: return "silent";
    case FallbackMode::Error: return "error";
  }
  return "warn";
}

std::map<std::string, uint64_t> fallback_counts() {
  FallbackRecord& r = record();
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::map<std::string, uint64_t>(r.counts.begin(), r.counts.end());
}

void reset_fallback_counts() {
  FallbackRecord& r = record();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.counts.clear();
}

}  // namespace tvk::aten

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tvk::aten::vk_cpu_fallback>());
}
