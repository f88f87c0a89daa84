"""Trains a small character-level GPT on the Python standard library's own source, on "vk".

The corpus exists on every machine: the ``*.py`` files next to ``os.py`` (sorted by name,
concatenated up to ``--max-chars`` characters). The vocabulary is the set of characters in that
text; the first 90% of it is the training split and the last 10% the validation split.

What the script shows, with nothing device-specific but ``--device``:
  - a GPT (token + learned position embeddings, pre-LayerNorm blocks with causal
    ``scaled_dot_product_attention``, GELU MLP, final LayerNorm, weight-tied head),
  - automatic mixed precision (``torch.autocast``; float16 with a ``GradScaler``, or bfloat16),
  - fused AdamW, linear warmup + cosine learning-rate schedule, gradient clipping,
  - checkpoints with every piece of state needed to continue where a run stopped
    (``--resume``; Ctrl-C ends a run after the current step with a checkpoint): batches are a
    function of (seed, step), so a resumed run sees the same data, learning rates and loss
    scales as an uninterrupted one,
  - periodic validation, a loss curve (PNG, when matplotlib is installed), a text sample.

    python examples/train_gpt.py                  # the default run (~5 minutes on lavapipe)
    python examples/train_gpt.py --quick          # a short run (under a minute on lavapipe)
    python examples/train_gpt.py --device cpu     # the same run on PyTorch's CPU backend
    python examples/train_gpt.py --resume         # continue from runs/gpt/ckpt.pt
    python examples/train_gpt.py --stop-after 100 # train in slices: stop at step 100 (of 200)

With TORCH_VK_FALLBACK=error every op of the run must have a native vk kernel.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import signal
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Batches of step s come from a CPU generator seeded with this function of (seed, s), so the
# data a step sees does not depend on how the run got there (fresh or resumed).
_STEP_SEED_STRIDE = 1_000_003
# Validation batches use their own fixed seeds, disjoint from the training ones above.
_VALIDATION_SEED_OFFSET = 7_919


# ---------------------------------------------------------------------------- data

def load_corpus(max_chars: int) -> str:
    """The standard library's top-level ``*.py`` files, sorted by name, concatenated, cut at
    ``max_chars`` characters. Deterministic for a given Python installation."""
    stdlib_dir = os.path.dirname(os.__file__)
    parts, total = [], 0
    for path in sorted(glob.glob(os.path.join(stdlib_dir, "*.py"))):
        with open(path, encoding="utf-8", errors="replace") as source:
            text = source.read()
        parts.append(text)
        total += len(text)
        if total >= max_chars:
            break
    corpus = "".join(parts)[:max_chars]
    if len(corpus) < 10_000:
        raise SystemExit(f"train_gpt: only {len(corpus)} characters of Python source found "
                         f"under {stdlib_dir}")
    return corpus


class CharData:
    """The corpus encoded as token ids, split 90% / 10% into train / validation."""

    def __init__(self, text: str, vocab: list[str] | None = None):
        # A checkpoint brings its own vocabulary; characters it does not know map to id 0.
        self.vocab = vocab if vocab is not None else sorted(set(text))
        index = {ch: i for i, ch in enumerate(self.vocab)}
        ids = torch.tensor([index.get(ch, 0) for ch in text], dtype=torch.int64)
        split = int(len(ids) * 0.9)
        self.train, self.val = ids[:split], ids[split:]

    def decode(self, ids) -> str:
        return "".join(self.vocab[i] for i in ids)

    def encode(self, text: str) -> list[int]:
        index = {ch: i for i, ch in enumerate(self.vocab)}
        return [index.get(ch, 0) for ch in text]

    @staticmethod
    def batch(ids: torch.Tensor, seed: int, batch_size: int, block_size: int):
        """(inputs, targets) of shape (batch_size, block_size): random windows chosen by a
        generator seeded with ``seed`` only."""
        generator = torch.Generator().manual_seed(seed)
        starts = torch.randint(len(ids) - block_size - 1, (batch_size,), generator=generator)
        windows = ids[starts[:, None] + torch.arange(block_size + 1)]
        return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


# ---------------------------------------------------------------------------- model

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
        self.n_head = n_head
        self.dropout = dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        batch, time_steps, channels = x.shape
        q, k, v = self.qkv(x).split(channels, dim=2)
        # (batch, heads, time, head_dim)
        q, k, v = (t.view(batch, time_steps, self.n_head, channels // self.n_head).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(batch, time_steps, channels))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.ln_attn = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_mlp = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_attn(x))
        return x + self.mlp(self.ln_mlp(x))


class GPT(nn.Module):
    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int,
                 n_embd: int, dropout: float = 0.0, tie_weights: bool = True):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, n_embd)
        self.position_embedding = nn.Embedding(block_size, n_embd)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln_final = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        if tie_weights:
            self.head.weight = self.token_embedding.weight
        self.apply(self._init_weights)
        # GPT-2's scaling of the projections that write into the residual stream.
        for block in self.blocks:
            for projection in (block.attn.proj, block.mlp[2]):
                nn.init.normal_(projection.weight, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx):
        positions = torch.arange(idx.size(1), device=idx.device)
        x = self.dropout(self.token_embedding(idx) + self.position_embedding(positions))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_final(x))

    @torch.no_grad()
    def generate(self, idx, new_tokens: int, temperature: float, generator=None):
        """Appends ``new_tokens`` sampled tokens to ``idx`` (shape (1, T)); temperature 0 is
        greedy decoding. Stays on the device: nothing is read back until the caller does."""
        for _ in range(new_tokens):
            logits = self(idx[:, -self.block_size:])[:, -1, :].float()
            if temperature <= 0:
                next_id = logits.argmax(dim=-1, keepdim=True)
            else:
                probs = F.softmax(logits / temperature, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat([idx, next_id], dim=1)
        return idx


# ---------------------------------------------------------------------------- training pieces

def lr_factor(step: int, warmup_steps: int, total_steps: int, min_ratio: float) -> float:
    """Linear warmup to 1 over ``warmup_steps``, then cosine decay to ``min_ratio``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float, fused: bool):
    """AdamW; weight decay on matrices (and the embeddings), not on biases and norm gains."""
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    not_decayed = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decayed, "weight_decay": weight_decay},
              {"params": not_decayed, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), fused=fused or None)


