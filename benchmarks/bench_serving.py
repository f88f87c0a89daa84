"""Serving throughput on vk: vLLM (torch-vk's platform plugin) against Hugging Face `generate`
on vk, same random-initialised model, same batch of prompts, greedy decoding, one run each.

Reports, per engine, the time to first token (a 1-token generation of the whole batch: the
prefill) and decode tokens/s ((new tokens - 1) * batch over the time past the first token),
and their ratios vLLM / HF measured in this run. On a GPU machine with CUDA PyTorch and vLLM's
CUDA build, compare against `--device cuda` runs of the same script by hand.

  python benchmarks/bench_serving.py [--batch 8] [--prompt-len 32] [--new-tokens 32]
                                     [--hidden 256] [--layers 4]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "serving"))

import torch  # noqa: E402

import tiny_models as tm  # noqa: E402


def build(directory: str, hidden: int, layers: int) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=tm.VOCAB, hidden_size=hidden, intermediate_size=hidden * 3,
        num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=max(1, hidden // 128),
        max_position_embeddings=1024, initializer_range=0.3, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))
    model.save_pretrained(directory)
    tm.word_tokenizer().save_pretrained(directory)


def prompts(batch: int, length: int) -> list[str]:
    g = torch.Generator().manual_seed(1)
    return [" ".join(tm.WORDS[i] for i in torch.randint(len(tm.WORDS), (length,), generator=g))
            for _ in range(batch)]


def timed(fn) -> float:
    torch.vk.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.vk.synchronize()
    return time.perf_counter() - t0


def bench_vllm(directory, texts, new_tokens):
    from vllm import LLM, SamplingParams

    llm = LLM(model=directory, dtype="float32", max_model_len=512, seed=0,
              kv_cache_memory_bytes=64 << 20, max_num_seqs=len(texts),
              enable_prefix_caching=False)

    def run(n):
        llm.generate(texts, SamplingParams(temperature=0, max_tokens=n, ignore_eos=True),
                     use_tqdm=False)

    run(2)  # warm-up (pipelines)
    ttft = timed(lambda: run(1))
    total = timed(lambda: run(new_tokens))
    return ttft, (new_tokens - 1) * len(texts) / max(total - ttft, 1e-9)


def bench_hf(directory, texts, new_tokens):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.float32).to("vk")
    batch = tok(texts, return_tensors="pt", padding=True).to("vk")

    def run(n):
        with torch.no_grad():
            model.generate(**batch, do_sample=False, max_new_tokens=n, min_new_tokens=n,
                           eos_token_id=None, pad_token_id=0)

    run(2)
    ttft = timed(lambda: run(1))
    total = timed(lambda: run(new_tokens))
    return ttft, (new_tokens - 1) * len(texts) / max(total - ttft, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        build(directory, args.hidden, args.layers)
        texts = prompts(args.batch, args.prompt_len)
        hf = bench_hf(directory, texts, args.new_tokens)
        vl = bench_vllm(directory, texts, args.new_tokens)
    print(f"device: {torch.vk.get_device_name()}  model: Llama hidden={args.hidden} "
          f"layers={args.layers}  batch={args.batch} prompt={args.prompt_len} "
          f"new={args.new_tokens}")
    print(f"{'engine':<14}{'TTFT (s)':>10}{'decode tok/s':>15}")
    print(f"{'HF generate':<14}{hf[0]:>10.3f}{hf[1]:>15.1f}")
    print(f"{'vLLM':<14}{vl[0]:>10.3f}{vl[1]:>15.1f}")
    print(f"ratio vLLM/HF: TTFT {vl[0] / hf[0]:.2f}x (lower is better), "
          f"decode {vl[1] / hf[1]:.2f}x (higher is better)")


if __name__ == "__main__":
    main()
