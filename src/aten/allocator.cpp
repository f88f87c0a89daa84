// c10::DeviceAllocator over tvk::Allocator (device memory) and at::HostAllocator over
// tvk::HostAllocator (pinned host memory), registered for PrivateUse1.
//
// A DataPtr's pointer is the block's device address (a real GL_EXT_buffer_reference address),
// cast to void*. Its context is a small heap record {address, device}: device addresses of two
// VkDevices may coincide, so the deleter cannot find the device from the address alone.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Winterference-size"  // inside CachingHostAllocator.h
#endif
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingDeviceAllocator::DeviceStats;

struct BlockContext {
  uint64_t address;
  c10::DeviceIndex device;
};

void report_deleter_error(const char* what) {
  // Deleters run in destructors (possibly during GC with the GIL held): never throw, never
  // call into Python.
  std::fprintf(stderr, "torch-vk: error while freeing device memory: %s\n", what);
}

// ---- history: the configuration every allocation and free reads (set_memory_history).
std::atomic<bool> g_history_on{false};
std::mutex g_history_mutex;
std::shared_ptr<const MemoryHistoryConfig> g_history;  // guarded by g_history_mutex

std::shared_ptr<const MemoryHistoryConfig> history_config() {
  if (!g_history_on.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(g_history_mutex);
  return g_history;
}

// The context of an allocation (or, with free_contexts, of a free), gathered before the
// allocator's lock is taken.
tvk::AllocationContext gather_context(bool for_free) {
  auto config = history_config();
  // A config is published only while history records something (set_memory_history).
  if (!config || !config->recorder || (for_free && !config->free_contexts)) return {};
  return config->recorder();
}

void delete_block(void* ctx) {
  auto* block = static_cast<BlockContext*>(ctx);
  if (block == nullptr) return;
  try {
    // In a forked child the parent's Vulkan objects are unusable: leak instead.
    if (device_initialized(block->device) && !in_bad_fork()) {
      // A free context means a stack trace: gathered only while history records frees
      // (context="all"), the one case where this deleter calls into Python.
      vk_device(block->device).allocator().free(block->address, gather_context(true));
    }
  } catch (const std::exception& e) {
    report_deleter_error(e.what());
  } catch (...) {
    report_deleter_error("unknown exception");
  }
  delete block;
}

void copy_stat(Stat& to, const tvk::MemoryStat& from) {
  to.current = from.current;
  to.peak = from.peak;
  to.allocated = from.allocated;
  to.freed = from.freed;
}

void copy_stat_array(StatArray& to, const tvk::MemoryStat (&from)[3]) {
  for (size_t i = 0; i < 3 && i < to.size(); ++i) copy_stat(to[i], from[i]);
}

class VkDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    c10::DeviceIndex index = current_device_index();
    c10::Device device(c10::DeviceType::PrivateUse1, index);
    if (nbytes == 0) return c10::DataPtr(nullptr, nullptr, &delete_block, device);
    tvk::Device& vk = vk_device(index);
    uint32_t stream_id = static_cast<uint32_t>(current_c10_stream(index).id());
    tvk::AllocationContext context = gather_context(false);
    uint64_t address = translate_errors(
        [&] { return vk.allocator().allocate(nbytes, stream_id, std::move(context)); });
    auto* ctx = new BlockContext{address, index};
    return c10::DataPtr(reinterpret_cast<void*>(address), ctx, &delete_block, device);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    // The context is not the data pointer, so the raw interface is not available through
    // Allocator::raw_allocate; raw_alloc/raw_delete below are the supported route.
    return nullptr;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count == 0) return;
    c10::DeviceIndex index = device_of_address(dest);
    if (index < 0) index = current_device_index();
    translate_errors([&] {
      current_stream(index).copy(reinterpret_cast<uint64_t>(src), reinterpret_cast<uint64_t>(dest),
                                 count);
    });
  }

  bool initialized() override {
    c10::DeviceIndex n = device_count_noexcept();
    for (c10::DeviceIndex i = 0; i < n; ++i)
      if (device_initialized(i)) return true;
    return false;
  }

  void emptyCache(c10::MempoolId_t /*mempool_id*/ = {0, 0}) override {
    c10::DeviceIndex n = device_count_noexcept();
    for (c10::DeviceIndex i = 0; i < n; ++i) {
      if (device_initialized(i)) vk_device(i).allocator().empty_cache();
    }
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (ptr.get() == nullptr) return;
    TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
                "torch-vk: recordStream needs a vk stream, got ", stream.device());
    if (ptr.get_deleter() != &delete_block) return;  // not ours (e.g. external memory)
    auto* ctx = static_cast<const BlockContext*>(ptr.get_context());
    TORCH_CHECK(ctx->device == stream.device_index(), "torch-vk: recordStream: memory of vk:",
                int(ctx->device), " used on a stream of vk:", int(stream.device_index()));
    vk_device(ctx->device)
        .allocator()
        .record_stream(ctx->address, static_cast<uint32_t>(stream.id()));
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    DeviceStats result;
    device = checked_device_index(device);
    if (!device_initialized(device)) return result;
    tvk::MemoryStats s = vk_device(device).allocator().stats();
    copy_stat_array(result.allocated_bytes, s.allocated_bytes);
    copy_stat_array(result.reserved_bytes, s.reserved_bytes);
    copy_stat_array(result.active_bytes, s.active_bytes);
    copy_stat_array(result.requested_bytes, s.requested_bytes);
    copy_stat_array(result.allocation, s.allocation);
    copy_stat_array(result.segment, s.segment);
    copy_stat_array(result.inactive_split_bytes, s.inactive_split_bytes);
    // tvk counts active blocks only through bytes; blocks handed out are the active ones.
    copy_stat_array(result.active, s.allocation);
    result.num_alloc_retries = s.num_alloc_retries;
    result.num_ooms = s.num_ooms;
    result.num_device_alloc = s.num_device_alloc;
    result.num_device_free = s.num_device_free;
    return result;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    device = checked_device_index(device);
    if (device_initialized(device)) vk_device(device).allocator().reset_accumulated_stats();
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    device = checked_device_index(device);
    if (device_initialized(device)) vk_device(device).allocator().reset_peak_stats();
  }

  // Pure virtual in some supported torch versions, a throwing default in others.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    device = checked_device_index(device);
    auto info = vk_device(device).memory_info();
    return {static_cast<size_t>(info.first), static_cast<size_t>(info.second)};
  }

  // Pure virtual only in newer torch versions: declared without `override` so that this builds
  // everywhere (a same-signature virtual of a newer base is overridden anyway).
  void* raw_alloc(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    c10::DeviceIndex index = current_device_index();
    tvk::Device& vk = vk_device(index);
    uint32_t stream_id = static_cast<uint32_t>(current_c10_stream(index).id());
    uint64_t address =
        translate_errors([&] { return vk.allocator().allocate(nbytes, stream_id); });
    std::lock_guard<std::mutex> lock(raw_mutex_);
    raw_blocks_[reinterpret_cast<void*>(address)] = index;
    return reinterpret_cast<void*>(address);
  }

  void raw_delete(void* ptr) {
    if (ptr == nullptr) return;
    c10::DeviceIndex index;
    {
      std::lock_guard<std::mutex> lock(raw_mutex_);
      auto it = raw_blocks_.find(ptr);
      TORCH_CHECK(it != raw_blocks_.end(), "torch-vk: raw_delete of a pointer not from raw_alloc");
      index = it->second;
      raw_blocks_.erase(it);
    }
    vk_device(index).allocator().free(reinterpret_cast<uint64_t>(ptr));
  }

 private:
  std::mutex raw_mutex_;
  std::unordered_map<void*, c10::DeviceIndex> raw_blocks_;
};