class ProgressBar:
    """A one-line progress bar: step/total, loss, tokens/s, ETA. On a terminal it redraws the
    line with '\\r'; otherwise (a log file, a test) it prints a line at every 10% of the run."""

    def __init__(self, first_step: int, total_steps: int, stream=sys.stderr, width: int = 24):
        self.first_step, self.total = first_step, total_steps
        self.stream, self.width = stream, width
        self.interactive = stream.isatty()
        self.started = time.perf_counter()
        self.last_printed_decile = -1

    def update(self, step: int, loss: float, tokens_per_s: float):
        done = step - self.first_step
        elapsed = time.perf_counter() - self.started
        remaining = (self.total - step) * elapsed / done if done else float("nan")
        filled = int(self.width * step / max(1, self.total))
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {step}/{self.total} "
                f"loss {loss:.3f} | {tokens_per_s:,.0f} tok/s | ETA {format_seconds(remaining)}")
        if self.interactive:
            self.stream.write("\r" + line + "\033[K")
            self.stream.flush()
        else:
            decile = 10 * step // max(1, self.total)
            if decile != self.last_printed_decile:
                self.last_printed_decile = decile
                print(line, file=self.stream, flush=True)

    def close(self):
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()


def format_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes:d}:{secs:02d}"


class StopRequest:
    """The first Ctrl-C (SIGINT) asks the training loop to stop after the current step (and
    save a checkpoint); a second one interrupts immediately, as usual."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def install(self):
        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            print("\ninterrupt: stopping after this step (Ctrl-C again to abort)",
                  file=sys.stderr, flush=True)
        try:
            self._previous = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread: keep Python's default behaviour
            self._previous = None
        return self

    def restore(self):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def save_checkpoint(path: str, state: dict):
    """Writes atomically (a temporary file, then rename): an interrupted save never leaves a
    truncated checkpoint behind."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = path + ".partial"
    torch.save(state, partial)
    os.replace(partial, path)


