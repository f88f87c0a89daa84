"""The cases of ``python -m torch_vk bench``: what is timed, at which sizes, on which targets.

A :class:`Case` knows how to build its timed callable on any device (``Case.build``): the inputs
(and a model's initial weights) are drawn on the CPU from fixed seeds and then copied, so every
target computes the same thing and the first call's results can be compared with the CPU's.
The callable returns a tensor (an op's output, a training step's loss) for that comparison.

Suites:
  - ``kernels``: single ops at a few sizes each (the throughput-vs-size plots);
  - ``models``: training steps (forward, loss, backward, AdamW) of a small MLP, a GPT-like
    decoder and a small CNN, built in-process from random weights;
  - ``compile``: ``torch.compile``'d model calls on vk against the same calls in eager mode on
    vk (and eager on the baselines).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["Target", "Case", "targets_for", "kernel_cases", "model_cases", "compile_cases",
           "suite_cases", "dtype_name", "SUITES", "UNIT_SCALE", "VK", "VK_EAGER"]

SUITES = ("kernels", "models", "compile")

VK = "vk"
VK_EAGER = "vk_eager"

# Throughput units and the number of work units (FLOPs, bytes, samples, ...) in one of them.
UNIT_SCALE = {"GFLOP/s": 1e9, "GB/s": 1e9, "samples/s": 1.0, "tokens/s": 1.0, "images/s": 1.0}

# Loose bounds on max |vk - cpu| / max |cpu| of a case's checked result: wide enough for other
# summation orders and 16-bit rounding, narrow enough to catch a wrong kernel.
RELATIVE_TOLERANCE = {torch.float32: 2e-3, torch.float16: 3e-2, torch.bfloat16: 5e-2}


@dataclasses.dataclass(frozen=True)
class Target:
    """One way a case runs: ``label`` names it in the results ("vk", "cpu", "cuda",
    "vk_eager"), ``device`` is where it runs, ``compiled`` whether through torch.compile."""

    label: str
    device: str
    compiled: bool = False


Builder = Callable[[torch.device, bool], Callable[[], torch.Tensor]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the results.

    ``build(device, compiled)`` returns the callable to time; each call does ``work`` units of
    ``unit`` (FLOPs for GFLOP/s, bytes moved for GB/s, samples / tokens / images for a model
    step). ``x`` is the size on the plot's x axis (``x_label`` says what it counts); cases of
    one ``op`` and ``dtype`` are listed in increasing ``x``. ``targets`` always includes "vk"
    and "cpu"; the "cpu" target's first result is the reference of the others'."""

    suite: str
    op: str
    name: str
    dtype: torch.dtype
    sizes: dict[str, int]
    x: float
    x_label: str
    work: float
    unit: str
    build: Builder
    targets: tuple[Target, ...]

    @property
    def tolerance(self) -> float:
        return RELATIVE_TOLERANCE.get(self.dtype, 2e-3)