VkDeviceAllocator g_device_allocator;

// ---------------------------------------------------------------- pinned host memory
// Pinned memory belongs to device 0 (the staging device of host<->device copies).

void delete_pinned(void* ptr) {
  if (ptr == nullptr) return;
  try {
    if (device_initialized(0) && !in_bad_fork()) vk_device(0).host_allocator().free(ptr);
  } catch (const std::exception& e) {
    report_deleter_error(e.what());
  } catch (...) {
    report_deleter_error("unknown exception");
  }
}

class VkHostAllocator final : public at::HostAllocator {
 public:
  at::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return at::DataPtr(nullptr, nullptr, &delete_pinned, at::DeviceType::CPU);
    tvk::Device& vk = vk_device(0);
    void* ptr = translate_errors([&] { return vk.host_allocator().allocate(nbytes); });
    return at::DataPtr(ptr, ptr, &delete_pinned, at::DeviceType::CPU);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_pinned; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool record_event(void* ptr, void* ctx, c10::Stream stream) override {
    if (ctx == nullptr || stream.device_type() != c10::DeviceType::PrivateUse1) return false;
    if (stream.device_index() != 0) {
      // Memory of device 0 read by another device's copy: wait here instead of tracking.
      stream_of(stream).synchronize();
      return true;
    }
    vk_device(0).host_allocator().record_stream(ctx, static_cast<uint32_t>(stream.id()));
    return true;
  }

