#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every test: the C++ unit tests of the runtime and
# kernel layers (GoogleTest via ctest) and the Python suite (pytest: tests/python and the
# differential fuzz suite tests/fuzz), all under the Khronos validation layer
# (TORCH_VK_VALIDATION=1): any validation error fails the run.
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
cmake -S . -B build/cpp-tests -G Ninja -DTVK_BUILD_TORCH=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp-tests -j2
(cd build/cpp-tests && ctest --output-on-failure -j2)

phase "Python tests"
"$VPY" -m pytest tests/python tests/fuzz -q -p no:cacheprovider -n "$WORKERS" --dist worksteal

phase "Workflow tests"
"$VPY" -m pytest tests/workflows -q -p no:cacheprovider -n "$WORKERS" --dist worksteal

phase "Serving tests (vLLM on vk, paged attention)"
"$VPY" -m pytest tests/serving -q -p no:cacheprovider

phase "Distributed tests (multi-process: 2 and 3 ranks, torchrun, two network namespaces)"
"$VPY" -m pytest tests/distributed -q -p no:cacheprovider
phase "done"
