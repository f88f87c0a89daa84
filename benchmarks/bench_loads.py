"""Cost of the ways a kernel can read memory on the current Vulkan device, per lane.

Each variant is a generated kernel (torch_vk._C._compile_kernel) whose invocations each run a
loop of K reads and accumulate them; the time per (invocation, iteration) is reported beside a
loop of FMAs (no memory access) measured in the same run. On a CPU driver such as lavapipe the
invocations of a subgroup are the SIMD lanes of one core, so these numbers say which access
patterns a kernel for such devices should avoid and which to use (docs/ARCHITECTURE.md, the
GEMM `lanes` and `texel` algorithms; the texel rows need a device with texel buffers). On a
GPU the numbers are dominated by launch overhead and mean little.

It ends with the device's multiply-add rate without memory access next to PyTorch's CPU GEMM
rate from the same run: on a CPU device that ratio bounds what any GEMM kernel can reach.

    python benchmarks/bench_loads.py [--iterations K]
"""
from __future__ import annotations

import argparse
import time

import torch
import torch_vk

HEADER = """#version 460
#extension GL_GOOGLE_include_directive : require
#define KIND 0
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
#if TEXELS
layout(push_constant) uniform Push { uint64_t addr[2]; int64_t first[2]; } pc;
layout(set = 0, binding = 0, r32f) uniform readonly imageBuffer texel1;
layout(set = 0, binding = 1, rgba32f) uniform readonly imageBuffer texel4;
#else
layout(push_constant) uniform Push { uint64_t addr[2]; } pc;
#endif
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Words { uint64_t v[]; };
shared float shared_floats[4096];
"""

# name -> loop body; `lane` is the invocation's index in its workgroup, `acc` the float result.
VARIANTS = {
    "fma (no memory access)": "float y = float(lane); for (int k = 0; k < K; ++k) acc = fma(acc, 0.999, y);",
    "float32, address per lane": "Floats x = Floats(pc.addr[1]); for (int k = 0; k < K; ++k) acc += x.v[(k * 8 + lane) & 4095];",
    "float32, same address in all lanes": "Floats x = Floats(pc.addr[1]); for (int k = 0; k < K; ++k) acc += x.v[k & 4095];",
    "64-bit word, address per lane": "Words x = Words(pc.addr[1]); for (int k = 0; k < K; ++k) acc += uintBitsToFloat(uint(x.v[(k * 8 + lane) & 2047]));",
    "vec4, address per lane": "Vec4s x = Vec4s(pc.addr[1]); for (int k = 0; k < K; ++k) { vec4 w = x.v[(k * 8 + lane) & 1023]; acc += w.x + w.y + w.z + w.w; }",
    "shared memory float32, index per lane": "for (int i = lane; i < 4096; i += 8) shared_floats[i] = Floats(pc.addr[1]).v[i]; barrier(); for (int k = 0; k < K; ++k) acc += shared_floats[(k * 8 + lane) & 4095];",
    "subgroup shuffle": "float r = Floats(pc.addr[1]).v[lane]; for (int k = 0; k < K; ++k) acc += subgroupShuffle(r, uint((k + lane) & 7));",
}
# Storage texel buffer reads (Allocator::texel_view; the GEMM's texel algorithm): `t1` / `t4`
# are the texel indices of x in its r32f / rgba32f views.
TEXEL_VARIANTS = {
    "texel r32f, index per lane": "int t1 = int(pc.first[0]); for (int k = 0; k < K; ++k) acc += imageLoad(texel1, t1 + ((k * 8 + lane) & 4095)).x;",
    "texel rgba32f (4 values), index per lane": "int t4 = int(pc.first[1]); for (int k = 0; k < K; ++k) { vec4 w = imageLoad(texel4, t4 + ((k * 8 + lane) & 1023)); acc += w.x + w.y + w.z + w.w; }",
    "texel r32f, same index in all lanes": "int t1 = int(pc.first[0]); for (int k = 0; k < K; ++k) acc += imageLoad(texel1, t1 + (k & 4095)).x;",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=4096, help="reads per invocation")
    parser.add_argument("--groups", type=int, default=64, help="workgroups of 8 invocations")
    args = parser.parse_args()
    native = torch_vk._C
    x = torch.randn(4096, device="vk")
    out = torch.zeros(args.groups * 8, device="vk")
    print(f"device: {torch.vk.get_device_name()}; {args.groups} workgroups of 8 invocations, "
          f"{args.iterations} iterations each")
    print(f"| access | ms | ns per invocation and iteration |")
    print(f"|---|---:|---:|")
    texels = torch.vk.get_device_properties().texel_buffers
    variants = [(name, body, False) for name, body in VARIANTS.items()]
    if texels:
        variants += [(name, body, True) for name, body in TEXEL_VARIANTS.items()]
    for name, body, texel in variants:
        source = (HEADER.replace("#if TEXELS", f"#if {int(texel)}")
                  + f"const int K = {args.iterations};\n"
                  "void main() {\n  int lane = int(gl_LocalInvocationID.x);\n  float acc = 0.0;\n  "
                  + body + "\n  Floats(pc.addr[0]).v[gl_GlobalInvocationID.x] = acc;\n}\n")
        kernel = native._compile_kernel(source, "bench_loads")
        texel_args = [(x, "r32f"), (x, "rgba32f")] if texel else None

        best = best_time(lambda: native._launch_kernel(kernel, [out, x], [], [], args.groups, 8,
                                                      texel_args))
        per = best * 1e9 / (args.groups * 8 * args.iterations)
        print(f"| {name} | {best * 1e3:.2f} | {per:.2f} |")
    fma_peak(native, out, x, args)


