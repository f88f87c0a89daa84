// at::PrivateUse1HooksInterface for "vk", registered at static initialization.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/util/Exception.h>

#include "aten/generator.h"
#include "aten/vk_backend.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

struct VkHooks final : public at::PrivateUse1HooksInterface {
  ~VkHooks() override = default;

  bool isBuilt() const override { return true; }

  // Never throws and never creates a device (only enumerates physical devices).
  bool isAvailable() const override { return device_count_noexcept() > 0; }

  // Called once by at::globalContext().lazyInitDevice(PrivateUse1) before the first use of the
  // device from Python (tensor creation, torch.vk._lazy_init). Fails with the reason when vk
  // is unusable; logical devices are still created lazily, on first use of each.
  void init() const override { check_available(); }

  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_initialized(device_index);
  }

  c10::DeviceIndex deviceCount() const override { return device_count_noexcept(); }

  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_current_device_index(checked_device_index(device));
  }

  c10::DeviceIndex getCurrentDevice() const override { return current_device_index(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    c10::DeviceIndex old = current_device_index();
    if (device >= 0 && device != old) set_current_device_index(checked_device_index(device));
    return old;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    c10::DeviceIndex old = current_device_index();
    if (device >= 0 && device < device_count_noexcept() && device != old)
      set_current_device_index(device);
    return old;
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    if (data == nullptr) return at::Device(c10::DeviceType::PrivateUse1, current_device_index());
    c10::DeviceIndex index = device_of_address(data);
    TORCH_CHECK(index >= 0, "torch-vk: pointer ", data,
                " is not vk device memory allocated by torch-vk");
    return at::Device(c10::DeviceType::PrivateUse1, index);
  }

  at::Allocator* getPinnedMemoryAllocator() const override {
    check_available();
    return host_allocator();
  }

  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    resize_storage_bytes(storage, new_bytes);
  }
};

struct HooksRegistration {
  HooksRegistration() {
    // Leaked on purpose: the hooks must outlive every static destructor that may use them.
    at::RegisterPrivateUse1HooksInterface(new VkHooks());
  }
} g_hooks_registration;

}  // namespace
}  // namespace tvk::aten
