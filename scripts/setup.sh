#!/usr/bin/env bash
# Installs everything torch-vk needs on a fresh Debian 12/13 machine (run as root, or with
# sudo available) and builds + installs the package into ./.venv (editable).
#   - Debian packages: compiler, CMake, Ninja, the Vulkan loader/headers, glslc, the Mesa
#     Vulkan drivers (lavapipe runs Vulkan on the CPU), the Khronos validation layer, GoogleTest,
#     and glslang + SPIRV-Tools (static libraries: the run-time compiler of torch.compile's
#     generated kernels).
#   - Python: a virtual environment with torch (2.11-2.14; default torch==2.13.0), the test
#     tools (pytest, hypothesis for tests/fuzz), safetensors (checkpoint tests) and matplotlib
#     (the example's loss curve), then
#     `pip install --no-build-isolation .`.
# Environment: TORCH_VK_TORCH_SPEC (pip requirement for torch, default "torch==2.13.0").
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need_apt=0
for tool in cmake ninja g++ glslc; do command -v "$tool" >/dev/null 2>&1 || need_apt=1; done
for f in /usr/include/vulkan/vulkan.h /usr/include/gtest/gtest.h \
         /usr/include/glslang/Public/ShaderLang.h /usr/include/spirv-tools/optimizer.hpp; do
  [ -e "$f" ] || need_apt=1
done
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need_apt=1
ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1 || need_apt=1
if [ "$need_apt" = 1 ]; then
  echo "== installing Debian packages"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    build-essential cmake ninja-build pkg-config \
    libvulkan1 libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools \
    glslang-dev spirv-tools libgtest-dev python3-dev python3-venv
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
if ! "$VPY" -c "import torch" >/dev/null 2>&1; then
  echo "== installing ${TORCH_VK_TORCH_SPEC:-torch==2.13.0}"
  "$VPY" -m pip install -q "${TORCH_VK_TORCH_SPEC:-torch==2.13.0}"
fi
"$VPY" -m pip install -q --upgrade "setuptools>=70.1" wheel pytest expecttest numpy safetensors matplotlib \
  "hypothesis==6.155.2"

echo "== building torch-vk"
# Editable install: the extension is built into ./torch_vk, so the package imported from this
# checkout (the working directory is on sys.path for `python -c` / `python -m`) is the
# installed one.
"$VPY" -m pip install -q --no-build-isolation -e .
"$VPY" -c "import torch, torch_vk; print('torch', torch.__version__, '| torch-vk', torch_vk.__version__, '| vk available:', torch.vk.is_available())"
