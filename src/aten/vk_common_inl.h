// Template definitions for vk_common.h.
#pragma once

#include <c10/util/Exception.h>

#include "runtime/error.h"

namespace tvk::aten {

template <typename Fn>
decltype(auto) translate_errors(Fn&& fn) {
  try {
    return fn();
  } catch (const tvk::OutOfMemoryError& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  } catch (const tvk::DeviceUnavailableError& e) {
    TORCH_CHECK(false, e.what());
  } catch (const tvk::IndexError& e) {
    TORCH_CHECK_INDEX(false, e.what());
  } catch (const tvk::DeviceAssertError& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace tvk::aten
