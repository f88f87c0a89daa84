"""PEFT LoRA on vk: only the adapters train, the run tracks the same run on the CPU, and
`merge_and_unload()` gives the unmerged model's outputs."""
import copy

import pytest
import torch

from tiny import ARCHS, to_device

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def test_lora_fine_tune_and_merge():
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    base = ARCHS["llama_gqa"].build()
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                        init_lora_weights=False)
    models = {"cpu": get_peft_model(copy.deepcopy(base), config),
              "vk": get_peft_model(copy.deepcopy(base).to("vk"), config)}
    # init_lora_weights=False draws the adapters at random: give both the same ones.
    models["vk"].load_state_dict({k: v for k, v in models["cpu"].state_dict().items()})
    trainable = {d: [n for n, p in m.named_parameters() if p.requires_grad]
                 for d, m in models.items()}
    assert trainable["cpu"] == trainable["vk"] and all("lora_" in n for n in trainable["vk"])
    opts = {d: torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-2)
            for d, m in models.items()}
    for step in range(3):
        batch = ARCHS["llama_gqa"].inputs(torch.Generator().manual_seed(step))
        losses = {}
        for device, model in models.items():
            opts[device].zero_grad()
            out = model(**to_device(batch, device))
            out.loss.backward()
            opts[device].step()
            losses[device] = out.loss.item()
        assert abs(losses["vk"] - losses["cpu"]) < 1e-4 * max(1.0, abs(losses["cpu"]))
        for n, p in models["vk"].named_parameters():
            assert (p.grad is not None) == ("lora_" in n), n
    for (n, p), (_, q) in zip(models["cpu"].named_parameters(), models["vk"].named_parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), atol=2e-5, rtol=1e-4, msg=n)
    model = models["vk"].eval()
    batch = to_device(ARCHS["llama_gqa"].inputs(torch.Generator().manual_seed(9)), "vk")
    with torch.no_grad():
        unmerged = model(**batch).logits
        merged_model = model.merge_and_unload()
        merged = merged_model(**batch).logits
    assert not any("lora_" in n for n, _ in merged_model.named_parameters())
    assert all(p.device.type == "vk" for p in merged_model.parameters())
    torch.testing.assert_close(merged.cpu(), unmerged.cpu(), atol=1e-5, rtol=1e-5)


def test_saved_adapter_loads_to_vk(tmp_path):
    """PEFT infers the device adapters load to (`infer_device`: "cuda" on a CUDA machine);
    on a vk machine that is vk (torch_vk.integrations.peft)."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from peft.utils.other import infer_device

    assert infer_device() == "vk"
    torch.manual_seed(0)
    config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    trained = get_peft_model(ARCHS["llama_gqa"].build(), config)
    trained.save_pretrained(tmp_path)
    torch.manual_seed(0)
    base = ARCHS["llama_gqa"].build().to("vk")
    loaded = PeftModel.from_pretrained(base, tmp_path)
    assert all(p.device.type == "vk" for p in loaded.parameters())
    for key, value in trained.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[key].cpu(), value, msg=key)
