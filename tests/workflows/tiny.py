"""Tiny models, inputs and a tokenizer for the workflow tests (no downloads).

Every config is small enough for lavapipe (a few dispatches of a few hundred elements each),
has dropout off (so CPU and vk runs see the same computation; vk's random streams are its own,
as CUDA's are), and uses initializer ranges large enough that greedy decoding does not stall on
one token (which would make "identical tokens" a weak check).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import torch

WORDS = ("the a an one two three red green blue cat dog bird fish tree house river stone "
         "runs sleeps eats sees finds likes makes takes gives walks big small old new fast slow "
         "and or but with under over near far here there now then today very quite not").split()


def word_tokenizer(padding_side: str = "left"):
    """A word-level fast tokenizer over WORDS, built in-process (no hub)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        unk_token="<unk>", padding_side=padding_side)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['content'] }} {% endfor %}")
    return tokenizer


VOCAB = 4 + len(WORDS)  # the tokenizer's vocabulary size


@dataclasses.dataclass
class Arch:
    """One architecture: how to build it and feed it."""
    name: str
    build: Callable[[], torch.nn.Module]      # a random-initialised model (CPU)
    inputs: Callable[[torch.Generator], dict]  # forward kwargs (CPU tensors)
    loss: Callable[[object], torch.Tensor]     # scalar loss from the model output
    generative: bool = False                   # supports generate()
    tied: tuple[str, str] | None = None        # two parameter names that must stay one
    float64: bool = True                       # the CPU runs it in float64 (a reference)


def _ids(g, batch, length, low=4):
    return torch.randint(low, VOCAB, (batch, length), generator=g)


def _lm_inputs(g):
    ids = _ids(g, 2, 7)
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # a left-padded row
    return {"input_ids": ids, "attention_mask": mask, "labels": ids}


def _bert():
    from transformers import BertConfig, BertForMaskedLM
    return BertForMaskedLM(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=32, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, initializer_range=0.2))


def _bert_inputs(g):
    ids = _ids(g, 2, 9)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # right padding
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids),
            "labels": ids}


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        initializer_range=0.2, tie_word_embeddings=True, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=2,
        num_heads=4, dropout_rate=0.0, relative_attention_num_buckets=8,
        initializer_factor=2.0, tie_word_embeddings=True, decoder_start_token_id=1,
        pad_token_id=0, eos_token_id=2))


def _t5_inputs(g):
    ids = _ids(g, 2, 6)
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    return {"input_ids": ids, "attention_mask": mask, "labels": _ids(g, 2, 5)}


def _vit():
    from transformers import ViTConfig, ViTForImageClassification
    return ViTForImageClassification(ViTConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=48, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, num_labels=5))


def _vit_inputs(g):
    return {"pixel_values": torch.randn(2, 3, 16, 16, generator=g),
            "labels": torch.randint(0, 5, (2,), generator=g)}


def _clip():
    from transformers import CLIPConfig, CLIPModel
    return CLIPModel(CLIPConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                         num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=16,
                         projection_dim=16, dropout=0.0, attention_dropout=0.0,
                         eos_token_id=2, bos_token_id=1, pad_token_id=0),
        vision_config=dict(image_size=16, patch_size=4, hidden_size=32, intermediate_size=48,
                           num_hidden_layers=2, num_attention_heads=4, projection_dim=16,
                           dropout=0.0, attention_dropout=0.0),
        projection_dim=16))


def _clip_inputs(g):
    ids = _ids(g, 3, 6)
    ids[:, -1] = 2  # eos: CLIP pools the text at the eos position
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": torch.randn(2, 3, 16, 16, generator=g), "return_loss": False}


def _wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
    return Wav2Vec2ForCTC(Wav2Vec2Config(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, conv_dim=(16, 16), conv_stride=(4, 2), conv_kernel=(8, 4),
        num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4, hidden_dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0, pad_token_id=0,
        ctc_loss_reduction="mean"))


def _wav2vec2_inputs(g):
    return {"input_values": torch.randn(2, 400, generator=g),
            "labels": torch.randint(4, VOCAB, (2, 6), generator=g)}


