"""GLSL source for a fused element-wise kernel.

A fused kernel evaluates a small program of op-table calls per element of one index space
(the group's shape) and stores some of the values. Its interface with the runtime
(torch_vk._C._launch_kernel) is a list of buffer device addresses: outputs first, then inputs.
Shapes, strides and scalars are compile-time constants (a kernel is specialised per input
geometry), so the index arithmetic folds to multiplies and constant divisions.

Values follow the eager kernels' semantics exactly: each op computes in its compute kind
(float32 "opmath" for float16 / bfloat16 / float32), and its result is rounded to the op's
output dtype before the next op reads it, as if it had been stored and loaded again.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

# tvk::kernels::DType codes (shaders/common.glsl DT_*).
DTYPE_CODE = {
    torch.bool: 0, torch.uint8: 1, torch.int8: 2, torch.int16: 3, torch.int32: 4,
    torch.int64: 5, torch.float16: 6, torch.bfloat16: 7, torch.float32: 8, torch.float64: 9,
}

# tvk::kernels::ComputeKind codes (shaders/common.glsl KIND_*).
KIND_FLOAT32, KIND_INT32, KIND_INT64, KIND_FLOAT64 = 0, 1, 2, 3
KIND_NAMES = {KIND_FLOAT32: "float32", KIND_INT32: "int32", KIND_INT64: "int64",
              KIND_FLOAT64: "float64"}

MAX_INDEX = 2**31 - 1


def compute_kind(dtype: torch.dtype) -> int | None:
    if dtype in (torch.float16, torch.bfloat16, torch.float32):
        return KIND_FLOAT32
    if dtype == torch.float64:
        return KIND_FLOAT64
    if dtype == torch.int64:
        return KIND_INT64
    if dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32):
        return KIND_INT32
    return None


def literal(value: Any, kind: int) -> str:
    """`value` as a GLSL expression of the kind's type, converted the way the eager launchers
    convert scalar arguments (float32: rounded from double; integers: C conversion with
    wrap-around)."""
    if isinstance(value, bool):
        value = int(value)
    if kind == KIND_FLOAT32:
        as_float = float(value)
        try:
            bits = struct.unpack("<I", struct.pack("<f", as_float))[0]
        except OverflowError:  # beyond float32's range: C's conversion gives +-inf
            bits = 0x7F800000 if as_float > 0 else 0xFF800000
        return f"uintBitsToFloat(0x{bits:08x}u)"
    if kind == KIND_FLOAT64:
        lo, hi = struct.unpack("<II", struct.pack("<d", float(value)))
        return f"packDouble2x32(uvec2(0x{lo:08x}u, 0x{hi:08x}u))"
    if isinstance(value, float):
        as_int = int(value) if value == value and abs(value) != float("inf") else 0
    else:
        as_int = int(value)
    if kind == KIND_INT32:
        wrapped = (as_int + 2**31) % 2**32 - 2**31
        return f"int({wrapped})" if wrapped != -2**31 else "int(0x80000000)"
    wrapped = (as_int + 2**63) % 2**64 - 2**63
    if wrapped == -2**63:
        return "(int64_t(-9223372036854775807l) - int64_t(1l))"
    return f"int64_t({wrapped}l)"


def round_to_dtype(expr: str, dtype: torch.dtype, kind: int, bool_result: bool) -> str:
    """The value of `expr` (kind's type) after a store to `dtype` and a load back."""
    if bool_result:
        return expr  # already 1 or 0
    if dtype == torch.bool:
        return f"tvk_bool(tvk_truth({expr}))"
    if kind == KIND_FLOAT32:
        if dtype == torch.float16:
            return f"tvk_half_to_float(tvk_float_to_half({expr}))"
        if dtype == torch.bfloat16:
            return f"tvk_bf16_to_float(tvk_float_to_bf16({expr}))"
        return expr
    if kind == KIND_INT32:
        if dtype == torch.uint8:
            return f"(({expr}) & 255)"
        if dtype == torch.int8:
            return f"((({expr}) << 24) >> 24)"
        if dtype == torch.int16:
            return f"((({expr}) << 16) >> 16)"
    return expr


@dataclass
class Step:
    """One op-table call of the program. Operands are ('in', j), ('val', k) or ('lit', value)."""
    op: str
    expression: str
    operands: list[tuple[str, Any]]
    operand_dtypes: list[torch.dtype]
    scalars: tuple[Any, Any]
    out_dtype: torch.dtype
    bool_result: bool


@dataclass
class Program:
    kind: int
    steps: list[Step]
    input_dtypes: list[torch.dtype]
    outputs: list[tuple[int, torch.dtype]]   # (step index, output dtype)
    # Inputs that are host scalars (0-dim CPU tensors): passed by value, as int64 arguments
    # in integer kinds and float32 arguments in the float32 kind, not as addresses.
    input_is_scalar: list[bool] = field(default_factory=list)

    @property
    def scalars_as_floats(self) -> bool:
        """Host scalars travel as float32 arguments (float kinds) or int64 ones."""
        return self.kind in (KIND_FLOAT32, KIND_FLOAT64)

    def scalar_inputs(self) -> list[int]:
        return [j for j, s in enumerate(self.input_is_scalar) if s]

    def tensor_inputs(self) -> list[int]:
        return [j for j in range(len(self.input_dtypes))
                if not (self.input_is_scalar and self.input_is_scalar[j])]


def coalesce(sizes: Sequence[int], strides: Sequence[Sequence[int]]):
    """Drops size-1 dims and merges neighbours that are contiguous in every stride array.
    Returns (sizes, strides) with the fastest dim last."""
    dims = [(s, [st[d] for st in strides]) for d, s in enumerate(sizes) if s != 1]
    merged: list[tuple[int, list[int]]] = []
    for size, st in dims:
        if merged:
            prev_size, prev_st = merged[-1]
            if all(p == c * size for p, c in zip(prev_st, st)):
                merged[-1] = (prev_size * size, st)
                continue
        merged.append((size, st))
    return [m[0] for m in merged], [[m[1][k] for m in merged] for k in range(len(strides))]


def max_offset(sizes: Sequence[int], strides: Sequence[int]) -> int:
    return sum((s - 1) * abs(st) for s, st in zip(sizes, strides))


def _element_lines(program: Program, sizes: Sequence[int], strides: Sequence[Sequence[int]],
                   index: str, block: str, indent: str,
                   value_inputs: dict[int, str] | None = None,
                   first_input_slot: int | None = None,
                   only_steps: set[int] | None = None,
                   store_guards: dict[int, str] | None = None) -> list[str]:
    """Statements that evaluate `program` at element `index` (a uint expression, row-major over
    the coalesced `sizes`): load the inputs, run the steps, store the outputs.
    strides: outputs first, then the tensor inputs that are loaded (value_inputs excluded), each
    with an address in `block`.addr in that order, except that the loaded inputs' addresses
    start at slot `first_input_slot` (default: right after the outputs). value_inputs[j]:
    input j is this expression (of T) instead of a load. only_steps: evaluate just these steps
    (which must not read the others) and store nothing. store_guards[o]: output o is stored only
    where this condition holds."""
    value_inputs = value_inputs or {}
    n_out = len(program.outputs)
    first_input_slot = n_out if first_input_slot is None else first_input_slot
    loaded = [j for j in program.tensor_inputs() if j not in value_inputs]
    scalar_inputs = program.scalar_inputs()
    n_args = len(strides)
    lines = []
    ndim = len(sizes)
    if ndim == 1:
        coords = [f"int({index})"]
    else:
        lines.append(f"{indent}uint r = {index};")
        for d in range(ndim - 1, -1, -1):
            if d == 0:
                lines.append(f"{indent}int c{d} = int(r);")
            else:
                lines.append(f"{indent}int c{d} = int(r % {sizes[d]}u); r /= {sizes[d]}u;")
        coords = [f"c{d}" for d in range(ndim)]
    offsets = []
    for k in range(n_args):
        terms = []
        for d in range(ndim):
            st = strides[k][d]
            if st == 0:
                continue
            terms.append(coords[d] if st == 1 else f"{coords[d]} * {st}")
        offsets.append(" + ".join(terms) if terms else "0")
    addr = f"{block}.addr"
    for slot, j in enumerate(loaded):
        dtype = program.input_dtypes[j]
        lines.append(f"{indent}T x{j} = LOAD_T({addr}[{first_input_slot + slot}], {DTYPE_CODE[dtype]}, "
                     f"{offsets[n_out + slot]});")
    for j, expression in value_inputs.items():
        lines.append(f"{indent}T x{j} = {expression};")
    float_args = program.scalars_as_floats
    for slot, j in enumerate(scalar_inputs):
        source = f"{block}.fvals[{slot}]" if float_args else f"{block}.ivals[{slot}]"
        lines.append(f"{indent}T x{j} = T({source});")
    kind = program.kind
    for k, step in enumerate(program.steps):
        if only_steps is not None and k not in only_steps:
            continue
        lines.append(f"{indent}T v{k};")
        body = []
        for name_, (tag, ref), dtype in zip("abc", step.operands, step.operand_dtypes):
            if tag == "in":
                value = f"x{ref}"
            elif tag == "val":
                value = f"v{ref}"
            else:
                value = literal(ref, kind)
            body.append(f"T {name_} = {value};")
        body.append(f"T s0 = {literal(step.scalars[0], kind)}; T s1 = {literal(step.scalars[1], kind)};")
        codes = [DTYPE_CODE[step.out_dtype]] + [DTYPE_CODE[d] for d in step.operand_dtypes]
        codes += [codes[0]] * (4 - len(codes))
        body.append("const int dt0 = %d, dt1 = %d, dt2 = %d, dt3 = %d;" % tuple(codes[:4]))
        expr = f"({step.expression})"
        if step.bool_result:
            expr = f"({expr} ? T(1) : T(0))"
        body.append(f"v{k} = {round_to_dtype(expr, step.out_dtype, kind, step.bool_result)};")
        lines.append(f"{indent}{{ " + " ".join(body) + " }")
    if only_steps is not None:
        return lines
    store_guards = store_guards or {}
    for o, (k, dtype) in enumerate(program.outputs):
        store = f"STORE_T({addr}[{o}], {DTYPE_CODE[dtype]}, {offsets[o]}, v{k});"
        if o in store_guards:
            store = f"if ({store_guards[o]}) {store}"
        lines.append(f"{indent}{store}")
    return lines


def _arg_members(n_addresses: int, n_ints: int, n_floats: int) -> str:
    members = [f"uint64_t addr[{n_addresses}];"]
    if n_ints:
        members.append(f"int64_t ivals[{n_ints}];")
    if n_floats:
        members.append(f"float fvals[{n_floats}];")
    return " ".join(members)


def kernel_prologue(name: str, kind: int, members: str, indirect: bool,
                    shared: Sequence[str] = ()) -> tuple[list[str], str]:
    """The lines of a generated kernel up to and including the start of main() (headers,
    argument block `members` in the push constants or, when `indirect`, behind a device address;
    `shared` declarations), and the name of the argument block ("pc" or "args")."""
    lines = [
        "#version 460",
        f"// {name}: generated by torch_vk.compiler",
        "#extension GL_GOOGLE_include_directive : require",
        f"#define KIND {kind}",
        '#include "common.glsl"',
        '#include "math.glsl"',
        '#include "ops.glsl"',
        "layout(local_size_x_id = 0) in;",
    ]
    if indirect:
        lines += [
            "layout(push_constant) uniform Push { uint64_t args; } pc;",
            "layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Args "
            f"{{ {members} }};",
        ]
    else:
        lines.append(f"layout(push_constant) uniform Push {{ {members} }} pc;")
    lines += list(shared) + ["void main() {"]
    if indirect:
        lines.append("  Args args = Args(pc.args);")
    return lines, "args" if indirect else "pc"


def generate(program: Program, sizes: Sequence[int], strides: Sequence[Sequence[int]],
             indirect: bool, name: str) -> str:
    """Kernel source for `program` over `sizes`; strides[k] are the element strides of operand k
    (outputs first, then inputs), aligned with sizes. numel and every offset fit in int32."""
    sizes, strides = coalesce(sizes, strides)
    numel = 1
    for s in sizes:
        numel *= s
    scalar_inputs = program.scalar_inputs()
    float_args = program.scalars_as_floats
    members = _arg_members(len(strides), 0 if float_args else len(scalar_inputs),
                           len(scalar_inputs) if float_args else 0)
    lines, block = kernel_prologue(name, program.kind, members, indirect)
    lines += [
        f"  const uint n = {numel}u;",
        "  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;",
        "  for (uint i = gl_GlobalInvocationID.x; i < n; i += step) {",
    ]
    lines += _element_lines(program, sizes, strides, "i", block, "    ")
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def generate_gemm_epilogue(program: Program, sizes: Sequence[int],
                           strides: Sequence[Sequence[int]], gemm_input: int,
                           gemm_dtype: torch.dtype, n_columns: int, store_product: bool) -> str:
    """The `gemm_epilogue` function (src/kernels/gemm.h) that evaluates `program` for each element
    of a GEMM's m x n_columns product: input `gemm_input` is the product, rounded to gemm_dtype,
    and the program's index space `sizes` is the product's elements in row-major order.
    strides: the outputs', then the other tensor inputs' (aligned with sizes).
    Argument block: the outputs' addresses, then (store_product) a contiguous tensor that
    receives the product itself, then the other tensor inputs; then the host scalars as float32."""
    n_out = len(program.outputs)
    sizes, strides = coalesce(sizes, strides)
    n_addresses = len(strides) + (1 if store_product else 0)
    members = _arg_members(n_addresses, 0, len(program.scalar_inputs()))
    # No name in the text: equal epilogues of different groups share their GEMM pipelines.
    lines = [
        "layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer EpilogueArgs "
        f"{{ {members} }};",
        "void gemm_epilogue(uint64_t args_address, int bt, int m, int n, T gemm_value) {",
        "  EpilogueArgs args = EpilogueArgs(args_address);",
        f"  uint i = uint(m) * {n_columns}u + uint(n);",
        f"  T product = {round_to_dtype('gemm_value', gemm_dtype, program.kind, False)};",
    ]
    if store_product:
        lines.append(f"  STORE_T(args.addr[{n_out}], {DTYPE_CODE[gemm_dtype]}, int(i), product);")
    lines += _element_lines(program, sizes, strides, "i", "args", "  ", {gemm_input: "product"},
                            n_out + (1 if store_product else 0))
    lines += ["}", ""]
    return "\n".join(lines)
