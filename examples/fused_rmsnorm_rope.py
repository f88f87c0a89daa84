"""A custom fused op on vk: RMSNorm followed by rotary position embedding, forward and backward
written as GLSL kernels with torch_vk.compile_shader, registered with torch.library.custom_op
(fake kernel + autograd), checked against plain PyTorch and used to train a tiny model.

    python examples/fused_rmsnorm_rope.py          # checks, then trains 30 steps on vk

The op, for x [T, H, D] (D even, rows of D contiguous), weight [D], cos / sin [T, D / 2]:
    n = x * rsqrt(mean(x^2 over D) + eps) * weight
    y[..., i]       = n[..., i] * cos[t, i] - n[..., i + D/2] * sin[t, i]      (i < D / 2)
    y[..., i + D/2] = n[..., i + D/2] * cos[t, i] + n[..., i] * sin[t, i]
(the rotate-half rotary embedding of Llama-style models). One kernel invocation per (t, h) row
for each direction; float32 / float16 / bfloat16 storage, float32 math.
"""
from __future__ import annotations

import torch

import torch_vk
import torch_vk.shader

_COMMON = """
#version 460
#extension GL_GOOGLE_include_directive : require
#define KIND 0
#include "common.glsl"
layout(local_size_x_id = 0) in;

// rsqrt(mean(x^2) + eps) over the D elements of the row at element `base`.
float row_rsqrt(uint64_t x, int dt, int base, int D, float eps) {
  float ss = 0.0;
  for (int i = 0; i < D; ++i) {
    const float v = load_f32(x, dt, base + i);
    ss = fma(v, v, ss);
  }
  return inversesqrt(ss / float(D) + eps);
}
"""

# Arguments (ABI of torch_vk/shader.py): tensors x, w, cos, sin, y; ints rows, heads, D, dtype;
# float eps. Their declaration (push constants or an indirect block, whichever the device
# needs) comes from Kernel.declare_arguments.
FORWARD_ARGS = (("x", "w", "c", "s", "y"), ("rows", "heads", "D", "dt"), ("eps",))
FORWARD = _COMMON + """
@ARGS@

void main() {
  const int D = int(args.D), half_d = D / 2, dt = int(args.dt);
  for (int row = int(gl_GlobalInvocationID.x); row < int(args.rows);
       row += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    const int base = row * D, t = row / int(args.heads);
    const float r = row_rsqrt(args.x, dt, base, D, args.eps);
    for (int i = 0; i < half_d; ++i) {
      const float a = load_f32(args.x, dt, base + i) * r * load_f32(args.w, dt, i);
      const float b = load_f32(args.x, dt, base + i + half_d) * r * load_f32(args.w, dt, i + half_d);
      const float co = load_f32(args.c, dt, t * half_d + i), si = load_f32(args.s, dt, t * half_d + i);
      store_f32(args.y, dt, base + i, a * co - b * si);
      store_f32(args.y, dt, base + i + half_d, b * co + a * si);
    }
  }
}
"""