def _mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM
    return MixtralForCausalLM(MixtralConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=64, initializer_range=0.2,
        router_jitter_noise=0.0, attention_dropout=0.0, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, output_router_logits=False))


def _mistral():
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, sliding_window=4,
        max_position_embeddings=64, initializer_range=0.3, attention_dropout=0.0,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def _mean_logits(out):
    return out.logits.float().square().mean()


def _clip_loss(out):
    return out.logits_per_image.square().mean() + out.text_embeds.sum() * 0.1


ARCHS = {
    "bert": Arch("bert", _bert, _bert_inputs, lambda o: o.loss,
                 tied=("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight")),
    "llama_gqa": Arch("llama_gqa", _llama, _lm_inputs, lambda o: o.loss, generative=True,
                      tied=("model.embed_tokens.weight", "lm_head.weight")),
    "t5": Arch("t5", _t5, _t5_inputs, lambda o: o.loss, generative=True,
               tied=("shared.weight", "lm_head.weight")),
    "vit": Arch("vit", _vit, _vit_inputs, lambda o: o.loss),
    "clip": Arch("clip", _clip, _clip_inputs, _clip_loss),
    "wav2vec2": Arch("wav2vec2", _wav2vec2, _wav2vec2_inputs, lambda o: o.loss),
    # Its experts run through torch._grouped_mm, which the CPU has for 16/32-bit floats only.
    "mixtral_moe": Arch("mixtral_moe", _mixtral, _lm_inputs, lambda o: o.loss, generative=True,
                        float64=False),
    "mistral_sliding": Arch("mistral_sliding", _mistral, _lm_inputs, lambda o: o.loss,
                            generative=True),
}


def to_device(batch: dict, device, dtype=None) -> dict:
    """The batch on `device`; floating tensors also cast to `dtype` when given."""
    def move(v):
        if not isinstance(v, torch.Tensor):
            return v
        v = v.to(device)
        return v.to(dtype) if dtype is not None and v.is_floating_point() else v
    return {k: move(v) for k, v in batch.items()}


def assert_matches_cpu(vk, cpu, reference=None, atol=2e-5, rtol=1e-4, msg=""):
    """vk's tensor equals the CPU's float32 one within atol + rtol * |cpu|.

    With a float64 `reference` of the same computation, the tolerance also grows with the CPU's
    own float32 error (4x its largest deviation from the reference): some tiny random models
    are ill-conditioned (T5's unscaled attention saturates its softmax), where two correct
    float32 implementations that sum in different orders differ by far more than rounding
    of well-conditioned math; vk must then be as accurate as the CPU, not bit-equal to it.
    """
    assert vk.device.type == "vk", msg
    got = vk.detach().cpu()
    want = cpu.detach()
    if reference is not None and want.is_floating_point():
        own = (want.double() - reference.detach().double()).abs().max().item() if want.numel() \
            else 0.0
        atol = atol + 4 * own
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol,
                               msg=lambda m: f"{msg}: {m}" if msg else m)


def assert_outputs_close(vk_out, cpu_out, reference=None, atol=2e-5, rtol=1e-4, msg="output"):
    """Every tensor of a ModelOutput (or tuple) matches the CPU's (see assert_matches_cpu)."""
    from transformers.utils import ModelOutput

    if isinstance(cpu_out, ModelOutput):
        assert set(vk_out.keys()) == set(cpu_out.keys())
        for key in cpu_out.keys():
            assert_outputs_close(vk_out[key], cpu_out[key],
                                 None if reference is None else reference[key], atol, rtol,
                                 f"{msg}.{key}")
    elif isinstance(cpu_out, (tuple, list)):
        assert len(vk_out) == len(cpu_out)
        for i, (a, b) in enumerate(zip(vk_out, cpu_out)):
            assert_outputs_close(a, b, None if reference is None else reference[i], atol, rtol,
                                 f"{msg}[{i}]")
    elif isinstance(cpu_out, torch.Tensor):
        assert_matches_cpu(vk_out, cpu_out, reference, atol, rtol, msg)
    elif hasattr(cpu_out, "to_legacy_cache") or type(cpu_out).__name__.endswith("Cache"):
        pass  # caches are compared through the generation tests
    else:
        assert vk_out == cpu_out
