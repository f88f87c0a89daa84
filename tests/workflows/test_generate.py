"""`generate()` on vk against the CPU: greedy (identical tokens), beam search, sampling,
dynamic and static caches, eager and compiled forward passes, left-padded batches, GQA, and
the attention paths transformers takes (SDPA with enable_gqa, boolean masks, is_causal with
q_len != kv_len) all native (the fallback is an error in these tests).
"""
import copy

import pytest
import torch

from tiny import ARCHS, word_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PROMPTS = ["the red cat sees a big dog", "one bird", "two old fish walks under the green tree"]


@pytest.fixture(scope="module")
def tokenizer():
    return word_tokenizer(padding_side="left")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A GQA Llama (4 query heads, 2 key/value heads) saved once; (cpu, vk) loaded per test."""
    path = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    ARCHS["llama_gqa"].build().save_pretrained(path)
    return path


def _load(path, device_map=None, **kwargs):
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(path, device_map=device_map, **kwargs).eval()


def _batch(tokenizer, device):
    enc = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    assert (enc["attention_mask"] == 0).any(), "the batch must be left-padded"
    return {k: v.to(device) for k, v in enc.items()}


def _same_tokens(got, expected):
    assert got.device.type == "vk"
    assert got.cpu().tolist() == expected.tolist()


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_greedy_left_padded_batch(llama, tokenizer, attn, cache):
    cpu = _load(llama, attn_implementation=attn)
    dev = _load(llama, "vk", attn_implementation=attn)
    kwargs = dict(max_new_tokens=10, do_sample=False, pad_token_id=0,
                  cache_implementation=cache, disable_compile=True)
    expected = cpu.generate(**_batch(tokenizer, "cpu"), **kwargs)
    _same_tokens(dev.generate(**_batch(tokenizer, "vk"), **kwargs), expected)


def test_beam_search(llama, tokenizer):
    cpu, dev = _load(llama), _load(llama, "vk")
    kwargs = dict(max_new_tokens=6, num_beams=3, num_return_sequences=2, do_sample=False,
                  pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    expected = cpu.generate(**_batch(tokenizer, "cpu"), **kwargs)
    got = dev.generate(**_batch(tokenizer, "vk"), **kwargs)
    _same_tokens(got.sequences, expected.sequences)
    torch.testing.assert_close(got.sequences_scores.cpu(), expected.sequences_scores,
                               atol=1e-4, rtol=1e-4)


def test_sampling_is_seeded_and_respects_its_filters(llama, tokenizer):
    """vk draws from its own generator (as CUDA does: streams differ from the CPU's), so the
    checks are the ones that hold on any device: the same seed gives the same tokens, top_k=1
    sampling is greedy decoding, and every sampled token lies in the step's top_k."""
    dev = _load(llama, "vk")
    batch = _batch(tokenizer, "vk")
    kwargs = dict(max_new_tokens=8, do_sample=True, top_k=5, temperature=0.9, pad_token_id=0)
    torch.manual_seed(123)
    first = dev.generate(**batch, **kwargs, output_scores=True, return_dict_in_generate=True)
    torch.manual_seed(123)
    again = dev.generate(**batch, **kwargs)
    assert first.sequences.cpu().tolist() == again.cpu().tolist()
    prompt = batch["input_ids"].shape[1]
    for step, scores in enumerate(first.scores):  # processed scores: -inf outside the top_k
        tokens = first.sequences[:, prompt + step]
        picked = scores.gather(1, tokens[:, None]).squeeze(1)
        assert torch.isfinite(picked).all().item()
        assert (torch.isfinite(scores).sum(1) <= 5).all().item()
    greedy = dev.generate(**batch, max_new_tokens=8, do_sample=False, pad_token_id=0)
    sampled_k1 = dev.generate(**batch, max_new_tokens=8, do_sample=True, top_k=1,
                              pad_token_id=0)
    assert sampled_k1.cpu().tolist() == greedy.cpu().tolist()


def test_compiled_static_cache_generation(llama, tokenizer):
    """Static-cache generation compiles the forward pass automatically on vk, as on CUDA
    (transformers gates it on a device list: torch_vk.integrations.transformers), and gives
    the CPU's tokens; an explicitly compiled forward does too."""
    torch._dynamo.reset()
    cpu = _load(llama)
    dev = _load(llama, "vk")
    kwargs = dict(max_new_tokens=6, do_sample=False, pad_token_id=0,
                  cache_implementation="static")
    expected = cpu.generate(**_batch(tokenizer, "cpu"), **kwargs)
    got = dev.generate(**_batch(tokenizer, "vk"), **kwargs)
    _same_tokens(got, expected)
    assert hasattr(dev, "_compiled_call"), "generate did not compile the vk forward pass"
    assert not hasattr(cpu, "_compiled_call")  # the CPU is not on transformers' list

    explicit = _load(llama, "vk")
    explicit.forward = torch.compile(explicit.forward)
    _same_tokens(explicit.generate(**_batch(tokenizer, "vk"), **kwargs, disable_compile=True),
                 expected)
    torch._dynamo.reset()


def test_gqa_sdpa_paths_stay_native(llama):
    """The three SDPA forms transformers' sdpa_attention issues, on vk without a fallback,
    against the CPU: enable_gqa without a mask (prefill of an unpadded batch), a 4-D boolean
    mask with repeated KV heads, and is_causal with q_len != kv_len (chunked prefill)."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, 5, 8, generator=g)
    k = torch.randn(2, 2, 9, 8, generator=g)
    v = torch.randn(2, 2, 9, 8, generator=g)
    mask = torch.rand(2, 1, 5, 9, generator=g) > 0.3
    mask[..., 0] = True
    sdpa = torch.nn.functional.scaled_dot_product_attention
    cases = [
        lambda q, k, v, m: sdpa(q, k, v, enable_gqa=True),
        lambda q, k, v, m: sdpa(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                attn_mask=m),
        lambda q, k, v, m: sdpa(q, k, v, is_causal=True, enable_gqa=True),
        lambda q, k, v, m: sdpa(q[:, :, :1], k, v, enable_gqa=True, scale=0.3),
    ]
    for fn in cases:
        expected = fn(q, k, v, mask)
        got = fn(*(t.to("vk") for t in (q, k, v, mask)))
        torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-5)


def test_generation_does_not_move_the_model(llama, tokenizer):
    dev = _load(llama, "vk")
    params = {id(p) for p in dev.parameters()}
    before = copy.deepcopy(dev.state_dict())
    dev.generate(**_batch(tokenizer, "vk"), max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert {id(p) for p in dev.parameters()} == params
    for key, value in dev.state_dict().items():
        assert torch.equal(value.cpu(), before[key].cpu()), key
