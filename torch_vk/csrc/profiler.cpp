// The profilers for vk.
//
// 1. torch.autograd.profiler.profile(use_device="vk") (the legacy, marker-based path PyTorch
//    calls KINETO_PRIVATEUSE1_FALLBACK): ProfilerStubs whose events are timing events on the
//    current vk stream, so each op's device time is the time between the stream points at its
//    start and end.
//
// 2. torch.profiler for vk: a Kineto activity profiler registered for PrivateUse1
// (REGISTER_PRIVATEUSE1_PROFILER, torch >= 2.12). With
// `torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])`
// Kineto starts a session here: tvk::profiler (src/runtime/profiler.h) brackets every vk
// command with device timestamps, and at the end each kernel, copy and fill becomes a device
// activity (CONCURRENT_KERNEL / GPU_MEMCPY / GPU_MEMSET, which PyTorch maps to the PrivateUse1
// device) on a row per vk device and stream, linked by correlation id to the op that launched
// it, so key_averages() reports device time per op and the Chrome trace draws launch arrows.
// Host waits appear as PRIVATEUSE1_RUNTIME activities on the host thread's row.
//
// Metadata goes in as strings (addMetadataQuoted): the templated addMetadata formats with
// fmt, whose symbols torch's libraries do not export.
//
// Built only where the wheel ships Kineto's headers and the PrivateUse1 registry
// (TVK_HAVE_KINETO, set by CMakeLists.txt; torch 2.11 lacks the registry).
#include <torch/csrc/profiler/stubs/base.h>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

struct VkProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex index = current_device_index();
    if (device) *device = index;
    auto timing = std::make_shared<tvk::Event>(/*enable_timing=*/true);
    timing->record(current_stream(index));
    if (cpu_ns) *cpu_ns = tvk::profiler::host_now_ns();
    *event = std::static_pointer_cast<void>(timing);
  }
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    auto* a = static_cast<tvk::Event*>(start->get());
    auto* b = static_cast<tvk::Event*>(end->get());
    b->synchronize();
    return static_cast<float>(a->elapsed_ms(*b) * 1000.0);  // microseconds
  }
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = current_device_index();
    for (c10::DeviceIndex i = 0; i < device_count_noexcept(); ++i) {
      set_current_device_index(i);
      op(i);
    }
    set_current_device_index(previous);
  }
  void synchronize() const override {
    for (c10::DeviceIndex i = 0; i < device_count_noexcept(); ++i)
      if (device_initialized(i)) vk_device(i).synchronize();
  }
};

struct RegisterStubs {
  RegisterStubs() {
    static VkProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_stubs;

}  // namespace
}  // namespace tvk::aten

#if defined(TVK_HAVE_KINETO) && __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#ifndef USE_KINETO
#define USE_KINETO 1  // privateuse1_profiler.h declares the registry only under USE_KINETO
#endif
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/profiler.h"

