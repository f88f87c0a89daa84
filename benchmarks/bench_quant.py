"""Quantized-matmul benchmark: vk's weight-only int8 / int4 kernels against the same ops on
the CPU (or CUDA when present), measured in the same run and reported as ratios, and as a
fraction of the device's memory bandwidth measured by a copy in the same run.

  python benchmarks/bench_quant.py [--quick | --gpu] [--json FILE]

Rows:
  - copy: GB/s of a device-to-device copy (read + write), the bandwidth reference;
  - int8 / int4 GEMV (M = 1, decode) and GEMM (M = 64, prefill), bfloat16 activations:
    time per call on vk and on the reference device; for GEMV the weight bytes read per second
    and their fraction of the copy bandwidth (each weight byte is read once);
  - decode: tokens/s of a Llama (transformers, random weights; tiny, or with --gpu a
    1B-parameter shape) generating greedily on vk in float16, bfloat16, int8 weight-only and
    int4 weight-only (torchao; both quantize the bfloat16 model), the ratios to float16, and
    the linear weights' bytes read per
    second as a fraction of the copy bandwidth (llama.cpp's bar on GPUs: ~70%).
The reference for int4 on the CPU is _weight_int4pack_mm_for_cpu (the CPU's own packing); on
CUDA, _weight_int4pack_mm with CUDA's packing. Every "ratio" is vk speed / reference speed
(> 1: vk is faster). Numbers belong in notes, never in tests.
"""
import argparse
import json
import time

import torch

import torch_vk  # noqa: F401
from bench_kernels import sync, timeit  # same folder: python benchmarks/bench_quant.py


def copy_bandwidth(device, nbytes, repeat):
    src = torch.empty(nbytes // 4, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    t = timeit(lambda: dst.copy_(src), device, repeat)
    return 2 * nbytes / t / 1e9


def int4_operands(N, K, group, device):
    g = torch.Generator().manual_seed(0)
    q = torch.randint(0, 16, (N, K), generator=g, dtype=torch.int32)
    sz = torch.stack([torch.rand(K // group, N, generator=g) * 0.05 + 0.01,
                      torch.randn(K // group, N, generator=g) * 0.1], -1).to(torch.bfloat16)
    if device.type == "cpu":
        return torch._convert_weight_to_int4pack_for_cpu(q, 2), sz, torch._weight_int4pack_mm_for_cpu
    packed_bytes = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8).to(device)
    return (torch._convert_weight_to_int4pack(packed_bytes, 8 if device.type == "cuda" else 2),
            sz.to(device), torch._weight_int4pack_mm)


def bench_matmul(kind, device, M, N, K, repeat, group=128):
    a = torch.randn(M, K, dtype=torch.bfloat16).to(device)
    if kind == "int8":
        w = torch.randint(-128, 128, (N, K), dtype=torch.int8).to(device)
        s = (torch.rand(N) * 0.01).to(torch.bfloat16).to(device)
        fn = lambda: torch._weight_int8pack_mm(a, w, s)  # noqa: E731
        weight_bytes = N * K + 2 * N
    else:
        packed, sz, op = int4_operands(N, K, group, device)
        fn = lambda: op(a, packed, group, sz)  # noqa: E731
        weight_bytes = N * K // 2 + 4 * N * (K // group)
    t = timeit(fn, device, repeat)
    return t, weight_bytes


# Model shapes of the decode rows: tiny (CPU machines) and a 1B-parameter Llama shape (--gpu:
# ~1.2e9 parameters, int4 weights ~0.6 GB).
SHAPES = {
    "quick": dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2),
    "default": dict(vocab_size=512, hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8),
}


def decode_tokens_per_second(mode, tokens, shape):
    """Greedy decode tokens/s on vk and the bytes of weights read per token."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    with torch.device("meta" if shape == "1b" else "cpu"):
        model = LlamaForCausalLM(LlamaConfig(**SHAPES[shape], max_position_embeddings=256,
                                             tie_word_embeddings=False))
    if shape == "1b":  # random weights made on the device (no 5 GB CPU copy)
        model = model.to_empty(device="vk")
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.02)
    model = model.to(torch.float16 if mode == "float16" else torch.bfloat16).eval().to("vk")
    if mode in ("int8", "int4"):
        from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig, quantize_

        config = Int8WeightOnlyConfig() if mode == "int8" else Int4WeightOnlyConfig(
            group_size=128, int4_packing_format="tile_packed_to_4d")
        quantize_(model, config)
    linear_bytes = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            w = m.weight
            linear_bytes += (w.qdata.numel() * w.qdata.element_size()
                             if hasattr(w, "qdata") else w.numel() * w.element_size())
    ids = torch.randint(4, 512, (1, 8)).to("vk")
    kwargs = dict(do_sample=False, pad_token_id=0, disable_compile=True)
    model.generate(ids, max_new_tokens=2, **kwargs)
    sync(torch.device("vk"))
    start = time.perf_counter()
    model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, **kwargs)
    sync(torch.device("vk"))
    return tokens / (time.perf_counter() - start), linear_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (lavapipe smoke run)")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--gpu", action="store_true",
                        help="GPU shapes: 4096 x 4096 matmuls, decode of a 1B-parameter Llama shape")
    args = parser.parse_args()
    vk = torch.device("vk")
    ref = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    repeat = 3 if args.quick else 10
    N, K = (1024, 1024) if args.quick else (4096, 4096)
    rows = []
    bw = copy_bandwidth(vk, 64 << 20 if args.quick else 512 << 20, repeat)
    rows.append({"row": "copy", "vk_GBps": round(bw, 2)})
    print(f"copy: {bw:.2f} GB/s on vk (read + write)")
    for kind in ("int8", "int4"):
        for M in (1, 64):
            t_vk, weight_bytes = bench_matmul(kind, vk, M, N, K, repeat)
            t_ref, _ = bench_matmul(kind, ref, M, N, K, repeat)
            row = {"row": f"{kind} {'gemv' if M == 1 else 'gemm'}", "M": M, "N": N, "K": K,
                   "vk_ms": round(t_vk * 1e3, 3), f"{ref.type}_ms": round(t_ref * 1e3, 3),
                   "ratio": round(t_ref / t_vk, 3)}
            if M == 1:
                gbps = weight_bytes / t_vk / 1e9
                row.update(weights_GBps=round(gbps, 2), fraction_of_copy=round(gbps / bw, 3))
            else:
                row.update(vk_GFLOPs=round(2 * M * N * K / t_vk / 1e9, 2))
            rows.append(row)
            print(row)
    try:
        tokens = 8 if args.quick else 32
        shape = "1b" if args.gpu else ("quick" if args.quick else "default")
        base, _ = decode_tokens_per_second("float16", tokens, shape)
        for mode in ("float16", "bfloat16", "int8", "int4"):
            tps, weight_bytes = decode_tokens_per_second(mode, tokens, shape)
            gbps = tps * weight_bytes / 1e9  # linear weights read once per token
            row = {"row": f"decode {mode} ({shape})", "vk_tokens_per_s": round(tps, 2),
                   "ratio_to_float16": round(tps / base, 3),
                   "linear_weights_GBps": round(gbps, 2),
                   "fraction_of_copy": round(gbps / bw, 3)}
            rows.append(row)
            print(row)
    except ImportError as exc:
        print(f"decode rows skipped: {exc}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