def targets_for(suite: str, with_cuda: bool) -> tuple[Target, ...]:
    """vk and the CPU (and CUDA when ``with_cuda``); in the compile suite "vk" is the compiled
    call and "vk_eager" the same call in eager mode on vk (the baselines always run eager)."""
    baselines = (Target("cpu", "cpu"),) + ((Target("cuda", "cuda"),) if with_cuda else ())
    if suite == "compile":
        return (Target(VK, "vk", compiled=True), Target(VK_EAGER, "vk")) + baselines
    return (Target(VK, "vk"),) + baselines


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``."""
    return str(dtype).replace("torch.", "")


# ---------------------------------------------------------------------------------------------
# Kernels


def _op_builder(make_inputs: Callable[[torch.Generator], Sequence[torch.Tensor]],
                call: Callable[..., torch.Tensor]) -> Builder:
    """A builder whose callable is ``call(*inputs)``, the inputs drawn on the CPU by
    ``make_inputs`` from a generator seeded with 0 and copied to the device."""

    def build(device: torch.device, compiled: bool) -> Callable[[], torch.Tensor]:
        inputs = [t.to(device) for t in make_inputs(torch.Generator().manual_seed(0))]
        return lambda: call(*inputs)

    return build


def _normal(gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=gen).to(dtype)


def _add_cases(sizes: Sequence[int], targets: tuple[Target, ...]) -> list[Case]:
    cases = []
    for n in sizes:
        def make(gen: torch.Generator, n: int = n) -> list[torch.Tensor]:
            return [_normal(gen, n), _normal(gen, n), torch.empty(n)]

        cases.append(Case("kernels", "add", f"add n={n}", torch.float32, {"n": n}, n, "elements",
                          12.0 * n, "GB/s",
                          _op_builder(make, lambda a, b, out: torch.add(a, b, out=out)), targets))
    return cases


def _row_cases(op: str, shapes: Sequence[tuple[int, int]],
               targets: tuple[Target, ...]) -> list[Case]:
    """softmax over the last dim, or layer_norm over it with weight and bias: each element is
    read once and written once."""
    cases = []
    for rows, cols in shapes:
        if op == "softmax":
            def make(gen: torch.Generator, rows: int = rows, cols: int = cols) -> list[torch.Tensor]:
                return [_normal(gen, rows, cols)]

            call: Callable[..., torch.Tensor] = lambda t: torch.softmax(t, dim=-1)  # noqa: E731
        else:
            def make(gen: torch.Generator, rows: int = rows, cols: int = cols) -> list[torch.Tensor]:
                return [_normal(gen, rows, cols), _normal(gen, cols), _normal(gen, cols)]

            call = lambda t, w, b: F.layer_norm(t, (t.shape[-1],), w, b)  # noqa: E731
        cases.append(Case("kernels", op, f"{op} {rows}x{cols}", torch.float32,
                          {"rows": rows, "cols": cols}, rows * cols, "elements",
                          8.0 * rows * cols, "GB/s", _op_builder(make, call), targets))
    return cases


def _matmul_cases(sizes: Sequence[int], dtypes: Sequence[torch.dtype],
                  targets: tuple[Target, ...]) -> list[Case]:
    cases = []
    for dtype in dtypes:
        for n in sizes:
            def make(gen: torch.Generator, n: int = n, dtype: torch.dtype = dtype) -> list[torch.Tensor]:
                return [_normal(gen, n, n, dtype=dtype), _normal(gen, n, n, dtype=dtype)]

            cases.append(Case("kernels", "matmul", f"matmul {n}x{n} @ {n}x{n}", dtype, {"n": n},
                              n, "n (n x n @ n x n)", 2.0 * n**3, "GFLOP/s",
                              _op_builder(make, torch.mm), targets))
    return cases


def _conv_cases(shapes: Sequence[tuple[int, int, int]], targets: tuple[Target, ...],
                dtypes: Sequence[torch.dtype] = (torch.float32,)) -> list[Case]:
    """3x3 convolutions with padding 1, C channels in and out (a ResNet stage's shape)."""
    cases = []
    for dtype, (batch, channels, side) in ((d, s) for d in dtypes for s in shapes):
        def make(gen: torch.Generator, batch: int = batch, channels: int = channels,
                 side: int = side, dtype: torch.dtype = dtype) -> list[torch.Tensor]:
            return [_normal(gen, batch, channels, side, side, dtype=dtype),
                    (_normal(gen, channels, channels, 3, 3) * 0.1).to(dtype)]

        cases.append(Case("kernels", "conv2d",
                          f"conv2d N={batch} C={channels} {side}x{side} 3x3", dtype,
                          {"batch": batch, "channels": channels, "height": side, "width": side,
                           "kernel": 3},
                          side, "H = W", 2.0 * batch * channels * channels * side * side * 9,
                          "GFLOP/s", _op_builder(make, lambda t, w: F.conv2d(t, w, padding=1)),
                          targets))
    return cases


def _attention_cases(batch: int, heads: int, head_dim: int, lengths: Sequence[int],
                     targets: tuple[Target, ...]) -> list[Case]:
    """Causal scaled-dot-product attention; FLOPs counted as half of the full 4*B*H*L^2*D."""
    cases = []
    for length in lengths:
        def make(gen: torch.Generator, length: int = length) -> list[torch.Tensor]:
            return [_normal(gen, batch, heads, length, head_dim) for _ in range(3)]

        cases.append(Case("kernels", "sdpa",
                          f"sdpa causal B={batch} H={heads} L={length} D={head_dim}",
                          torch.float32,
                          {"batch": batch, "heads": heads, "seq": length, "head_dim": head_dim},
                          length, "sequence length", 2.0 * batch * heads * length**2 * head_dim,
                          "GFLOP/s",
                          _op_builder(make, lambda q, k, v: F.scaled_dot_product_attention(
                              q, k, v, is_causal=True)), targets))
    return cases


def kernel_cases(quick: bool, with_cuda: bool) -> list[Case]:
    """Element-wise add, softmax, layer_norm, matmul (float32, bfloat16, float16), conv2d (also
    float16 / bfloat16) and SDPA, each at increasing sizes (tiny ones with ``quick``)."""
    targets = targets_for("kernels", with_cuda)
    if quick:
        return (_add_cases([1 << 12, 1 << 16], targets)
                + _row_cases("softmax", [(64, 128), (256, 256)], targets)
                + _row_cases("layer_norm", [(64, 128), (256, 256)], targets)
                + _matmul_cases([64, 128], [torch.float32, torch.bfloat16, torch.float16], targets)
                + _conv_cases([(2, 8, 8), (2, 8, 16)], targets)
                + _conv_cases([(2, 8, 8)], targets, [torch.float16])
                + _attention_cases(1, 2, 16, [32, 64], targets))
    return (_add_cases([1 << p for p in (14, 16, 18, 20, 22, 24)], targets)
            + _row_cases("softmax", [(256, 256), (1024, 1024), (4096, 1024), (8192, 2048)], targets)
            + _row_cases("layer_norm", [(256, 256), (1024, 1024), (4096, 1024), (8192, 2048)],
                         targets)
            + _matmul_cases([128, 256, 512, 1024, 2048, 4096],
                            [torch.float32, torch.bfloat16, torch.float16], targets)
            + _conv_cases([(8, 64, 14), (8, 64, 28), (8, 64, 56)], targets)
            + _conv_cases([(8, 64, 28), (8, 64, 56), (8, 128, 28)], targets,
                          [torch.float16, torch.bfloat16])
            + _attention_cases(4, 8, 64, [128, 256, 512, 1024], targets))


# ---------------------------------------------------------------------------------------------
# Models


class MLPClassifier(nn.Module):
    """Three linear layers with GELU between them: ``width`` features in, ``classes`` logits
    out."""

    def __init__(self, width: int, classes: int = 10):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                    nn.Linear(4 * width, width), nn.GELU(),
                                    nn.Linear(width, classes))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.layers(features)