namespace tvk::aten {
namespace {

using libkineto::ActivityType;

// Kineto's flow type for launch -> kernel arrows (kLinkAsyncCpuGpu in Kineto's
// ITraceActivity.h).
constexpr uint32_t kFlowAsyncCpuGpu = 2;

class VkProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    start_ns_ = tvk::profiler::host_now_ns();
    tvk::profiler::set_active(true);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    tvk::profiler::set_active(false);
    end_ns_ = tvk::profiler::host_now_ns();
    records_.clear();
    c10::DeviceIndex n = device_count_noexcept();
    for (c10::DeviceIndex i = 0; i < n; ++i) {
      if (!device_initialized(i)) continue;
      try {
        vk_device(i).collect_profile(records_);
      } catch (const std::exception& e) {
        errors_.push_back(std::string("torch-vk profiler: ") + e.what());
      }
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, start_ns_, end_ns_);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked, int64_t /*start*/,
                    int64_t /*end*/) override {
    span_ = libkineto::TraceSpan(start_ns_, end_ns_, "vk");
    uint32_t flow = 1;
    for (const auto& r : records_) {
      const ITraceActivityPtr link =
          linked && r.correlation ? linked(static_cast<int32_t>(r.correlation)) : nullptr;
      if (r.kind == tvk::profiler::CommandKind::HostWait) {
        libkineto::GenericTraceActivity wait(span_, ActivityType::PRIVATEUSE1_RUNTIME, r.name);
        wait.startTime = r.start_ns;
        wait.endTime = r.end_ns;
        wait.id = static_cast<int32_t>(r.correlation);
        wait.device = link ? static_cast<int32_t>(link->deviceId()) : 0;
        wait.resource = link ? static_cast<int32_t>(link->resourceId()) : 0;
        wait.threadId = link ? link->getThreadId() : 0;
        wait.linked = link;
        wait.addMetadataQuoted("device", std::to_string(r.device));
        wait.addMetadataQuoted("stream", std::to_string(r.stream));
        logger.handleGenericActivity(wait);
        continue;
      }
      const ActivityType type = r.kind == tvk::profiler::CommandKind::Kernel ? ActivityType::CONCURRENT_KERNEL
                                : r.kind == tvk::profiler::CommandKind::Copy ? ActivityType::GPU_MEMCPY
                                                                             : ActivityType::GPU_MEMSET;
      // The launch on the host thread's row, then the command on its device / stream row.
      if (link) {
        libkineto::GenericTraceActivity launch(span_, ActivityType::PRIVATEUSE1_RUNTIME,
                                               "vk launch");
        launch.startTime = r.launch_ns;
        launch.endTime = r.launch_ns + 1000;
        launch.id = static_cast<int32_t>(r.correlation);
        launch.device = static_cast<int32_t>(link->deviceId());
        launch.resource = static_cast<int32_t>(link->resourceId());
        launch.threadId = link->getThreadId();
        launch.linked = link;
        launch.flow.id = flow;
        launch.flow.type = kFlowAsyncCpuGpu;
        launch.flow.start = 1;
        logger.handleGenericActivity(launch);
      }
      libkineto::GenericTraceActivity command(span_, type, r.name);
      command.startTime = r.start_ns;
      command.endTime = r.end_ns;
      command.id = static_cast<int32_t>(r.correlation);
      command.device = r.device;
      command.resource = static_cast<int32_t>(r.stream);
      command.linked = link;
      if (link) {
        command.flow.id = flow++;
        command.flow.type = kFlowAsyncCpuGpu;
        command.flow.start = 0;
      }
      command.addMetadataQuoted("device", std::to_string(r.device));
      command.addMetadataQuoted("stream", std::to_string(r.stream));
      command.addMetadataQuoted("correlation", std::to_string(r.correlation));
      if (r.bytes) command.addMetadataQuoted("bytes", std::to_string(r.bytes));
      logger.handleGenericActivity(command);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "vk", "vk:0"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::set<std::pair<int, uint32_t>> seen;
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& r : records_) {
      if (r.kind == tvk::profiler::CommandKind::HostWait) continue;
      if (!seen.emplace(r.device, r.stream).second) continue;
      infos.push_back(libkineto::ResourceInfo{
          static_cast<int64_t>(r.stream), static_cast<int64_t>(r.stream), r.device,
          "vk:" + std::to_string(r.device) + " stream " + std::to_string(r.stream)});
    }
    return infos;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::make_unique<libkineto::CpuTraceBuffer>();
  }

  void pushCorrelationId(uint64_t id) override { tvk::profiler::push_correlation(id); }
  void popCorrelationId() override { tvk::profiler::pop_correlation(); }

 private:
  using ITraceActivityPtr = const libkineto::ITraceActivity*;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  libkineto::TraceSpan span_{0, 0, "vk"};
  std::vector<tvk::profiler::CommandRecord> records_;
  std::vector<std::string> errors_;
};

class VkActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& /*config*/) override {
    for (ActivityType t : activity_types)
      if (activities_.count(t)) return std::make_unique<VkProfilerSession>();
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "torch-vk";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME,
                                     ActivityType::PRIVATEUSE1_DRIVER};
};

}  // namespace

REGISTER_PRIVATEUSE1_PROFILER(VkActivityProfiler);

}  // namespace tvk::aten

#endif  // TVK_HAVE_KINETO && privateuse1_profiler.h