  void empty_cache() override {
    if (device_initialized(0)) vk_device(0).host_allocator().empty_cache();
  }

  at::HostStats get_stats() override {
    at::HostStats stats;
    if (!device_initialized(0)) return stats;
    auto& host = vk_device(0).host_allocator();
    auto reserved = static_cast<int64_t>(host.reserved_bytes());
    auto used = static_cast<int64_t>(host.allocated_bytes());
    stats.allocated_bytes.current = reserved;
    stats.allocated_bytes.peak = std::max(stats.allocated_bytes.peak, reserved);
    stats.active_bytes.current = used;
    stats.active_bytes.peak = std::max(stats.active_bytes.peak, used);
    return stats;
  }

  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

VkHostAllocator g_host_allocator;

}  // namespace

c10::DeviceAllocator* device_allocator() { return &g_device_allocator; }
c10::Allocator* host_allocator() { return &g_host_allocator; }

c10::DeviceIndex device_of_address(const void* ptr) {
  if (ptr == nullptr) return -1;
  c10::DeviceIndex n = device_count_noexcept();
  for (c10::DeviceIndex i = 0; i < n; ++i) {
    if (device_initialized(i) && vk_device(i).allocator().owns(reinterpret_cast<uint64_t>(ptr)))
      return i;
  }
  return -1;
}

void set_memory_history(MemoryHistoryConfig config, bool clear) {
  auto shared = std::make_shared<const MemoryHistoryConfig>(std::move(config));
  const bool on = shared->settings.contexts || shared->settings.trace;
  {
    std::lock_guard<std::mutex> lock(g_history_mutex);
    g_history = on ? shared : nullptr;
    g_history_on.store(on, std::memory_order_release);
  }
  c10::DeviceIndex n = device_count_noexcept();
  for (c10::DeviceIndex i = 0; i < n; ++i)
    if (device_initialized(i)) vk_device(i).allocator().set_history(shared->settings, clear);
}

void apply_memory_history(tvk::Device& device) {
  auto config = history_config();
  if (config) device.allocator().set_history(config->settings, false);
}

bool is_pinned_ptr(const void* ptr) noexcept {
  if (ptr == nullptr || !device_initialized(0)) return false;
  try {
    return vk_device(0).host_allocator().is_pinned(ptr);
  } catch (...) {
    return false;
  }
}

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "torch-vk: trying to resize storage that is not resizable");
  c10::Allocator* allocator = storage.allocator();
  TORCH_CHECK(allocator != nullptr, "torch-vk: trying to resize storage without an allocator");
  c10::Device device = storage.device();
  c10::DeviceGuard guard(device);
  if (new_bytes == 0) {
    storage.set_data_ptr_noswap(c10::DataPtr(nullptr, nullptr, &delete_block, device));
    storage.set_nbytes(0);
    return;
  }
  c10::DataPtr data = allocator->allocate(new_bytes);
  const void* old = storage.data();
  if (old != nullptr) {
    size_t count = std::min(storage.nbytes(), new_bytes);
    if (count > 0) {
      translate_errors([&] {
        current_stream(device.index())
            .copy(reinterpret_cast<uint64_t>(old), reinterpret_cast<uint64_t>(data.get()), count);
      });
    }
  }
  // The old block returns to the cache on this stream; later work on it is stream-ordered
  // after the copy above.
  storage.set_data_ptr_noswap(std::move(data));
  storage.set_nbytes(new_bytes);
}

namespace {
// Tensor.record_stream(s): the allocator-level recordStream on the tensor's storage block.
void record_stream(at::Tensor& self, c10::Stream stream) {
  g_device_allocator.recordStream(self.storage().data_ptr(), stream);
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", TORCH_FN(record_stream));
}

}  // namespace tvk::aten

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &tvk::aten::g_device_allocator)
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &tvk::aten::g_host_allocator)
