#!/usr/bin/env bash
# One measurement run of torch-vk on the GPU machine (NVIDIA H200, Ubuntu image with torch +
# CUDA, no Vulkan loader / headers / glslc, no network). Run from the repository root, as root,
# with .devkit/ made here by scripts/gpu_pack.sh carried along (carry=[".devkit"]).
#
# Steps, each time-boxed; a failed step never ends the run:
#   a. Vulkan loader (.devkit/gl/*.deb unpacked into /), driver discovery, device listing
#   b. the prebuilt C++ tests (alongside c: GPU vs CPU work)    -> $OUT/cpp_tests.txt
#   c. build the extension against the machine's torch (build/gpu, all cores)
#   d. benchmarks/bench_kernels.py --gpu, vk vs CUDA              -> $OUT/bench.json
#   e. a pytest correctness pass on the GPU (no validation layer) -> $OUT/pytest.txt
# Everything is logged to $OUT/log.txt with a timestamp per step.
#
# Knobs (environment): OUT (default /tmp/gpuout); GPU_CHECK_BUDGET total seconds (default 520);
# GPU_CHECK_SMALL=1 (dry run on lavapipe: tiny benchmark shapes, fewer tests);
# GPU_CHECK_CCACHE=1 (compile through ccache when present); GPU_CHECK_TESTS (pytest files);
# GPU_CHECK_BUILD_CAP most seconds for ninja (default 300).
set -u -o pipefail

ROOT=$(pwd)
KIT=$ROOT/.devkit
OUT=${OUT:-/tmp/gpuout}
BUDGET=${GPU_CHECK_BUDGET:-520}
SMALL=${GPU_CHECK_SMALL:-0}
WORK=$(mktemp -d /tmp/gpucheck.XXXXXX)
mkdir -p "$OUT"
T0=$SECONDS

step() { echo; echo "=== $(date -u +%H:%M:%S) +$((SECONDS - T0))s  $*"; }
left() { echo $((BUDGET - (SECONDS - T0))); }
# cap WANT RESERVE: seconds a step may take: WANT, or less so that RESERVE seconds stay for
# the steps after it (at least 10).
cap() {
  local c=$(( $(left) - $2 ))
  [ "$c" -gt "$1" ] && c=$1
  [ "$c" -lt 10 ] && c=10
  echo "$c"
}
# run_capped SECONDS CMD...: runs CMD under timeout, says so when it timed out.
run_capped() {
  local t=$1; shift
  timeout -k 10 "$t" "$@"
  local rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "!!! timed out after ${t}s: $*"; fi
  return "$rc"
}

