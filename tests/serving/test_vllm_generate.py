"""vLLM's offline engine (`vllm.LLM`) on "vk": greedy tokens equal Hugging Face `generate` on
the CPU, for a batch of prompts of different lengths, with prefix caching and chunked prefill.

One engine per model for the whole module (engine start-up is the cost). The engine runs in
this process (VLLM_ENABLE_V1_MULTIPROCESSING=0), so the strict fallback mode and the
validation-layer check of conftest.py cover the model's every op.
"""
from __future__ import annotations

import gc
import os

import pytest

vllm = pytest.importorskip("vllm")

import tiny_models as tm  # noqa: E402

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
MAX_TOKENS = 8


def _engine(directory: str, **kwargs):
    from vllm import LLM

    options = dict(model=directory, dtype="float32", max_model_len=128, seed=0,
                   kv_cache_memory_bytes=4 << 20, max_num_seqs=8)
    options.update(kwargs)
    return LLM(**options)


def _shutdown(llm) -> None:
    from vllm.distributed import destroy_distributed_environment, destroy_model_parallel

    llm.llm_engine.engine_core.shutdown()
    del llm
    destroy_model_parallel()
    destroy_distributed_environment()
    gc.collect()


def _greedy(llm, prompts):
    from vllm import SamplingParams

    outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS,
                                                ignore_eos=True), use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs], outs


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A GQA Llama; block size 4 and a 16-token step budget: prompts longer than 16 tokens
    are prefilled in chunks, and repeated prefixes hit the prefix cache."""
    directory = tm.save("llama_gqa", str(tmp_path_factory.mktemp("llama")))
    llm = _engine(directory, block_size=4, enable_prefix_caching=True,
                  enable_chunked_prefill=True, max_num_batched_tokens=16)
    yield directory, llm
    _shutdown(llm)


def test_platform_is_vk(llama):
    from vllm.platforms import current_platform

    assert current_platform.device_type == "vk"
    assert current_platform.dispatch_key == "PrivateUse1"


def test_llama_gqa_batch_equals_hf_cpu(llama):
    directory, llm = llama
    got, _ = _greedy(llm, tm.PROMPTS)
    assert got == tm.hf_greedy(directory, tm.PROMPTS, MAX_TOKENS)


def test_llama_chunked_prefill_and_prefix_cache(llama):
    directory, llm = llama
    # 26-token prompts (more than the 16-token step budget: chunked), sharing a 20-token
    # prefix with each other (prefix-cache hits once the first one is cached).
    prefix = ("the old cat sees a big dog near the river and the small bird finds "
              "a green fish under the tree")
    prompts = [prefix + " " + tail for tail in ("then runs", "now sleeps", "today eats")]
    first, outs1 = _greedy(llm, prompts[:1])
    rest, outs2 = _greedy(llm, prompts[1:])
    assert first + rest == tm.hf_greedy(directory, prompts, MAX_TOKENS)
    assert all(o.num_cached_tokens > 0 for o in outs2)  # the shared prefix came from the cache


@pytest.fixture(scope="module")
def mistral(tmp_path_factory, llama):
    """A Mistral with an 8-token sliding window (shorter than the longer prompts)."""
    directory = tm.save("mistral_sliding_window", str(tmp_path_factory.mktemp("mistral")),
                        seed=1)
    llm = _engine(directory, enable_prefix_caching=False)
    yield directory, llm
    _shutdown(llm)


def test_mistral_sliding_window_batch_equals_hf_cpu(mistral):
    directory, llm = mistral
    got, _ = _greedy(llm, tm.PROMPTS)
    assert got == tm.hf_greedy(directory, tm.PROMPTS, MAX_TOKENS)
