// torch_vk._C bindings of L1 graph capture / replay (src/runtime/graph.h), for the
// torch.compile runner (torch_vk/compiler/):
//
//   g = torch_vk._C._CapturedGraph()
//   torch_vk._C._begin_capture(g)   # on the current vk stream of the current device
//   try: ... ops ...
//   finally: torch_vk._C._end_capture(g)
//   g.replay()                      # on the current stream, which must be the capture stream
//   g.valid, g.invalid_reason, g.command_count, g.pool_bytes, g.param_bytes, g.capturing
//
// Errors: misuse (replay on another stream) raises ValueError; a forbidden operation during
// capture (.item(), .cpu(), synchronize, ...) raises RuntimeError and leaves the graph invalid;
// replaying an invalid or unfinished graph raises RuntimeError.
#include <torch/csrc/utils/pybind.h>

#include <c10/util/Exception.h>

#include <memory>
#include <stdexcept>

#include "aten/generator.h"
#include "aten/vk_common.h"
#include "runtime/graph.h"
#include "runtime/stream.h"

namespace py = pybind11;

namespace tvk::aten {
namespace {

// std::invalid_argument becomes ValueError; the rest RuntimeError (via torch's translator).
template <typename Fn>
void run_checked(Fn&& fn) {
  try {
    translate_errors(fn);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  } catch (const std::logic_error& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace

void register_graph_bindings(py::module_& m) {
  py::class_<tvk::CapturedGraph, std::unique_ptr<tvk::CapturedGraph>>(
      m, "_CapturedGraph",
      "A captured command graph (L1 CapturedGraph). Fill it with _begin_capture / _end_capture; "
      "replay() records all its commands again on the capture stream, with no per-op work.")
      .def(py::init<>())
      .def(
          "replay",
          [](tvk::CapturedGraph& g) { run_checked([&] { tvk::aten::replay_graph(g, current_stream()); }); },
          "Records every captured command again on the current stream (the capture stream). "
          "Never waits.")
      .def_property_readonly("valid", &tvk::CapturedGraph::valid)
      .def_property_readonly("invalid_reason", &tvk::CapturedGraph::invalid_reason)
      .def_property_readonly("command_count", &tvk::CapturedGraph::command_count)
      .def_property_readonly("pool_bytes", &tvk::CapturedGraph::pool_bytes)
      .def_property_readonly("param_bytes", &tvk::CapturedGraph::param_bytes)
      .def_property_readonly("capturing", &tvk::CapturedGraph::capturing)
      .def_property_readonly("captured", &tvk::CapturedGraph::captured);
  m.def(
      "_begin_capture",
      [](tvk::CapturedGraph& g) { run_checked([&] { current_stream().begin_capture(g); }); },
      py::arg("graph"),
      "Starts capturing the current vk stream's commands into `graph` (a new _CapturedGraph).");
  m.def(
      "_end_capture",
      [](tvk::CapturedGraph& g) {
        run_checked([&] {
          if (g.capturing()) g.stream()->end_capture();
        });
      },
      py::arg("graph"),
      "Ends the capture into `graph` (on its capture stream); a no-op when it is not capturing. "
      "Always call it (try/finally).");
}

}  // namespace tvk::aten
