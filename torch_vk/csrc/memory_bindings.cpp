// torch_vk._C memory history: _record_memory_history and _memory_snapshot, the native side of
// torch.vk.memory (torch_vk/memory.py), in the format of torch.cuda.memory's snapshots so that
// torch.cuda._memory_viz and pytorch.org/memory_viz render them.
//
// Contexts are torch::CapturedTraceback objects (Python frames, and C++ frames for
// stacks="all"), gathered on the allocating thread before the allocator's lock is taken and
// symbolized only when a snapshot is taken (torch::py_symbolize, with the GIL).
#include <torch/csrc/Export.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/allocator.h"
#include "runtime/device.h"

namespace py = pybind11;

// From torch/csrc/profiler/python/combined_traceback.h (libtorch_python), which the wheel
// ships without the nlohmann/json header it includes: the two declarations used here.
namespace torch {
TORCH_API std::vector<pybind11::object> py_symbolize(
    std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

namespace tvk::aten {
namespace {

const char* action_name(TraceAction action) {
  switch (action) {
    case TraceAction::Alloc: return "alloc";
    case TraceAction::FreeRequested: return "free_requested";
    case TraceAction::FreeCompleted: return "free_completed";
    case TraceAction::SegmentAlloc: return "segment_alloc";
    case TraceAction::SegmentFree: return "segment_free";
    case TraceAction::Oom: return "oom";
    case TraceAction::Snapshot: return "snapshot";
  }
  return "unknown";
}

const char* block_state_name(BlockInfo::State state) {
  switch (state) {
    case BlockInfo::State::Allocated: return "active_allocated";
    case BlockInfo::State::PendingFree: return "active_pending_free";
    case BlockInfo::State::Inactive: return "inactive";
  }
  return "inactive";
}

// Symbolizes every context once (a context shared by several entries is one traceback) and
// returns frames by context pointer.
class Symbolizer {
 public:
  void add(const AllocationContext& context) {
    if (!context) return;
    auto* tb = static_cast<torch::CapturedTraceback*>(context.get());
    if (index_.emplace(tb, pending_.size()).second) pending_.push_back(tb);
  }
  void run() { frames_ = torch::py_symbolize(pending_); }
  py::object frames(const AllocationContext& context) const {
    if (!context) return py::list();
    auto it = index_.find(static_cast<torch::CapturedTraceback*>(context.get()));
    return it == index_.end() ? py::list() : frames_[it->second];
  }

 private:
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<torch::CapturedTraceback*> pending_;
  std::vector<py::object> frames_;
};

// (0, 0) for general memory, (0, id) for a graph's private pool (CUDA's MempoolId_t).
py::tuple pool_id(uint64_t graph_pool) { return py::make_tuple(0, graph_pool); }

py::dict snapshot_dict() {
  struct DeviceState {
    std::vector<SegmentInfo> segments;
    std::vector<TraceEntry> trace;
  };
  std::vector<DeviceState> devices(static_cast<size_t>(device_count_noexcept()));
  {
    py::gil_scoped_release no_gil;  // the allocator's lock is taken without the GIL
    for (size_t i = 0; i < devices.size(); ++i) {
      auto index = static_cast<c10::DeviceIndex>(i);
      if (!device_initialized(index)) continue;
      devices[i].segments = vk_device(index).allocator().snapshot(&devices[i].trace);
    }
  }
  Symbolizer symbolizer;
  for (auto& d : devices) {
    for (auto& seg : d.segments) {
      symbolizer.add(seg.context);
      for (auto& b : seg.blocks) symbolizer.add(b.context);
    }
    for (auto& e : d.trace) symbolizer.add(e.context);
  }
  symbolizer.run();

  py::list segments;
  py::list device_traces;
  for (size_t i = 0; i < devices.size(); ++i) {
    for (auto& seg : devices[i].segments) {
      py::dict s;
      s["device"] = static_cast<int>(i);
      s["address"] = seg.address;
      s["total_size"] = seg.total_size;
      s["allocated_size"] = seg.allocated_size;
      s["active_size"] = seg.active_size;
      s["requested_size"] = seg.requested_size;
      s["stream"] = seg.stream;
      s["segment_type"] = seg.large ? "large" : "small";
      s["segment_pool_id"] = pool_id(seg.graph_pool);
      s["is_expandable"] = false;
      s["frames"] = symbolizer.frames(seg.context);
      py::list blocks;
      for (auto& b : seg.blocks) {
        py::dict bd;
        bd["address"] = b.address;
        bd["size"] = b.size;
        bd["requested_size"] = b.requested;
        bd["state"] = block_state_name(b.state);
        bd["frames"] = symbolizer.frames(b.context);
        blocks.append(bd);
      }
      s["blocks"] = blocks;
      segments.append(s);
    }
    py::list trace;
    for (auto& e : devices[i].trace) {
      py::dict t;
      t["action"] = action_name(e.action);
      t["addr"] = e.address;
      t["size"] = e.size;
      t["stream"] = e.stream;
      t["time_us"] = e.time_us;
      t["pool_id"] = pool_id(e.graph_pool);
      t["frames"] = symbolizer.frames(e.context);
      if (e.action == TraceAction::Oom) t["device_free"] = e.device_free;
      trace.append(t);
    }
    device_traces.append(trace);
  }
  py::dict settings;
  settings["PYTORCH_VK_ALLOC_CONF"] = "";
  settings["max_split_size"] = -1;
  settings["garbage_collection_threshold"] = 0.0;
  settings["expandable_segments"] = false;
  settings["pinned_num_register_threads"] = 1;
  settings["release_lock_on_malloc"] = false;
  settings["pinned_use_host_register"] = false;
  settings["roundup_power2_divisions"] = py::dict();
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  result["allocator_settings"] = settings;
  result["external_annotations"] = py::list();
  return result;
}

// torch.cuda.memory._record_memory_history's arguments: enabled None / "state" / "all",
// context None / "state" / "alloc" / "all", stacks "python" / "all" (validated by
// torch_vk/memory.py, the public entry point).
void record_memory_history(const std::optional<std::string>& enabled,
                           const std::optional<std::string>& context, const std::string& stacks,
                           size_t max_entries, bool clear_history) {
  MemoryHistoryConfig config;
  config.settings.contexts = enabled.has_value() && context.has_value();
  config.settings.trace = enabled.has_value() && *enabled == "all";
  config.settings.max_entries = max_entries;
  config.free_contexts = config.settings.trace && context && *context == "all";
  if (config.settings.contexts || config.settings.trace) {
    torch::installCapturedTracebackPython();
    const bool cpp = stacks == "all";
    const bool with_frames = context.has_value();
    config.recorder = [cpp, with_frames]() -> AllocationContext {
      if (!with_frames) return {};
      return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, cpp);
    };
  }
  set_memory_history(std::move(config), clear_history);
}

}  // namespace

void register_memory_bindings(py::module_& m) {
  m.def("_record_memory_history", &record_memory_history, py::arg("enabled"),
        py::arg("context"), py::arg("stacks"), py::arg("max_entries"),
        py::arg("clear_history"));
  m.def("_memory_snapshot", &snapshot_dict);
}

}  // namespace tvk::aten
