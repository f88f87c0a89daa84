"""Loading checkpoints straight to vk: transformers' allocator warm-up (one block the size of
the model, freed) serves the weights that follow, `device_map="auto"` sees vk, and 16-bit
loads keep their dtype.
"""
import pytest
import torch

from tiny import VOCAB

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A ~14 MB Llama: big enough that every size class of the allocator is used (embeddings of
    4 MiB, projections of 128-700 KiB, norms of 1 KiB)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("llama_14mb")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=4096, hidden_size=256, intermediate_size=688, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False))
    model.save_pretrained(path)
    return path, sum(p.numel() * p.element_size() for p in model.parameters())


def test_warmup_block_serves_the_weights(checkpoint):
    from transformers import LlamaForCausalLM

    path, model_bytes = checkpoint
    torch.vk.synchronize()
    torch.vk.empty_cache()
    torch.vk.reset_peak_memory_stats()
    reserved_before = torch.vk.memory_reserved()
    device_allocs_before = torch.vk.memory_stats()["num_device_alloc"]
    model = LlamaForCausalLM.from_pretrained(path, device_map="vk")
    peak = torch.vk.max_memory_reserved() - reserved_before
    assert all(p.device.type == "vk" for p in model.parameters())
    assert peak <= 1.3 * model_bytes, (peak, model_bytes)
    # transformers reserved the model's size in one allocation; every weight came out of it.
    assert torch.vk.memory_stats()["num_device_alloc"] - device_allocs_before == 1
    assert torch.vk.memory_allocated() >= model_bytes
    reference = LlamaForCausalLM.from_pretrained(path)
    for key, value in reference.state_dict().items():
        assert torch.equal(model.state_dict()[key].cpu(), value), key
    del model
    torch.vk.empty_cache()


@pytest.mark.parametrize("device_map", ["auto", {"": "vk:0"}, {"": 0}])
def test_device_maps_reach_vk(checkpoint, device_map):
    from transformers import LlamaForCausalLM

    path, _ = checkpoint
    model = LlamaForCausalLM.from_pretrained(path, device_map=device_map)
    assert {p.device for p in model.parameters()} == {torch.device("vk", 0)}
    ids = torch.tensor([[1, 5, 9, 200, 4000]])
    expected = LlamaForCausalLM.from_pretrained(path)(ids).logits
    torch.testing.assert_close(model(ids.to("vk")).logits.cpu(), expected, atol=1e-4,
                               rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sixteen_bit_load_and_generate(checkpoint, dtype):
    from transformers import LlamaForCausalLM

    path, _ = checkpoint
    model = LlamaForCausalLM.from_pretrained(path, device_map="vk", dtype=dtype)
    assert {p.dtype for p in model.parameters()} == {dtype}
    cpu = LlamaForCausalLM.from_pretrained(path, dtype=dtype)
    ids = torch.tensor([[1, 17, 99, 2048, 5]])
    logits = model(ids.to("vk")).logits.float().cpu()
    expected = cpu(ids).logits.float()
    tolerance = 2e-2 if dtype == torch.bfloat16 else 2e-3
    torch.testing.assert_close(logits, expected, atol=tolerance * expected.abs().max().item(),
                               rtol=tolerance)
    assert model.generate(ids.to("vk"), max_new_tokens=3, do_sample=False).shape == (1, 8)


def test_vocab_sized_tokenizer_round_trip():
    """The test tokenizer and VOCAB agree (the other tests rely on it)."""
    from tiny import word_tokenizer

    tokenizer = word_tokenizer()
    assert len(tokenizer) == VOCAB
    ids = tokenizer("the red cat")["input_ids"]
    assert tokenizer.decode(ids) == "the red cat"
