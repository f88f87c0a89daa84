#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every test, all under the Khronos validation layer
# (TORCH_VK_VALIDATION=1: any validation error fails the run): the C++ unit tests of the
# runtime and kernel layers (GoogleTest via ctest) and the Python suite (pytest: tests/python
# and the differential fuzz suite tests/fuzz) on the system's lavapipe (Debian 12: Mesa 22.3),
# then both again on Mesa 25.0's lavapipe (scripts/mesa25.sh); then the workflow,
# serving and distributed suites. Each phase prints when it starts; each pytest run its
# slowest tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

export TORCH_VK_VALIDATION=1
export TORCH_VK_CACHE_DIR="${TORCH_VK_CACHE_DIR:-$PWD/.cache/torch_vk}"
VPY=.venv/bin/python
# The single-process suites run on every core (pytest-xdist; each worker is a process with its
# own device); the multi-process suites (serving, distributed) start their own processes.
WORKERS=${TORCH_VK_TEST_WORKERS:-$(nproc)}
phase() { echo "== $1 (at ${SECONDS}s)"; }

phase "C++ tests"
# Built in the extension's own CMake tree (setup.py's build directory): the runtime and kernel
# libraries compiled for the extension are the ones the tests link, not compiled a second time.
BUILD_TYPE=${TORCH_VK_BUILD_TYPE:-Release}
BUILD_DIR=${TORCH_VK_BUILD_DIR:-build/$("$VPY" -c "import sys, sysconfig; print(f'{sysconfig.get_platform()}-{sys.implementation.cache_tag}')")-${BUILD_TYPE,,}}
cmake -S . -B "$BUILD_DIR" -DTVK_BUILD_TESTS=ON -DTVK_REQUIRE_COOPMAT_SHADERS=ON >/dev/null
cmake --build "$BUILD_DIR" --target tvk_cpp_tests -j"$WORKERS"
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$WORKERS")

phase "Python tests"
"$VPY" -m pytest tests/python tests/fuzz -q -p no:cacheprovider --durations=15 -n "$WORKERS" --dist worksteal

phase "C++ and Python tests again on Mesa 25's lavapipe (sparse binding, a 3 GiB tensor, barrier-free groups reversed)"
# Portability: the same suites on a second driver release. Mesa 25.0 (bookworm-backports,
# unpacked beside the system's by scripts/mesa25.sh; nothing is installed into the system)
# differs from 22.3 in its shader compiler (which found real bugs: folded abs(sqrt(x)), fused
# multiply-adds in grid_sample's coordinates) and has sparse binding, so
# tests/python/test_big_tensors.py runs its 3 GiB tensor here (TORCH_VK_EXPECT_SPARSE_BINDING=1
# makes the error path a failure), while on 22.3 above it took the clean-error path.
# --tb=short: a failing test holding a 3 GiB tensor must not have pytest print its storage
# element by element.
# This pass also records every barrier-free group of commands in reverse order
# (TORCH_VK_BARRIERS=reverse, runtime/stream.h): lavapipe runs commands one after another, so a
# kernel that declares less memory than it touches (hazard tracking) would pass the first pass
# and fail here.
MESA25_ENV=$(bash scripts/mesa25.sh)
(
  eval "$MESA25_ENV"
  export TORCH_VK_EXPECT_SPARSE_BINDING=1 TORCH_VK_BARRIERS=reverse
  (cd "$BUILD_DIR" && ctest --output-on-failure -j"$WORKERS")
  "$VPY" -m pytest tests/python tests/fuzz -q -p no:cacheprovider --tb=short --durations=5 \
    -n "$WORKERS" --dist worksteal
)

phase "Workflow tests"
"$VPY" -m pytest tests/workflows -q -p no:cacheprovider --durations=10 -n "$WORKERS" --dist worksteal

phase "Serving tests (vLLM on vk, paged attention)"
"$VPY" -m pytest tests/serving -q -p no:cacheprovider --durations=10

phase "Distributed tests (multi-process: 2 and 3 ranks, torchrun, two network namespaces)"
"$VPY" -m pytest tests/distributed -q -p no:cacheprovider --durations=10
phase "done"