def save_loss_plot(path: str, history: dict, uniform_loss: float) -> bool:
    """Train and validation loss against the step, as a PNG. False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    if history["train"]:
        axes.plot(*zip(*history["train"]), label="train loss")
    if history["val"]:
        axes.plot(*zip(*history["val"]), "o-", label="validation loss")
    axes.axhline(uniform_loss, color="gray", linestyle="--",
                 label=f"uniform guess ln(vocab) = {uniform_loss:.2f}")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy (nats per character)")
    axes.set_title("character-level GPT on the Python standard library")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return True


# ---------------------------------------------------------------------------- main

# The defaults are sized for lavapipe (Vulkan on the CPU), where one step of the default model
# takes about 1.4 s on 2 cores: the default run (200 steps) takes about 5 minutes and brings the
# validation loss from ~4.45 to ~2.4 (the uniform guess is ln(vocabulary) ~ 4.6). On a real
# GPU, raise --steps, --batch-size, --block-size and --n-embd.
QUICK_OVERRIDES = dict(steps=24, max_chars=300_000, warmup_steps=6, eval_every=12,
                       eval_batches=2, ckpt_every=12, log_every=4, sample_chars=80)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--device", default="vk", help='"vk", "vk:N" or "cpu"')
    parser.add_argument("--steps", type=int, default=200, help="total optimizer steps")
    parser.add_argument("--quick", action="store_true",
                        help="a short run for demos and tests: " +
                        ", ".join(f"{k.replace('_', '-')} {v}" for k, v in QUICK_OVERRIDES.items())
                        + " (explicit options win)")
    data = parser.add_argument_group("data")
    data.add_argument("--max-chars", type=int, default=2_000_000,
                      help="characters of standard-library source to use")
    data.add_argument("--batch-size", type=int, default=16)
    data.add_argument("--block-size", type=int, default=32, help="context length")
    model = parser.add_argument_group("model")
    model.add_argument("--n-layer", type=int, default=2)
    model.add_argument("--n-head", type=int, default=4)
    model.add_argument("--n-embd", type=int, default=64)
    model.add_argument("--dropout", type=float, default=0.0)
    model.add_argument("--untied", action="store_true",
                       help="a separate output head instead of the token embedding's transpose")
    optim = parser.add_argument_group("optimization")
    optim.add_argument("--lr", type=float, default=3e-3)
    optim.add_argument("--min-lr-ratio", type=float, default=0.1)
    optim.add_argument("--warmup-steps", type=int, default=20)
    optim.add_argument("--weight-decay", type=float, default=0.1)
    optim.add_argument("--grad-clip", type=float, default=1.0)
    optim.add_argument("--amp-dtype", choices=["float16", "bfloat16"], default="float16",
                       help="autocast dtype; float16 uses a GradScaler, bfloat16 does not")
    optim.add_argument("--no-amp", action="store_true", help="train in float32")
    optim.add_argument("--seed", type=int, default=1337)
    run = parser.add_argument_group("evaluation, checkpoints, output")
    run.add_argument("--eval-every", type=int, default=50)
    run.add_argument("--eval-batches", type=int, default=4)
    run.add_argument("--log-every", type=int, default=10,
                     help="steps between loss read-backs (each one waits for the device)")
    run.add_argument("--out-dir", default=os.path.join("runs", "gpt"))
    run.add_argument("--ckpt", default=None, help="checkpoint path (default OUT_DIR/ckpt.pt)")
    run.add_argument("--ckpt-every", type=int, default=100)
    run.add_argument("--resume", action="store_true", help="continue from --ckpt")
    run.add_argument("--stop-after", type=int, default=None,
                     help="end this run at this step (with a checkpoint) although the "
                     "learning-rate schedule spans --steps; continue later with --resume")
    run.add_argument("--plot", default=None, help="loss curve PNG (default OUT_DIR/loss.png)")
    run.add_argument("--summary-json", default=None, help="also write the summary here")
    run.add_argument("--sample-chars", type=int, default=200)
    run.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    run.add_argument("--prompt", default="def ")
    args = parser.parse_args(argv)
    if args.quick:
        explicit = {a.split("=")[0].lstrip("-").replace("-", "_")
                    for a in (argv if argv is not None else sys.argv[1:]) if a.startswith("--")}
        for name, value in QUICK_OVERRIDES.items():
            if name not in explicit:
                setattr(args, name, value)
    args.ckpt = args.ckpt or os.path.join(args.out_dir, "ckpt.pt")
    args.plot = args.plot or os.path.join(args.out_dir, "loss.png")
    return args


def main(argv=None):
    args = parse_args(argv)
    on_vk = args.device.split(":")[0] == "vk"
    if on_vk:
        import torch_vk  # registers "vk" (torch's backend autoload may have done it already)
    device = torch.device(args.device)
    if on_vk:
        if not torch.vk.is_available():
            raise SystemExit("train_gpt: no vk device (torch.vk.is_available() is False); "
                             "try --device cpu")
        props = torch.vk.get_device_properties(device)
        device_text = f"{device} = {props.name} [{props.driver_name}]"
        torch_vk.reset_stats()
    else:
        device_text = str(device)

    checkpoint = None
    if args.resume:
        if not os.path.exists(args.ckpt):
            raise SystemExit(f"train_gpt: --resume: no checkpoint at {args.ckpt}")
        checkpoint = torch.load(args.ckpt, map_location=device)
        # The model shape and data come from the checkpoint, not from the command line.
        for name, value in checkpoint["config"].items():
            setattr(args, name, value)

    torch.manual_seed(args.seed)
    if on_vk:
        torch.vk.manual_seed(args.seed)
    data = CharData(load_corpus(args.max_chars), checkpoint["vocab"] if checkpoint else None)
    vocab_size = len(data.vocab)
    uniform_loss = math.log(vocab_size)

    model = GPT(vocab_size, args.block_size, args.n_layer, args.n_head, args.n_embd,
                args.dropout, tie_weights=not args.untied).to(device)
    optimizer = make_optimizer(model, args.lr, args.weight_decay, fused=on_vk)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, args.warmup_steps, args.steps, args.min_lr_ratio))
    amp_dtype = getattr(torch, args.amp_dtype)
    use_amp = not args.no_amp
    # A GradScaler is needed for float16 only: bfloat16 has float32's exponent range.
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and amp_dtype == torch.float16)

    def autocast():
        return torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp)

    start_step = 0
    history = {"train": [], "val": []}
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        scaler.load_state_dict(checkpoint["scaler"])
        torch.set_rng_state(checkpoint["rng"]["cpu"].cpu())
        if on_vk and checkpoint["rng"].get("vk") is not None:
            torch.vk.set_rng_state(checkpoint["rng"]["vk"].cpu())
        start_step = checkpoint["step"]
        history = checkpoint["history"]
        del checkpoint  # the device copies of the old state

    n_params = sum(p.numel() for p in model.parameters())
    print(f"device: {device_text}")
    print(f"data: {len(data.train) + len(data.val):,} characters of Python standard-library "
          f"source, vocabulary {vocab_size} (uniform-guess loss ln({vocab_size}) = "
          f"{uniform_loss:.3f}), split {len(data.train):,} train / {len(data.val):,} validation")
    print(f"model: GPT, {args.n_layer} layers, {args.n_head} heads, {args.n_embd} channels, "
          f"context {args.block_size}, {n_params / 1e6:.3f}M parameters; batch {args.batch_size}")
    amp_text = (f"autocast {args.amp_dtype}" + (" + GradScaler" if scaler.is_enabled() else "")
                if use_amp else "float32 (no AMP)")
    print(f"training: steps {start_step}..{args.steps}, {amp_text}, AdamW"
          f"{' (fused)' if on_vk else ''} lr {args.lr} (warmup {args.warmup_steps}, cosine), "
          f"grad clip {args.grad_clip}" + (f"; resumed from {args.ckpt}" if start_step else ""))

    def get_batch(split_ids, seed):
        x, y = CharData.batch(split_ids, seed, args.batch_size, args.block_size)
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    @torch.no_grad()
    def validation_loss():
        model.eval()
        total = torch.zeros((), device=device)
        for i in range(args.eval_batches):
            x, y = get_batch(data.val, args.seed + _VALIDATION_SEED_OFFSET + i)
            with autocast():
                logits = model(x)
            total += F.cross_entropy(logits.float().view(-1, vocab_size), y.view(-1))
        model.train()
        return (total / args.eval_batches).item()

    def checkpoint_state(step):
        return {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict(),
            "rng": {"cpu": torch.get_rng_state(),
                    "vk": torch.vk.get_rng_state() if on_vk else None},
            "history": history,
            "vocab": data.vocab,
            "config": {name: getattr(args, name) for name in (
                "max_chars", "batch_size", "block_size", "n_layer", "n_head", "n_embd",
                "dropout", "untied", "lr", "min_lr_ratio", "warmup_steps", "weight_decay",
                "seed", "no_amp", "amp_dtype")},
        }

    if start_step == 0:
        history["val"].append((0, validation_loss()))
        print(f"step 0: validation loss {history['val'][-1][1]:.4f}")
    initial_val_loss = history["val"][0][1] if history["val"] else float("nan")

    model.train()
    tokens_per_step = args.batch_size * args.block_size
    progress = ProgressBar(start_step, args.steps)
    window_loss = torch.zeros((), device=device)
    window_start, window_steps = time.perf_counter(), 0
    train_start = time.perf_counter()
    last_train_loss = history["train"][-1][1] if history["train"] else float("nan")
    tokens_per_s = 0.0
    end_step = min(args.steps, args.stop_after) if args.stop_after is not None else args.steps
    done = start_step
    stop_request = StopRequest().install()
    for step in range(start_step, end_step):
        x, y = get_batch(data.train, args.seed * _STEP_SEED_STRIDE + step)
        with autocast():
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab_size), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        window_loss += loss.detach()
        window_steps += 1
        done = step + 1
        last = done == end_step or stop_request.requested

        if done % args.log_every == 0 or last:
            last_train_loss = (window_loss / window_steps).item()  # waits for the device
            now = time.perf_counter()
            tokens_per_s = window_steps * tokens_per_step / (now - window_start)
            history["train"].append((done, last_train_loss))
            progress.update(done, last_train_loss, tokens_per_s)
            window_loss.zero_()
            window_start, window_steps = now, 0
        if done % args.eval_every == 0 or last:
            history["val"].append((done, validation_loss()))
            if progress.interactive:
                progress.stream.write("\n")
            print(f"step {done}: train loss {last_train_loss:.4f}, validation loss "
                  f"{history['val'][-1][1]:.4f}", flush=True)
        if done % args.ckpt_every == 0 or last:
            save_checkpoint(args.ckpt, checkpoint_state(done))
        if stop_request.requested:
            break
    stop_request.restore()
    progress.close()
    if done < args.steps:
        print(f"stopped at step {done} of {args.steps}; continue with --resume")
    train_seconds = time.perf_counter() - train_start
    steps_run = done - start_step
    if steps_run:
        print(f"trained {steps_run} steps in {train_seconds:.1f} s "
              f"({train_seconds / steps_run * 1000:.0f} ms/step, "
              f"{steps_run * tokens_per_step / train_seconds:,.0f} tokens/s); "
              f"checkpoint: {args.ckpt}")

    if save_loss_plot(args.plot, history, uniform_loss):
        print(f"loss curve: {args.plot}")
        plot_path = args.plot
    else:
        print("loss curve: skipped (matplotlib is not installed: pip install matplotlib)")
        plot_path = None

    if args.sample_chars > 0:
        model.eval()
        generator = torch.Generator(device=device).manual_seed(args.seed)
        prompt = torch.tensor([data.encode(args.prompt)], dtype=torch.int64, device=device)
        with autocast():
            sample = model.generate(prompt, args.sample_chars, args.temperature, generator)
        print(f"--- sample (temperature {args.temperature}) ---")
        print(data.decode(sample[0].tolist()))
        print("---")

    final_val_loss = history["val"][-1][1] if history["val"] else float("nan")
    first_train_loss = history["train"][0][1] if history["train"] else float("nan")
    fallbacks = {}
    if on_vk:
        stats = torch_vk.stats()
        fallbacks = dict(stats["fallbacks"])
        print(f"vk: {stats['dispatches']:,} kernels dispatched, {stats['submits']:,} submits, "
              f"{stats['host_waits']:,} host waits" + (
                  "; ops that ran on the CPU fallback: " + ", ".join(
                      f"{name} x{count}" for name, count in sorted(fallbacks.items()))
                  if fallbacks else "; no CPU fallback"))
    print(f"final: step {done}, train loss {last_train_loss:.4f}, validation loss "
          f"{final_val_loss:.4f} (started at {initial_val_loss:.4f}; uniform guess "
          f"ln({vocab_size}) = {uniform_loss:.4f})")

    if args.summary_json:
        summary = {
            "device": str(device), "amp": amp_text, "vocab_size": vocab_size,
            "uniform_loss": uniform_loss, "start_step": start_step, "steps": done,
            "schedule_steps": args.steps,
            "first_train_loss": first_train_loss, "final_train_loss": last_train_loss,
            "initial_val_loss": initial_val_loss, "final_val_loss": final_val_loss,
            "train_seconds": train_seconds, "tokens_per_s": tokens_per_s,
            "checkpoint": os.path.abspath(args.ckpt), "plot": plot_path and os.path.abspath(plot_path),
            "fallbacks": fallbacks, "history": history,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.summary_json)), exist_ok=True)
        with open(args.summary_json, "w") as out:
            json.dump(summary, out, indent=1)


if __name__ == "__main__":
    main()