# Configures and builds the extension in build/gpu and copies _C*.so into torch_vk/.
# Returns non-zero on any failure (explicit checks: errexit does not apply inside `if`).
build_extension() {
  export TORCH_CUDA_ARCH_LIST=9.0     # TorchConfig's CUDA setup: no GPU probing for archs
  if [ -d /usr/local/cuda/bin ]; then export PATH=$PATH:/usr/local/cuda/bin; fi
  local args=(-S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTVK_BUILD_TESTS=OFF
              "-DPython3_EXECUTABLE=$PYEXE" "-DVULKAN_HEADERS_DIR=$KIT/include"
              "-DGLSLC=$KIT/bin/glslc" "-DCMAKE_PREFIX_PATH=$KIT")
  if [ -x "$KIT/cmeel/bin/glslangValidator" ]; then  # the cooperative-matrix shaders (gpu_pack.sh)
    args+=("-DTVK_GLSLANG_VALIDATOR=$KIT/cmeel/bin/glslangValidator"
           "-DTVK_SPIRV_VAL_COOPMAT=$KIT/cmeel/bin/spirv-val")
  fi
  if [ "${GPU_CHECK_CCACHE:-0}" = 1 ] && command -v ccache > /dev/null; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  local pyinc; pyinc=$($PYEXE -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  if [ ! -f "$pyinc/Python.h" ]; then
    echo "no Python.h in $pyinc: using .devkit/python3.12"
    args+=("-DPython3_INCLUDE_DIR=$KIT/python3.12/python3.12")
  fi
  if [ -f "$KIT/spv.tar.gz" ] && [ ! -d build/gpu/generated/spv ]; then
    mkdir -p build/gpu/generated && tar -C build/gpu/generated -xzf "$KIT/spv.tar.gz"
  fi
  local t0=$SECONDS
  if ! run_capped 120 cmake "${args[@]}" > "$WORK/configure.txt" 2>&1; then
    tail -40 "$WORK/configure.txt"
    echo "!!! configure through TorchConfig.cmake failed: retrying with TVK_TORCH_PACKAGE_ONLY=ON"
    rm -rf build/gpu/CMakeCache.txt build/gpu/CMakeFiles
    run_capped 60 cmake "${args[@]}" -DTVK_TORCH_PACKAGE_ONLY=ON || return 1
  else
    grep -vE '^-- (Looking|Performing|Check|Detecting)' "$WORK/configure.txt" | tail -25
  fi
  echo "configure: $((SECONDS - t0))s"
  local t; t=$(cap "${GPU_CHECK_BUILD_CAP:-300}" 220)
  t0=$SECONDS
  run_capped "$t" ninja -C build/gpu -j "$(nproc)" _C || return 1
  echo "ninja: $((SECONDS - t0))s"
  local so
  so=$(ls build/gpu/_C*.so 2>/dev/null | head -1)
  [ -n "$so" ] || { echo "!!! no build/gpu/_C*.so"; return 1; }
  rm -f torch_vk/_C*.so
  cp "$so" torch_vk/ || return 1
  ls -la torch_vk/_C*.so
}

main() {
  echo "gpu_check.sh on $(hostname) $(date -u +%FT%TZ), budget ${BUDGET}s, small=$SMALL, OUT=$OUT"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo '?') ($(git status --porcelain 2>/dev/null | grep -c . || true) changed files)"
  [ -f "$KIT/MANIFEST.txt" ] && head -3 "$KIT/MANIFEST.txt"
  PYEXE=$(command -v python3)
  export PATH=$PATH:$(dirname "$PYEXE")   # the venv's cmake / ninja, if its bin is not on PATH
  echo "cmake: $(command -v cmake) $(cmake --version 2>/dev/null | head -1); ninja: $(command -v ninja) $(ninja --version 2>/dev/null); c++: $(c++ --version 2>/dev/null | head -1)"
  echo "python3: $PYEXE ($($PYEXE -c 'import sys; print(sys.version.split()[0])'))"
  local torch_info
  torch_info=$($PYEXE -c 'import torch; print(torch.__version__, torch.version.cuda, "cuda" if torch.cuda.is_available() else "cpu")' 2>&1 | tail -1)
  echo "torch / CUDA / reference device: $torch_info"
  nproc; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1 || true
  unset TORCH_VK_VALIDATION            # no validation layer on that machine
  export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}

  # ------------------------------------------------------------------------------------- a
  step "a. Vulkan loader and device"
  if ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
    echo "libvulkan.so.1 is installed: no .deb unpacked"
  else
    for f in "$KIT"/gl/*.deb; do dpkg -x "$f" / && echo "unpacked $(basename "$f")"; done
    ldconfig
  fi
  ldconfig -p | grep -E 'libvulkan\.so|libGLX_nvidia|libGLdispatch|libEGL_nvidia' | head
  local icd_dirs="/etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d"
  for d in $icd_dirs; do [ -d "$d" ] && echo "$d: $(ls "$d" | tr '\n' ' ')"; done
  local nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -f "$nv_icd" ] && ! ls /etc/vulkan/icd.d/*nvidia* /usr/share/vulkan/icd.d/*nvidia* \
        /usr/local/share/vulkan/icd.d/*nvidia* > /dev/null 2>&1; then
    export VK_DRIVER_FILES=$nv_icd
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    echo "no NVIDIA ICD in the loader's search path: VK_DRIVER_FILES=$VK_DRIVER_FILES"
    cat "$nv_icd"; echo
  fi
  if [ -x "$KIT/bin/tvk_cpp_tests" ]; then
    VK_LOADER_DEBUG=error,warn run_capped 60 "$KIT/bin/tvk_cpp_tests" --gtest_color=no \
      --gtest_filter='Discovery.DeviceAndCapabilities'
    local probe=$?
    if [ "$probe" != 0 ] && [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv_icd" ]; then
      export VK_DRIVER_FILES=$nv_icd
      export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
      echo "no device: retrying with VK_DRIVER_FILES=$VK_DRIVER_FILES"
      VK_LOADER_DEBUG=error,warn,driver run_capped 60 "$KIT/bin/tvk_cpp_tests" --gtest_color=no \
        --gtest_filter='Discovery.DeviceAndCapabilities'
    fi
  else
    echo "no .devkit/bin/tvk_cpp_tests: the device is listed after the build (step c)"
  fi

  # ------------------------------------------------------------------------------------- b
  step "b. C++ tests (prebuilt), in the background while step c builds"
  local cpp_pid=""
  if [ -x "$KIT/bin/tvk_cpp_tests" ]; then
    local gemm_sizes=1024,2048,4096,8192; [ "$SMALL" = 1 ] && gemm_sizes=128,256
    ( run_capped 120 "$KIT/bin/tvk_cpp_tests" --gtest_color=no \
        --gtest_filter="${GPU_CHECK_GTEST_FILTER:-*}" > "$WORK/cpp.txt" 2>&1
      echo $? > "$WORK/cpp.rc"
      # L2 GEMM alone (no torch layer): float32 throughput of the default tile choice.
      TVK_GEMM_BENCH_SIZES=$gemm_sizes run_capped 40 "$KIT/bin/tvk_cpp_tests" --gtest_color=no \
        --gtest_also_run_disabled_tests --gtest_filter='GemmKernel.DISABLED_Throughput' \
        > "$WORK/cpp_gemm.txt" 2>&1 ) &
    cpp_pid=$!
  else
    echo "skipped: no .devkit/bin/tvk_cpp_tests" | tee "$OUT/cpp_tests.txt"
  fi

  # ------------------------------------------------------------------------------------- c
  step "c. build the extension against torch ${torch_info%% *}"
  local built=0
  if build_extension; then built=1; fi
  echo "build ok: $built"
  if [ "$built" = 1 ]; then
    run_capped 60 "$PYEXE" -m torch_vk info 2>&1
    # The cooperative-matrix GEMM: its state before and after a float16 product (self-check).
    run_capped 90 "$PYEXE" -c 'import torch, torch_vk; C = torch_vk._C; p = C._get_device_properties(0); print("coopmat shapes f16", p["coopmat_f16_shapes"], "bf16", p["coopmat_bf16_shapes"], "state", C._gemm_coopmat_state(), C._gemm_coopmat_state(dtype="bfloat16"))
for dt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
    a = torch.randn(1024, 1024, dtype=dt, device="vk"); r = (a @ a).cpu(); print("after a", name, "product:", C._gemm_coopmat_state(dtype=name), C._last_gemm_algorithm(), "max error", (r.float() - (a.cpu().float() @ a.cpu().float())).abs().max().item())
# The cooperative-matrix attention forward: its state before and after a causal prefill.
import torch.nn.functional as F
for dt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
    q = torch.randn(2, 8, 512, 64, dtype=dt); ref = F.scaled_dot_product_attention(q.float(), q.float(), q.float(), is_causal=True)
    print("attention coopmat", name, "before:", C._attention_coopmat_state(dtype=name), end=" ")
    out = F.scaled_dot_product_attention(q.to("vk"), q.to("vk"), q.to("vk"), is_causal=True).cpu()
    print("after:", C._attention_coopmat_state(dtype=name), C._last_attention_algorithm(), "max error", (out.float() - ref).abs().max().item())
# The cooperative-matrix convolution: its state before and after a ResNet-stage 3x3 forward.
for dt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
    x = torch.randn(8, 64, 28, 28, dtype=dt); w = torch.randn(128, 64, 3, 3, dtype=dt) / 24; ref = F.conv2d(x.float(), w.float(), padding=1)
    print("conv coopmat", name, "before:", C._conv_coopmat_state(dtype=name), end=" ")
    out = F.conv2d(x.to("vk"), w.to("vk"), padding=1).cpu()
    print("after:", C._conv_coopmat_state(dtype=name), C._last_conv_algorithm(), "max error", (out.float() - ref).abs().max().item())' 2>&1
  fi

  if [ -n "$cpp_pid" ]; then
    step "b. C++ test results"
    wait "$cpp_pid"
    local rc; rc=$(cat "$WORK/cpp.rc" 2>/dev/null || echo '?')
    cat "$WORK/cpp.txt" "$WORK/cpp_gemm.txt"
    {
      echo "tvk_cpp_tests exit $rc (cap 120s, alongside the build)"
      grep -E '^\[ +(FAILED|PASSED|SKIPPED) +\]|^\[==========\]|YOU HAVE|timed out' "$WORK/cpp.txt"
      if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "timed out in: $(grep '^\[ RUN' "$WORK/cpp.txt" | tail -1)"
      fi
      echo "--- L2 GEMM throughput (tvk_cpp_tests GemmKernel.DISABLED_Throughput)"
      grep -E '^gemm f32|timed out|FAILED' "$WORK/cpp_gemm.txt"
      echo "--- failure messages"
      grep -B2 -A8 -E 'Failure$|C\+\+ exception' "$WORK/cpp.txt" | head -300
    } > "$OUT/cpp_tests.txt"
    echo "--- summary"; head -6 "$OUT/cpp_tests.txt"
  fi

  # ------------------------------------------------------------------------------------- d
  step "d. kernel benchmark, vk vs ${torch_info##* }"
  if [ "$built" = 1 ] && [ "${GPU_CHECK_SKIP_BENCH:-0}" != 1 ]; then
    local t; t=$(cap 150 90)
    local tiny=(); [ "$SMALL" = 1 ] && tiny=(--tiny)
    run_capped "$t" "$PYEXE" benchmarks/bench_kernels.py --gpu "${tiny[@]}" \
      --budget $((t - 35)) --json "$OUT/bench.json"
    echo "bench exit $?"
  else
    echo "skipped: no extension"
  fi

  step "d2. torch.compile benchmark, eager vs compiled on vk"
  if [ "$built" = 1 ]; then
    local t2; t2=$(cap 75 30)
    run_capped "$t2" "$PYEXE" benchmarks/bench_compile.py --large --quick \
      --json "$OUT/bench_compile.json" 2>&1 | grep -v -i warn | tee "$OUT/bench_compile.txt"
  else
    echo "skipped: no extension"
  fi

  # ------------------------------------------------------------------------------------- e
  step "e. pytest on the device"
  if [ "$built" = 1 ]; then
    local tests=${GPU_CHECK_TESTS:-tests/python/test_compile.py tests/python/test_matmul.py tests/python/test_elementwise.py tests/python/test_models.py tests/python/test_attention.py tests/python/test_attention_dropout.py tests/python/test_attention_coopmat.py tests/python/test_conv_coopmat.py tests/python/test_softmax.py tests/python/test_norm.py tests/python/test_reduce.py tests/python/test_conv.py}
    local t; t=$(cap 150 5)
    # SIGINT: pytest stops and still prints its summary.
    # shellcheck disable=SC2086
    timeout -s INT -k 15 "$t" "$PYEXE" -m pytest -q -p no:cacheprovider --tb=short -rfE \
      --durations=5 $tests > "$WORK/pytest.txt" 2>&1
    local rc=$?
    cat "$WORK/pytest.txt"
    {
      echo "pytest exit $rc (cap ${t}s; 124 = stopped at the cap, summary below): $tests"
      sed -n '/short test summary info/,$p' "$WORK/pytest.txt"
      tail -3 "$WORK/pytest.txt"
    } > "$OUT/pytest.txt"
  else
    echo "skipped: no extension" | tee "$OUT/pytest.txt"
  fi

  step "done in $((SECONDS - T0))s"
}

main 2>&1 | tee -a "$OUT/log.txt"
rm -rf "$WORK"
