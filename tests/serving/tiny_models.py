"""Tiny random-initialised causal LMs and a word-level tokenizer, saved to a directory that
vLLM / SGLang / Hugging Face load with from_pretrained (no downloads).

Initializer ranges are large enough that greedy decoding does not stall on one token (which
would make "identical tokens" a weak check); float32 everywhere.
"""
from __future__ import annotations

import json
import os

import torch

WORDS = ("the a an one two three red green blue cat dog bird fish tree house river stone "
         "runs sleeps eats sees finds likes makes takes gives walks big small old new fast slow "
         "and or but with under over near far here there now then today very quite not").split()
VOCAB = 4 + len(WORDS)

# Prompts of different lengths (the engine batches them; HF runs them one by one).
PROMPTS = [
    "the cat sees a dog",
    "one small bird",
    "red house near the river and the old stone tree with a green fish",
    "two",
]


def word_tokenizer():
    """A word-level fast tokenizer over WORDS, built in-process."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        unk_token="<unk>", padding_side="left")
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['content'] }} {% endfor %}")
    return tokenizer


def _common():
    return dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                initializer_range=0.3, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                torch_dtype="float32")


def llama_gqa():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**_common(), tie_word_embeddings=False))


def mistral_sliding_window():
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(**_common(), sliding_window=8,
                                            tie_word_embeddings=False))


ARCHS = {"llama_gqa": llama_gqa, "mistral_sliding_window": mistral_sliding_window}


def save(arch: str, directory: str, seed: int = 0) -> str:
    """Builds `arch` with `seed`, saves model + tokenizer to `directory`; returns it."""
    torch.manual_seed(seed)
    model = ARCHS[arch]().eval()
    model.generation_config.do_sample = False
    os.makedirs(directory, exist_ok=True)
    model.save_pretrained(directory)
    word_tokenizer().save_pretrained(directory)
    # Keep the word-level tokenizer for every architecture: without a tokenizer class,
    # AutoTokenizer picks the model type's own (e.g. Qwen2Tokenizer's byte-level rules).
    config_path = os.path.join(directory, "tokenizer_config.json")
    with open(config_path) as f:
        config = json.load(f)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    with open(config_path, "w") as f:
        json.dump(config, f)
    return directory


def hf_greedy(directory: str, prompts, max_new_tokens: int) -> list[list[int]]:
    """Greedy continuations by Hugging Face generate on the CPU (float32), prompt by prompt,
    EOS ignored (the engines run with ignore_eos)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.float32).eval()
    out = []
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            gen = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                                 eos_token_id=None, pad_token_id=0)
        out.append(gen[0, ids.shape[1]:].tolist())
    return out
