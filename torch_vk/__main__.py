"""Command line: ``python -m torch_vk info | bench | coverage | fuzz``."""

from __future__ import annotations

import argparse
import sys


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def cmd_info(args: argparse.Namespace) -> int:
    import torch

    import torch_vk
    from torch_vk import vk

    print(f"torch-vk {torch_vk.__version__}")
    print(f"torch {torch.__version__}")
    native = torch_vk._C
    if native is None:
        print(f"native extension: not loaded ({torch_vk._import_error})")
        return 1
    loader = native._loader_version()
    print(f"Vulkan loader: {loader or 'not found'}")
    print(f"fallback mode: {torch_vk.fallback_mode()}")
    if native._validation_enabled():
        print("validation layer: enabled")
    count = vk.device_count()
    if count == 0:
        print(f"vk devices: none ({vk._unavailable_reason()})")
        return 1
    print(f"vk devices: {count}")
    for i in range(count):
        p = native._get_device_properties(i)
        print()
        print(f"vk:{i}  {p['name']}")
        print(f"  vendor            {p['vendor']} (0x{p['vendor_id']:04x}), device 0x{p['device_id']:04x}")
        print(f"  type              {p['device_type']}")
        print(f"  driver            {p['driver_name']} {p['driver_info']}".rstrip())
        print(f"  driver version    {p['driver_version']}")
        print(f"  API version       {p['api_version']}")
        print(f"  memory            {_mib(p['total_memory'])} "
              f"({'unified' if p['unified_memory'] else 'discrete'} memory)")
        if p.get("missing_requirements"):
            print(f"  NOT USABLE        missing: {p['missing_requirements']}")
        print("  capabilities")
        print(f"    float16 {_yes(p['float16'])}, float64 {_yes(p['float64'])}, "
              f"int8 {_yes(p['int8'])}, int16 {_yes(p['int16'])}, int64 {_yes(p['int64'])}")
        print(f"    8-bit storage {_yes(p['storage_8bit'])}, "
              f"16-bit storage {_yes(p['storage_16bit'])}")
        ops = [name for name in ("basic", "vote", "arithmetic", "ballot", "shuffle")
               if p[f"subgroup_{name}"]]
        print(f"    subgroup size {p['subgroup_size']}, ops: {', '.join(ops) or 'none'}")
        print(f"    cooperative matrix {_yes(p['cooperative_matrix'])}, "
              f"buffer device address {_yes(p['buffer_device_address'])}, "
              f"timeline semaphore {_yes(p['timeline_semaphore'])}")
        print(f"    float32 atomic add {_yes(p['float32_atomic_add'])}, "
              f"int64 atomics {_yes(p['int64_atomics'])}, "
              f"memory budget {_yes(p['memory_budget'])}")
        print(f"    texel buffers {_yes(p['texel_buffers'])}, 16-bit {_yes(p['texel_16bit'])} "
              f"(maxTexelBufferElements {p['max_texel_buffer_elements']})")
        print("  limits")
        print(f"    maxStorageBufferRange        {p['max_storage_buffer_range']} "
              f"({_mib(p['max_storage_buffer_range'])})")
        print(f"    maxMemoryAllocationSize      {_mib(p['max_memory_allocation_size'])}")
        print(f"    maxBufferSize                {_mib(p['max_buffer_size'])}")
        print(f"    sparse binding (tensors past one allocation) {_yes(p['sparse_binding'])}")
        print(f"    maxComputeWorkGroupCount     {tuple(p['max_workgroup_count'])}")
        print(f"    maxComputeWorkGroupSize      {tuple(p['max_workgroup_size'])}")
        print(f"    maxComputeWorkGroupInvocations {p['max_workgroup_invocations']}")
        print(f"    maxComputeSharedMemorySize   {p['max_shared_memory_size']} bytes")
        print(f"    maxPushConstantsSize         {p['max_push_constants_size']} bytes")
        loops = p.get('max_loop_iterations', 0)
        print(f"    loop iterations/invocation   {loops if loops else 'no limit'}")
        ts = p["timestamp_period_ns"]
        print(f"    timestampPeriod              {f'{ts} ns' if ts else 'no timestamps'}")
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from torch_vk import coverage

    return coverage.main(args)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from torch_vk import fuzz

    if args.list:
        for name in fuzz.op_names(args.ops):
            print(name)
        return 0
    if args.replay is not None:
        names = fuzz.op_names(args.ops)
        if len(names) != 1:
            print("--replay needs --ops naming exactly one op (e.g. --ops '^sum$')")
            return 2
        return 1 if fuzz.fuzz_one(names[0], args.replay) else 0
    failures = fuzz.fuzz(args.cases, seed=args.seed, pattern=args.ops,
                         stop_after=args.stop_after, verbose=args.verbose)
    return 1 if failures else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from torch_vk import bench

    return bench.main(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_vk",
                                     description="torch-vk: PyTorch on Vulkan devices")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, devices, capabilities and limits")
    p_info.set_defaults(func=cmd_info)
    p_bench = sub.add_parser("bench", help="kernel, model-step and compile benchmarks of vk "
                                           "against the CPU (and CUDA when present)")
    from torch_vk import bench

    bench.add_arguments(p_bench)
    p_bench.set_defaults(func=cmd_bench)
    p_cov = sub.add_parser("coverage",
                           help="OpInfo conformance of the native vk kernels against the CPU")
    from torch_vk import coverage

    coverage.add_arguments(p_cov)
    p_cov.set_defaults(func=cmd_coverage)
    p_fuzz = sub.add_parser("fuzz", help="differential fuzzing of the vk ops against the CPU")
    p_fuzz.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    p_fuzz.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    p_fuzz.add_argument("--ops", default=None, help="regular expression selecting op names")
    p_fuzz.add_argument("--stop-after", type=int, default=50,
                        help="stop after this many failures (0: never; default 50)")
    p_fuzz.add_argument("--list", action="store_true", help="list the fuzzed ops and exit")
    p_fuzz.add_argument("--replay", type=int, default=None, metavar="CASE_SEED",
                        help="rerun the one case of a failure report (with --ops naming its op)")
    p_fuzz.add_argument("-v", "--verbose", action="store_true", help="print every case")
    p_fuzz.set_defaults(func=cmd_fuzz)
    args, _unknown = parser.parse_known_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