# Arguments: tensors grad_y, x, w, cos, sin, grad_x, grad_w_rows (float32 [rows, D]: the
# per-row terms of grad_w, summed by the caller); ints rows, heads, D, dtype; float eps.
BACKWARD_ARGS = (("gy", "x", "w", "c", "s", "gx", "gw"), ("rows", "heads", "D", "dt"), ("eps",))
BACKWARD = _COMMON + """
@ARGS@

void main() {
  const int D = int(args.D), half_d = D / 2, dt = int(args.dt);
  for (int row = int(gl_GlobalInvocationID.x); row < int(args.rows);
       row += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    const int base = row * D, t = row / int(args.heads);
    const float r = row_rsqrt(args.x, dt, base, D, args.eps);
    // grad of n: the inverse rotation of grad_y; then grad of xhat = x * r is grad_n * w, and
    // grad_x = r * (grad_xhat - xhat * mean(grad_xhat * xhat)).
    float dot = 0.0;
    for (int i = 0; i < half_d; ++i) {
      const float ga = load_f32(args.gy, dt, base + i), gb = load_f32(args.gy, dt, base + i + half_d);
      const float co = load_f32(args.c, dt, t * half_d + i), si = load_f32(args.s, dt, t * half_d + i);
      const float gna = ga * co + gb * si, gnb = gb * co - ga * si;
      const float xa = load_f32(args.x, dt, base + i) * r;
      const float xb = load_f32(args.x, dt, base + i + half_d) * r;
      RefF32(tvk_elem_addr(args.gw, base + i, 2)).v = gna * xa;
      RefF32(tvk_elem_addr(args.gw, base + i + half_d, 2)).v = gnb * xb;
      dot += gna * load_f32(args.w, dt, i) * xa + gnb * load_f32(args.w, dt, i + half_d) * xb;
    }
    dot /= float(D);
    for (int i = 0; i < half_d; ++i) {
      const float ga = load_f32(args.gy, dt, base + i), gb = load_f32(args.gy, dt, base + i + half_d);
      const float co = load_f32(args.c, dt, t * half_d + i), si = load_f32(args.s, dt, t * half_d + i);
      const float gna = ga * co + gb * si, gnb = gb * co - ga * si;
      const float xa = load_f32(args.x, dt, base + i) * r;
      const float xb = load_f32(args.x, dt, base + i + half_d) * r;
      store_f32(args.gx, dt, base + i, r * (gna * load_f32(args.w, dt, i) - xa * dot));
      store_f32(args.gx, dt, base + i + half_d,
                r * (gnb * load_f32(args.w, dt, i + half_d) - xb * dot));
    }
  }
}
"""

# torch-vk's dtype codes (src/kernels/kernels.h): the kernels' `dt` argument.
DTYPE_CODES = {torch.float16: 6, torch.bfloat16: 7, torch.float32: 8}
_kernels: dict[str, torch_vk.shader.Kernel] = {}


def _kernel(name: str, source: str, names):
    if name not in _kernels:
        declaration = torch_vk.shader.Kernel.declare_arguments(*names)
        _kernels[name] = torch_vk.compile_shader(source.replace("@ARGS@", declaration), name)
    return _kernels[name]