class DecoderBlock(nn.Module):
    """A pre-norm transformer block: causal multi-head self-attention through
    ``F.scaled_dot_product_attention``, then a 4x-wide GELU MLP, each on a residual path."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.attention_out = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        batch, length, width = hidden.shape
        qkv = self.qkv(self.attention_norm(hidden))
        q, k, v = qkv.view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        hidden = hidden + self.attention_out(mixed.transpose(1, 2).reshape(batch, length, width))
        return hidden + self.mlp(self.mlp_norm(hidden))


class TinyGPT(nn.Module):
    """A GPT-like decoder: token and learned position embeddings, ``layers`` decoder blocks, a
    final LayerNorm and a linear head over the vocabulary."""

    def __init__(self, vocab: int, width: int, heads: int, layers: int, context: int):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(DecoderBlock(width, heads) for _ in range(layers))
        self.final_norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.token_embedding(tokens) + self.position_embedding(positions)
        for block in self.blocks:
            hidden = block(hidden)
        return self.head(self.final_norm(hidden))


def small_cnn(channels: int, classes: int = 10) -> nn.Module:
    """Two conv-batchnorm-ReLU stages with a max-pool between them, global average pooling and
    a linear classifier, for 3-channel images."""
    wide = 2 * channels
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(channels, wide, 3, padding=1, bias=False), nn.BatchNorm2d(wide), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(wide, classes))


def _seeded_model(make_model: Callable[[], nn.Module], device: torch.device) -> nn.Module:
    """``make_model()`` with the global RNG seeded with 0 (and restored afterwards), moved to
    ``device``: the same initial weights on every device."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = make_model()
    return model.to(device)


def _token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, -2), targets.flatten())


def _train_step_builder(make_model: Callable[[], nn.Module],
                        make_batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]],
                        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Builder:
    """A builder whose callable is one training step (zero_grad, forward, loss, backward,
    AdamW step) on a fixed batch and returns the step's loss; with ``compiled`` the model's
    forward (and so its backward) goes through torch.compile."""

    def build(device: torch.device, compiled: bool) -> Callable[[], torch.Tensor]:
        model = _seeded_model(make_model, device).train()
        inputs, targets = (t.to(device) for t in make_batch(torch.Generator().manual_seed(1)))
        forward = _compiled(model) if compiled else model
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step() -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(forward(inputs), targets)
            loss.backward()
            optimizer.step()
            return loss.detach()

        return step

    return build


def _inference_builder(make_model: Callable[[], nn.Module],
                       make_input: Callable[[torch.Generator], torch.Tensor]) -> Builder:
    """A builder whose callable is the model's forward in eval mode under ``no_grad``."""

    def build(device: torch.device, compiled: bool) -> Callable[[], torch.Tensor]:
        model = _seeded_model(make_model, device).eval()
        inputs = make_input(torch.Generator().manual_seed(1)).to(device)
        forward = _compiled(model) if compiled else model

        def call() -> torch.Tensor:
            with torch.no_grad():
                return forward(inputs)

        return call

    return build


