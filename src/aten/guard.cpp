// c10::impl::DeviceGuardImplInterface for PrivateUse1 ("vk"): current device, streams, events.
//
// Streams: a c10::Stream of type PrivateUse1 carries the tvk stream id of its device as its
// StreamId (0 = the default stream). New streams come from a small per-device pool (created
// lazily with Device::create_stream, handed out round-robin, like CUDA's stream pool), so that
// creating torch.vk.Stream() objects in a loop does not create Vulkan queues without bound.
// Events: the opaque event pointer is a heap tvk::Event, created on first record().
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#if __has_include(<c10/core/DeviceCapability.h>)
#include <c10/core/DeviceCapability.h>
#define TVK_HAS_DEVICE_CAPABILITY 1
#endif

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

constexpr int kPoolSize = 4;  // streams per device and priority class
constexpr int kMaxDevices = 128;

struct StreamPool {
  std::mutex mutex;
  std::vector<uint32_t> ids[2];  // [0] normal, [1] high priority
  std::atomic<uint32_t> next[2]{0, 0};
};
std::array<StreamPool, kMaxDevices> g_pools;

uint32_t pool_stream(c10::DeviceIndex index, bool high_priority) {
  index = checked_device_index(index);
  tvk::Device& device = vk_device(index);
  StreamPool& pool = g_pools[index];
  int cls = high_priority ? 1 : 0;
  uint32_t slot = pool.next[cls].fetch_add(1) % kPoolSize;
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto& ids = pool.ids[cls];
  while (ids.size() <= slot) {
    ids.push_back(translate_errors([&] { return device.create_stream(high_priority ? -1 : 0); }));
  }
  return ids[slot];
}

c10::Stream make_stream(c10::DeviceIndex index, uint32_t id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index),
                     static_cast<c10::StreamId>(id));
}

c10::DeviceIndex index_of(c10::Device d) {
  return d.has_index() ? d.index() : current_device_index();
}

struct VkGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  VkGuardImpl() = default;
  explicit VkGuardImpl(c10::DeviceType t) {
    TORCH_INTERNAL_ASSERT(t == static_type);
  }

  c10::DeviceType type() const override { return static_type; }

  // ---- devices ----
  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == static_type);
    c10::DeviceIndex old = current_device_index();
    if (d.index() != old) setDevice(d);
    return c10::Device(static_type, old);
  }

  c10::Device getDevice() const override {
    return c10::Device(static_type, current_device_index());
  }

  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == static_type);
    c10::DeviceIndex index = checked_device_index(index_of(d));
    set_current_device_index(index);
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.has_index() && d.index() >= 0 && d.index() < kMaxDevices) {
      try {
        set_current_device_index(d.index());
      } catch (...) {
      }
    }
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count_noexcept(); }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    c10::DeviceIndex index = checked_device_index(device_index);
    if (!device_initialized(index)) return;  // nothing was ever recorded there
    translate_errors([&] { vk_device(index).synchronize(); });
  }

#ifdef TVK_HAS_DEVICE_CAPABILITY
  // Not in every supported torch version's interface: no `override`.
  c10::DeviceCapability getDeviceCapability(c10::Device d) const {
    c10::DeviceIndex index = checked_device_index(index_of(d));
    c10::DeviceCapability cap;
    cap.capability_data.capability_bits = 0;
    auto& t = cap.capability_data.supported_scalar_types;
    t.has_Bool = t.has_Byte = t.has_Char = t.has_Short = t.has_Int = t.has_Long = 1;
    t.has_Half = t.has_BFloat16 = t.has_Float = 1;
    t.has_Double = is_supported_dtype(at::kDouble, index) ? 1 : 0;
    return cap;
  }
#endif

  // ---- streams ----
  c10::Stream getStream(c10::Device d) const override {
    return current_c10_stream(index_of(d));
  }

  c10::Stream getDefaultStream(c10::Device d) const override {
    return make_stream(index_of(d), 0);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority = false) const override {
    c10::DeviceIndex index = checked_device_index(index_of(d));
    return make_stream(index, pool_stream(index, isHighPriority));
  }

  c10::Stream getNewStream(c10::Device d, int priority = 0) const override {
    // Lower numbers are higher priorities (CUDA convention).
    return getStreamFromGlobalPool(d, priority < 0);
  }

  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = current_c10_stream(s.device_index());
    set_current_c10_stream(s);
    return old;
  }

  bool queryStream(const c10::Stream& s) const override {
    if (!device_initialized(s.device_index())) return true;
    return translate_errors([&] { return stream_of(s).query(); });
  }

  void synchronizeStream(const c10::Stream& s) const override {
    if (!device_initialized(s.device_index())) return;
    translate_errors([&] { stream_of(s).synchronize(); });
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& s) const override {
    device_allocator()->recordStream(data_ptr, s);
  }

  // ---- events ----
  void record(void** event, const c10::Stream& s, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == s.device_index(),
                "torch-vk: event device index ", int(device_index),
                " does not match the recording stream's device ", int(s.device_index()));
    tvk::Stream& stream = stream_of(s);
    auto* ev = static_cast<tvk::Event*>(*event);
    if (ev == nullptr) {
      ev = new tvk::Event(flag == c10::EventFlag::BACKEND_DEFAULT);
      *event = ev;
    }
    translate_errors([&] { ev->record(stream); });
  }

  void block(void* event, const c10::Stream& s) const override {
    if (event == nullptr) return;
    auto* ev = static_cast<tvk::Event*>(event);
    if (!ev->recorded()) return;
    tvk::Stream& stream = stream_of(s);
    translate_errors([&] { ev->block(stream); });
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    auto* ev = static_cast<tvk::Event*>(event);
    if (!ev->recorded()) return true;
    return translate_errors([&] { return ev->query(); });
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    auto* ev = static_cast<tvk::Event*>(event);
    if (!ev->recorded()) return;
    translate_errors([&] { ev->synchronize(); });
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<tvk::Event*>(event);
  }

  double elapsedTime(void* event1, void* event2, const c10::DeviceIndex /*device_index*/)
      const override {
    TORCH_CHECK(event1 != nullptr && event2 != nullptr,
                "torch-vk: both events must be recorded before computing elapsed time");
    auto* start = static_cast<tvk::Event*>(event1);
    auto* end = static_cast<tvk::Event*>(event2);
    TORCH_CHECK(start->recorded() && end->recorded(),
                "torch-vk: both events must be recorded before computing elapsed time");
    return translate_errors([&] { return start->elapsed_ms(*end); });
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, VkGuardImpl);

}  // namespace tvk::aten
