// torch_vk._C: the Python bindings of the device module (torch.vk), memory statistics,
// counters, fallback control and validation-layer access.
//
// Importing this module must work on a machine without Vulkan: nothing here touches the
// Vulkan loader at import; every function queries the runtime lazily.
#include <torch/csrc/Event.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/Context.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <string>

#include "aten/generator.h"
#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace py = pybind11;

namespace tvk::aten {
// torch_vk/csrc/generated_bindings.cpp: _compile_kernel, _launch_kernel, ...
void register_generated_bindings(py::module_& m);
void register_graph_bindings(py::module_& m);  // torch_vk/csrc/graph_bindings.cpp
void register_replay_bindings(py::module_& m);  // torch_vk/csrc/replay_bindings.cpp
void register_memory_bindings(py::module_& m);  // torch_vk/csrc/memory_bindings.cpp
// torch_vk/csrc/distributed/bindings.cpp: _distributed_init (defines ProcessGroupVK lazily)
void register_distributed_bindings(py::module_& m);

namespace {

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string unavailable_reason() {
  try {
    if (in_bad_fork()) return "the vk device was initialized before fork(); use 'spawn'";
    return tvk::Runtime::get().unavailable_reason();
  } catch (const std::exception& e) {
    return e.what();
  }
}

py::dict device_properties(c10::DeviceIndex index) {
  index = checked_device_index(index);
  const tvk::DeviceCapabilities& c = tvk::Runtime::get().capabilities(index);
  py::dict d;
  d["index"] = int(index);
  d["name"] = c.name;
  d["vendor"] = c.vendor;
  d["device_type"] = c.device_type;
  d["driver_name"] = c.driver_name;
  d["driver_info"] = c.driver_info;
  d["vendor_id"] = c.vendor_id;
  d["device_id"] = c.device_id;
  d["api_version"] = version_string(c.api_version);
  d["driver_version"] = c.driver_version;
  d["pipeline_cache_uuid"] =
      py::bytes(reinterpret_cast<const char*>(c.pipeline_cache_uuid.data()),
                c.pipeline_cache_uuid.size());
  d["total_memory"] = c.device_local_heap_size;
  d["unified_memory"] = c.unified_memory;
  // Capabilities.
  d["float16"] = c.float16;
  d["float64"] = c.float64;
  d["int8"] = c.int8;
  d["int16"] = c.int16;
  d["int64"] = c.int64;
  d["storage_8bit"] = c.storage_8bit;
  d["storage_16bit"] = c.storage_16bit;
  d["buffer_device_address"] = c.buffer_device_address;
  d["timeline_semaphore"] = c.timeline_semaphore;
  d["float32_atomic_add"] = c.float32_atomic_add;
  d["int64_atomics"] = c.int64_atomics;
  d["cooperative_matrix"] = c.cooperative_matrix;
  py::list coopmat_shapes;  // float16 x float16 -> float32 subgroup shapes (M, N, K)
  for (const auto& s : c.coopmat_f16_shapes) coopmat_shapes.append(py::make_tuple(s.m, s.n, s.k));
  d["coopmat_f16_shapes"] = coopmat_shapes;
  py::list coopmat_bf16_shapes;
  for (const auto& s : c.coopmat_bf16_shapes)
    coopmat_bf16_shapes.append(py::make_tuple(s.m, s.n, s.k));
  d["coopmat_bf16_shapes"] = coopmat_bf16_shapes;
  d["memory_budget"] = c.memory_budget;
  d["texel_buffers"] = c.texel_buffers;
  d["texel_16bit"] = c.texel_16bit;
  d["max_texel_buffer_elements"] = c.max_texel_buffer_elements;
  d["subgroup_size"] = c.subgroup_size;
  d["subgroup_basic"] = c.subgroup_basic;
  d["subgroup_vote"] = c.subgroup_vote;
  d["subgroup_arithmetic"] = c.subgroup_arithmetic;
  d["subgroup_ballot"] = c.subgroup_ballot;
  d["subgroup_shuffle"] = c.subgroup_shuffle;
  // SPIR-V float controls requested by every pipeline, per width (16, 32, 64 bits); empty
  // with TORCH_VK_FLOAT_CONTROLS=0.
  d["signed_zero_inf_nan_preserve"] = py::make_tuple(
      c.signed_zero_inf_nan_preserve[0], c.signed_zero_inf_nan_preserve[1], c.signed_zero_inf_nan_preserve[2]);
  d["denorm_preserve"] = py::make_tuple(c.denorm_preserve[0], c.denorm_preserve[1], c.denorm_preserve[2]);
  // Limits.
  d["max_storage_buffer_range"] = c.max_storage_buffer_range;
  d["max_memory_allocation_size"] = c.max_memory_allocation_size;
  d["max_buffer_size"] = c.max_buffer_size;
  d["sparse_binding"] = c.sparse_binding;
  d["max_workgroup_count"] =
      py::make_tuple(c.max_workgroup_count[0], c.max_workgroup_count[1], c.max_workgroup_count[2]);
  d["max_workgroup_size"] =
      py::make_tuple(c.max_workgroup_size[0], c.max_workgroup_size[1], c.max_workgroup_size[2]);
  d["max_workgroup_invocations"] = c.max_workgroup_invocations;
  d["max_shared_memory_size"] = c.max_shared_memory_size;
  d["max_push_constants_size"] = c.max_push_constants_size;
  d["max_loop_iterations"] = c.max_loop_iterations;
  d["timestamp_period_ns"] = c.timestamp_period_ns;
  d["missing_requirements"] = c.missing_requirements();
  return d;
}

void add_stat(py::dict& d, const std::string& name, const c10::CachingAllocator::Stat& s) {
  d[py::str(name + ".current")] = s.current;
  d[py::str(name + ".peak")] = s.peak;
  d[py::str(name + ".allocated")] = s.allocated;
  d[py::str(name + ".freed")] = s.freed;
}

void add_stat_array(py::dict& d, const std::string& name,
                    const c10::CachingAllocator::StatArray& a) {
  static const char* pools[] = {"all", "small_pool", "large_pool"};
  for (size_t i = 0; i < 3 && i < a.size(); ++i) add_stat(d, name + "." + pools[i], a[i]);
}

py::dict memory_stats(c10::DeviceIndex index) {
  auto s = device_allocator()->getDeviceStats(checked_device_index(index));
  py::dict d;
  add_stat_array(d, "allocation", s.allocation);
  add_stat_array(d, "segment", s.segment);
  add_stat_array(d, "active", s.active);
  add_stat_array(d, "allocated_bytes", s.allocated_bytes);
  add_stat_array(d, "reserved_bytes", s.reserved_bytes);
  add_stat_array(d, "active_bytes", s.active_bytes);
  add_stat_array(d, "inactive_split_bytes", s.inactive_split_bytes);
  add_stat_array(d, "requested_bytes", s.requested_bytes);
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  return d;
}

py::tuple stream_tuple(const c10::Stream& s) {
  return py::make_tuple(s.id(), int(s.device_index()), static_cast<int>(s.device_type()));
}

// The dtype argument of the 16-bit cooperative-matrix state queries; ValueError for others.
tvk::kernels::DType half_dtype_arg(const std::string& dtype) {
  if (dtype != "float16" && dtype != "bfloat16") {
    PyErr_SetString(PyExc_ValueError, "dtype must be 'float16' or 'bfloat16'");
    throw py::error_already_set();
  }
  return dtype == "bfloat16" ? tvk::kernels::DType::BFloat16 : tvk::kernels::DType::Float16;
}

}  // namespace
}  // namespace tvk::aten