def _compiled(model: nn.Module) -> Callable[..., Any]:
    """``torch.compile(model)`` after clearing Dynamo's caches, so that earlier cases' graphs
    neither count against its recompile limit nor get reused."""
    torch._dynamo.reset()
    return torch.compile(model)


@dataclasses.dataclass(frozen=True)
class _GPTShape:
    vocab: int
    width: int
    heads: int
    layers: int
    context: int
    batch: int

    def sizes(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    def model(self) -> TinyGPT:
        return TinyGPT(self.vocab, self.width, self.heads, self.layers, self.context)

    def tokens(self, gen: torch.Generator) -> torch.Tensor:
        return torch.randint(0, self.vocab, (self.batch, self.context), generator=gen)


def _mlp_train_case(suite: str, batch: int, width: int, targets: tuple[Target, ...]) -> Case:
    def batch_of(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return _normal(gen, batch, width), torch.randint(0, 10, (batch,), generator=gen)

    return Case(suite, "mlp train step", f"mlp train step batch={batch} width={width}",
                torch.float32, {"batch": batch, "width": width}, batch, "batch", batch,
                "samples/s",
                _train_step_builder(lambda: MLPClassifier(width), batch_of, F.cross_entropy),
                targets)


def _gpt_train_case(shape: _GPTShape, targets: tuple[Target, ...]) -> Case:
    def batch_of(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = shape.tokens(gen)
        return tokens, torch.roll(tokens, -1, dims=1)

    return Case("models", "gpt train step",
                f"gpt train step {shape.layers}x{shape.width} ctx={shape.context} "
                f"batch={shape.batch}",
                torch.float32, shape.sizes(), shape.batch * shape.context, "tokens per step",
                shape.batch * shape.context, "tokens/s",
                _train_step_builder(shape.model, batch_of, _token_loss), targets)


def _cnn_train_case(batch: int, channels: int, side: int, targets: tuple[Target, ...]) -> Case:
    def batch_of(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return _normal(gen, batch, 3, side, side), torch.randint(0, 10, (batch,), generator=gen)

    return Case("models", "cnn train step",
                f"cnn train step batch={batch} C={channels} {side}x{side}", torch.float32,
                {"batch": batch, "channels": channels, "height": side, "width": side}, batch,
                "batch", batch, "images/s",
                _train_step_builder(lambda: small_cnn(channels), batch_of, F.cross_entropy),
                targets)


def model_cases(quick: bool, with_cuda: bool) -> list[Case]:
    """Training steps of an MLP, a GPT-like decoder and a CNN (tiny ones with ``quick``)."""
    targets = targets_for("models", with_cuda)
    if quick:
        return [_mlp_train_case("models", 32, 64, targets),
                _gpt_train_case(_GPTShape(64, 32, 2, 1, 16, 4), targets),
                _cnn_train_case(4, 8, 16, targets)]
    return [_mlp_train_case("models", 256, 512, targets),
            _gpt_train_case(_GPTShape(256, 128, 4, 2, 128, 8), targets),
            _cnn_train_case(32, 32, 32, targets)]


def compile_cases(quick: bool, with_cuda: bool) -> list[Case]:
    """A GPT-like decoder's forward (inference) and an MLP training step, compiled on vk
    against eager on vk and on the baselines."""
    targets = targets_for("compile", with_cuda)
    shape = _GPTShape(64, 32, 2, 1, 16, 4) if quick else _GPTShape(256, 128, 4, 2, 128, 8)
    tokens = shape.batch * shape.context
    gpt = Case("compile", "gpt forward",
               f"gpt forward {shape.layers}x{shape.width} ctx={shape.context} batch={shape.batch}",
               torch.float32, shape.sizes(), tokens, "tokens per call", tokens, "tokens/s",
               _inference_builder(shape.model, shape.tokens), targets)
    mlp = _mlp_train_case("compile", 32, 64, targets) if quick else \
        _mlp_train_case("compile", 256, 512, targets)
    return [gpt, mlp]


def suite_cases(suites: Sequence[str], quick: bool, with_cuda: bool) -> list[Case]:
    """The cases of ``suites`` (names from :data:`SUITES`), suite by suite in that order."""
    makers = {"kernels": kernel_cases, "models": model_cases, "compile": compile_cases}
    return [case for suite in suites for case in makers[suite](quick, with_cuda)]