def _check(x, weight, cos, sin):
    if x.dim() != 3 or x.shape[-1] % 2:
        raise ValueError(f"fused_rmsnorm_rope: x must be [T, H, D] with an even D, got {tuple(x.shape)}")
    if x.dtype not in DTYPE_CODES or {weight.dtype, cos.dtype, sin.dtype} != {x.dtype}:
        raise ValueError("fused_rmsnorm_rope: x, weight, cos and sin must share one of "
                         "float32 / float16 / bfloat16")
    T, _, D = x.shape
    if weight.shape != (D,) or cos.shape != (T, D // 2) or sin.shape != (T, D // 2):
        raise ValueError("fused_rmsnorm_rope: weight must be [D], cos and sin [T, D / 2]")


@torch.library.custom_op("examples::fused_rmsnorm_rope", mutates_args=())
def fused_rmsnorm_rope(x: torch.Tensor, weight: torch.Tensor, cos: torch.Tensor,
                       sin: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    _check(x, weight, cos, sin)
    x, weight, cos, sin = (t.contiguous() for t in (x, weight, cos, sin))
    y = torch.empty_like(x)
    rows = x.shape[0] * x.shape[1]
    if rows:
        _kernel("rmsnorm_rope_forward", FORWARD, FORWARD_ARGS)(
            x, weight, cos, sin, y, rows, x.shape[1], x.shape[2], DTYPE_CODES[x.dtype], float(eps),
            threads=rows, local_size=64)
    return y


@fused_rmsnorm_rope.register_fake
def _(x, weight, cos, sin, eps=1e-6):
    return torch.empty_like(x)


@torch.library.custom_op("examples::fused_rmsnorm_rope_backward", mutates_args=())
def fused_rmsnorm_rope_backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                                cos: torch.Tensor, sin: torch.Tensor,
                                eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    grad_y, x, weight, cos, sin = (t.contiguous() for t in (grad_y, x, weight, cos, sin))
    grad_x = torch.empty_like(x)
    rows = x.shape[0] * x.shape[1]
    grad_w_rows = torch.empty(rows, x.shape[2], dtype=torch.float32, device=x.device)
    if rows:
        _kernel("rmsnorm_rope_backward", BACKWARD, BACKWARD_ARGS)(
            grad_y, x, weight, cos, sin, grad_x, grad_w_rows, rows, x.shape[1], x.shape[2],
            DTYPE_CODES[x.dtype], float(eps), threads=rows, local_size=64)
    return grad_x, grad_w_rows.sum(0).to(weight.dtype)


@fused_rmsnorm_rope_backward.register_fake
def _(grad_y, x, weight, cos, sin, eps):
    return torch.empty_like(x), torch.empty_like(weight)


def _setup_context(ctx, inputs, output):
    x, weight, cos, sin, eps = inputs
    ctx.save_for_backward(x, weight, cos, sin)
    ctx.eps = eps


def _backward(ctx, grad_y):
    x, weight, cos, sin = ctx.saved_tensors
    grad_x, grad_w = fused_rmsnorm_rope_backward(grad_y, x, weight, cos, sin, ctx.eps)
    return grad_x, grad_w, None, None, None


fused_rmsnorm_rope.register_autograd(_backward, setup_context=_setup_context)


def reference(x, weight, cos, sin, eps=1e-6):
    """The same op in plain PyTorch (float32 math)."""
    xf = x.float()
    n = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    a, b = n.chunk(2, dim=-1)
    c, s = cos.float()[:, None, :], sin.float()[:, None, :]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1).to(x.dtype)


def rotary_tables(T, D, dtype=torch.float32, device="cpu", base=10000.0):
    inv = base ** (-torch.arange(0, D // 2, dtype=torch.float64) * 2 / D)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().to(dtype).to(device), angles.sin().to(dtype).to(device)


class TinyRotaryModel(torch.nn.Module):
    """Embedding -> per-head RMSNorm + rotary (the fused op, or `reference`) -> linear head."""

    def __init__(self, vocab=32, heads=2, head_dim=8, fused=True):
        super().__init__()
        self.heads, self.head_dim, self.fused = heads, head_dim, fused
        self.emb = torch.nn.Embedding(vocab, heads * head_dim)
        self.norm_weight = torch.nn.Parameter(torch.ones(head_dim))
        self.head = torch.nn.Linear(heads * head_dim, vocab)

    def forward(self, ids):
        T = ids.shape[0]
        x = self.emb(ids).view(T, self.heads, self.head_dim)
        cos, sin = rotary_tables(T, self.head_dim, x.dtype, x.device)
        op = fused_rmsnorm_rope if self.fused else reference
        y = op(x, self.norm_weight, cos, sin, 1e-6)
        return self.head(y.reshape(T, -1))


def train(device="vk", fused=True, steps=30, seed=0):
    """Next-token training on a fixed random sequence; returns the losses."""
    torch.manual_seed(seed)
    model = TinyRotaryModel(fused=fused).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.randint(0, 32, (17,), generator=torch.Generator().manual_seed(seed)).to(device)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(ids[:-1]), ids[1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    x = torch.randn(5, 3, 16)
    w = torch.rand(16) + 0.5
    cos, sin = rotary_tables(5, 16)
    got = fused_rmsnorm_rope(x.to("vk"), w.to("vk"), cos.to("vk"), sin.to("vk"))
    torch.testing.assert_close(got.cpu(), reference(x, w, cos, sin), atol=1e-5, rtol=1e-5)
    print("forward matches PyTorch")
    vk_losses, cpu_losses = train("vk", fused=True), train("cpu", fused=False)
    for step in (0, 9, 19, 29):
        print(f"step {step:2d}: fused op on vk {vk_losses[step]:.4f}   "
              f"PyTorch on the CPU {cpu_losses[step]:.4f}")


if __name__ == "__main__":
    main()