def best_time(launch) -> float:
    """Seconds per call of `launch` (best of 3 rounds of 3 calls, after one warm-up call)."""
    launch()
    torch.vk.synchronize()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(3):
            launch()
        torch.vk.synchronize()
        best = min(best, (time.perf_counter() - start) / 3)
    return best


def fma_peak(native, out, x, args) -> None:
    """The device's multiply-add rate with no memory access (CHAINS independent accumulators
    per invocation, so latency does not bound it, few enough to stay in registers on a CPU
    device, each updated UNROLL times per loop iteration because lavapipe blends every value
    a loop iteration assigns with the loop's lane mask), beside PyTorch's CPU GEMM rate
    measured now: on a CPU device the ratio bounds what any GEMM kernel could reach there."""
    chains, unroll = 8, 4
    groups = max(args.groups, 256)
    body = "".join(f"a{i} = a{i} * y + z;" for i in range(chains)) * unroll
    source = (HEADER.replace("#if TEXELS", "#if 0") + f"const int K = {args.iterations};\n"
              "void main() {\n  float y = 0.999 + 1e-6 * float(gl_LocalInvocationID.x), z = 1e-3;\n"
              + "".join(f"  float a{i} = float({i});\n" for i in range(chains))
              + f"  for (int k = 0; k < K; ++k) {{ {body} }}\n"
              + "  Floats(pc.addr[0]).v[gl_GlobalInvocationID.x] = "
              + " + ".join(f"a{i}" for i in range(chains)) + ";\n}\n")
    kernel = native._compile_kernel(source, "bench_fma_peak")
    wide = torch.zeros(groups * 8, device="vk")
    best = best_time(lambda: native._launch_kernel(kernel, [wide, x], [], [], groups, 8))
    vk_gflops = 2.0 * chains * unroll * args.iterations * groups * 8 / best * 1e-9
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    cpu = min(timed(lambda: a @ b) for _ in range(5))
    cpu_gflops = 2.0 * 512 ** 3 / cpu * 1e-9
    print(f"\nmultiply-add peak (no memory access, {chains} chains x {unroll}): vk {vk_gflops:.1f} GFLOP/s; "
          f"PyTorch CPU mm 512^3 {cpu_gflops:.1f} GFLOP/s; ratio {vk_gflops / cpu_gflops:.3f}")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