PYBIND11_MODULE(_C, m) {
  using namespace tvk::aten;
  m.doc() = "torch-vk native extension (PrivateUse1 backend \"vk\")";
  // c10 errors keep their Python types (torch.OutOfMemoryError, NotImplementedError, ...).
  py::register_local_exception_translator([](std::exception_ptr p) {
    if (p) torch::translate_exception_to_python(p);
  });

  // ---- devices ----
  m.def("_is_available", [] { return device_count_noexcept() > 0; });
  m.def("_unavailable_reason", [] { return unavailable_reason(); });
  m.def("_device_count", [] { return int(device_count_noexcept()); });
  m.def("_get_device", [] { return int(current_device_index()); });
  m.def("_set_device", [](int index) {
    if (index < 0) return;
    set_current_device_index(checked_device_index(static_cast<c10::DeviceIndex>(index)));
  });
  m.def("_exchange_device", [](int index) {
    if (index < 0) return -1;
    int old = current_device_index();
    if (index != old)
      set_current_device_index(checked_device_index(static_cast<c10::DeviceIndex>(index)));
    return old;
  });
  m.def("_maybe_exchange_device", [](int index) {
    if (index < 0) return -1;
    int old = current_device_index();
    if (index < device_count_noexcept() && index != old)
      set_current_device_index(static_cast<c10::DeviceIndex>(index));
    return old;
  });
  m.def("_is_initialized", [](int index) { return device_initialized(index); });
  m.def("_init", [] {
    check_available();
    at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
  });
  m.def("_is_in_bad_fork", [] { return in_bad_fork(); });
  // Registered with Python's atexit by torch_vk/__init__.py. Autograd runs vk nodes on one
  // device thread per vk device; that thread can hold the last reference to a finished
  // GraphTask, whose result tensors own Python objects. When it drops them after the main
  // thread began finalizing, decref takes the GIL, Python ends the thread with pthread_exit,
  // and the forced unwind through a noexcept destructor aborts the process ("terminate called
  // without an active exception" after a script's last backward; pytorch/pytorch#190489).
  // A backward of a graph built here, with no Python object anywhere, is queued behind
  // whatever the thread holds: when it completes, the thread has dropped the earlier task.
  // Remove once PyTorch's decref stops taking the GIL during finalization (#190489).
  m.def("_drain_autograd_device_threads", [] {
    py::gil_scoped_release no_gil;
    for (c10::DeviceIndex i = 0; i < device_count_noexcept(); ++i) {
      if (!device_initialized(i)) continue;
      try {
        c10::InferenceMode not_inference(false);
        at::AutoGradMode grad_mode(true);
        at::Tensor leaf = at::zeros({1}, at::TensorOptions().device(c10::DeviceType::PrivateUse1, i))
                              .requires_grad_();
        torch::autograd::backward({leaf.sum()});
      } catch (const std::exception&) {
        // At exit a failure only means there is nothing left to drain (a lost device).
      }
    }
  });
  m.def(
      "_synchronize",
      [](int index) {
        c10::DeviceIndex i = checked_device_index(static_cast<c10::DeviceIndex>(index));
        if (!device_initialized(i)) return;
        translate_errors([&] { vk_device(i).synchronize(); });
      },
      py::arg("device") = -1, py::call_guard<py::gil_scoped_release>());
  m.def("_get_device_properties", [](int index) { return device_properties(index); },
        py::arg("device") = -1);
  m.def("_get_default_generator", [](int index) {
    const at::Generator& gen = default_generator(static_cast<c10::DeviceIndex>(index));
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(gen));
  });

  // ---- streams: (stream_id, device_index, device_type) triples for torch.Stream ----
  m.def("_current_stream", [](int index) { return stream_tuple(current_c10_stream(index)); },
        py::arg("device") = -1);
  m.def("_default_stream", [](int index) {
    c10::DeviceIndex i = index < 0 ? current_device_index() : static_cast<c10::DeviceIndex>(index);
    return stream_tuple(c10::Stream(c10::Stream::UNSAFE,
                                    c10::Device(c10::DeviceType::PrivateUse1, i), 0));
  }, py::arg("device") = -1);
  m.def("_set_stream", [](int64_t stream_id, int index) {
    c10::DeviceIndex i = checked_device_index(static_cast<c10::DeviceIndex>(index));
    set_current_c10_stream(c10::Stream(c10::Stream::UNSAFE,
                                       c10::Device(c10::DeviceType::PrivateUse1, i), stream_id));
  });

  // torch.Event.elapsed_time rejects subclasses of torch.Event as its argument; torch.vk.Event
  // measures through this instead.
  m.def("_event_elapsed_time", [](py::handle start, py::handle end) {
    for (py::handle h : {start, end}) {
      TORCH_CHECK_TYPE(PyObject_IsInstance(h.ptr(), reinterpret_cast<PyObject*>(&THPEventType)) == 1,
                       "torch-vk: expected a torch.Event, got ", py::repr(h).cast<std::string>());
    }
    const c10::Event& a = reinterpret_cast<THPEvent*>(start.ptr())->event;
    const c10::Event& b = reinterpret_cast<THPEvent*>(end.ptr())->event;
    py::gil_scoped_release no_gil;
    return a.elapsedTime(b);
  });

  // ---- memory ----
  m.def("_memory_stats", [](int index) { return memory_stats(index); }, py::arg("device") = -1);
  m.def("_memory_summary", [](int index) -> std::string {
    c10::DeviceIndex i = checked_device_index(static_cast<c10::DeviceIndex>(index));
    if (!device_initialized(i)) return "";
    return vk_device(i).allocator().summary();
  }, py::arg("device") = -1);
  m.def("_empty_cache", [] { device_allocator()->emptyCache(); },
        py::call_guard<py::gil_scoped_release>());
  m.def("_reset_peak_memory_stats", [](int index) {
    device_allocator()->resetPeakStats(static_cast<c10::DeviceIndex>(index));
  }, py::arg("device") = -1);
  m.def("_reset_accumulated_memory_stats", [](int index) {
    device_allocator()->resetAccumulatedStats(static_cast<c10::DeviceIndex>(index));
  }, py::arg("device") = -1);
  m.def("_mem_get_info", [](int index) {
    auto info = device_allocator()->getMemoryInfo(static_cast<c10::DeviceIndex>(index));
    return py::make_tuple(info.first, info.second);
  }, py::arg("device") = -1);
  m.def("_host_memory_stats", [] {
    py::dict d;
    if (!device_initialized(0)) {
      d["allocated_bytes"] = 0;
      d["reserved_bytes"] = 0;
      return d;
    }
    auto& host = vk_device(0).host_allocator();
    d["allocated_bytes"] = host.allocated_bytes();
    d["reserved_bytes"] = host.reserved_bytes();
    return d;
  });
  m.def("_host_empty_cache", [] {
    if (device_initialized(0)) vk_device(0).host_allocator().empty_cache();
  });

  // ---- counters ----
  m.def("_stats", [] {
    auto& c = tvk::Runtime::get().counters();
    py::dict d;
    d["dispatches"] = c.dispatches.load();
    d["transfers"] = c.transfers.load();
    d["submits"] = c.submits.load();
    d["host_waits"] = c.host_waits.load();
    d["pipelines_created"] = c.pipelines_created.load();
    d["barriers"] = c.barriers.load();
    d["barriers_skipped"] = c.barriers_skipped.load();
    py::dict fallbacks;
    for (const auto& [op, count] : fallback_counts()) fallbacks[py::str(op)] = count;
    d["fallbacks"] = fallbacks;
    return d;
  });
  m.def("_reset_stats", [] {
    auto& c = tvk::Runtime::get().counters();
    c.dispatches = 0;
    c.transfers = 0;
    c.submits = 0;
    c.host_waits = 0;
    c.pipelines_created = 0;
    c.barriers = 0;
    c.barriers_skipped = 0;
    reset_fallback_counts();
  });
  // Barrier mode of every stream (TORCH_VK_BARRIERS; runtime/stream.h): "tracked", "all" or
  // "reverse" (the test mode that runs barrier-free groups of commands backwards).
  m.def("_barrier_mode", [] {
    switch (tvk::barrier_mode()) {
      case tvk::BarrierMode::All: return std::string("all");
      case tvk::BarrierMode::Reverse: return std::string("reverse");
      default: return std::string("tracked");
    }
  });
  m.def("_set_barrier_mode", [](const std::string& mode) {
    if (mode == "tracked") tvk::set_barrier_mode(tvk::BarrierMode::Tracked);
    else if (mode == "all") tvk::set_barrier_mode(tvk::BarrierMode::All);
    else if (mode == "reverse") tvk::set_barrier_mode(tvk::BarrierMode::Reverse);
    else {
      const std::string message = "barrier mode must be 'tracked', 'all' or 'reverse', got '" + mode + "'";
      PyErr_SetString(PyExc_ValueError, message.c_str());
      throw py::error_already_set();
    }
  });

  // ---- fallback ----
  m.def("_set_fallback_mode", [](const std::string& mode) { set_fallback_mode(mode); });
  m.def("_get_fallback_mode", [] { return std::string(fallback_mode_name(fallback_mode())); });

  // ---- validation layer / loader ----
  m.def("_validation_enabled", [] {
    device_count_noexcept();  // discovery decides whether the layer is on
    return tvk::Runtime::get().validation_enabled();
  });
  m.def("_validation_error_count",
        [] { return tvk::Runtime::get().validation_error_count(); });
  m.def("_validation_messages", [] { return tvk::Runtime::get().validation_messages(); });
  // ---- the element-wise op table, for the torch.compile code generator ----
  m.def("_elementwise_op_table", [] {
    using tvk::kernels::ComputeKind;
    py::dict table;
    for (const auto& op : tvk::kernels::elementwise_ops()) {
      py::dict expressions;
      for (ComputeKind kind : {ComputeKind::Float32, ComputeKind::Int32, ComputeKind::Int64,
                               ComputeKind::Float64}) {
        if (const char* expr = tvk::kernels::elementwise_expression(op, kind)) {
          expressions[tvk::kernels::compute_kind_name(kind)] = expr;
        }
      }
      py::dict row;
      row["arity"] = op.arity;
      row["bool"] = op.bool_result;
      row["expressions"] = expressions;
      table[op.name] = row;
    }
    return table;
  });
  // ---- the cooperative-matrix GEMM (src/kernels/gemm.h) ----
  // (state, shape) for float16 (default), bfloat16 or float32 (converted to bfloat16 under
  // set_float32_matmul_precision "high" / "medium") A / B.
  m.def("_gemm_coopmat_state", [](int index, const std::string& dtype) {
    uint32_t shape[3];
    using tvk::kernels::DType;
    if (dtype != "float16" && dtype != "bfloat16" && dtype != "float32") {
      PyErr_SetString(PyExc_ValueError, "dtype must be 'float16', 'bfloat16' or 'float32'");
      throw py::error_already_set();
    }
    const DType dt = dtype == "bfloat16" ? DType::BFloat16
                     : dtype == "float32" ? DType::Float32
                                          : DType::Float16;
    const char* state = tvk::kernels::gemm_coopmat_state(current_stream(index), shape, dt);
    return py::make_tuple(std::string(state), py::make_tuple(shape[0], shape[1], shape[2]));
  }, py::arg("device") = -1, py::arg("dtype") = "float16");
  // The embedded SPIR-V of shader variant `name` (bytes), None when this build lacks it.
  m.def("_shader_spirv", [](const std::string& name) -> py::object {
    const tvk::ShaderBinary* shader = tvk::find_shader(name);
    if (!shader) return py::none();
    return py::bytes(reinterpret_cast<const char*>(shader->spirv), shader->spirv_bytes);
  });
  m.def("_last_gemm_algorithm", [] { return std::string(tvk::kernels::last_gemm_algorithm()); });
  // ---- the cooperative-matrix attention forward (src/kernels/attention.h) ----
  m.def("_attention_coopmat_state", [](int index, const std::string& dtype) {
    return std::string(tvk::kernels::attention_coopmat_state(current_stream(index), half_dtype_arg(dtype)));
  }, py::arg("device") = -1, py::arg("dtype") = "float16");
  m.def("_last_attention_algorithm",
        [] { return std::string(tvk::kernels::last_attention_algorithm()); });
  m.def("_last_attention_backward_algorithm",
        [] { return std::string(tvk::kernels::last_attention_backward_algorithm()); });
  // ---- the cooperative-matrix convolution (src/kernels/conv.h) ----
  m.def("_conv_coopmat_state", [](int index, const std::string& dtype) {
    return std::string(tvk::kernels::conv_coopmat_state(current_stream(index), half_dtype_arg(dtype)));
  }, py::arg("device") = -1, py::arg("dtype") = "float16");
  m.def("_last_conv_algorithm", [] { return std::string(tvk::kernels::last_conv_algorithm()); });
  register_graph_bindings(m);
  register_replay_bindings(m);
  register_memory_bindings(m);
  m.def("_loader_version", []() -> std::string {
    try {
      return tvk::Runtime::get().loader_version_string();
    } catch (const std::exception&) {
      return "";
    }
  });

  // ---- run-time generated kernels (torch.compile) ----
  register_generated_bindings(m);

  // ---- c10d backend "vkgloo" (torch_vk/distributed) ----
  register_distributed_bindings(m);
}
