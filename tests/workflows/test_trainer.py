"""`transformers.Trainer` on vk with no device arguments, as on a CUDA machine: 3 steps equal
to the same Trainer run on the CPU (`use_cpu=True`), mixed precision (fp16 with the vk
GradScaler, bf16), and checkpoints that carry vk's generator state.
"""
import pytest
import torch

from tiny import VOCAB

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


# AdamW's eps raised from 1e-8: attention key biases have a zero gradient in exact arithmetic
# (softmax ignores them) and rounding noise in practice, which eps = 1e-8 turns into full-size
# steps of the noise's sign on any two devices.
ADAM_EPS = 1e-3


class Sentences(torch.utils.data.Dataset):
    """16 fixed token rows with labels (no tokenizer needed)."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(4, VOCAB, (8,), generator=g),
                "attention_mask": torch.ones(8, dtype=torch.long), "labels": torch.tensor(i % 3)}


def _model(dropout=0.0):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    return BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=48, max_position_embeddings=16, num_labels=3,
        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
        classifier_dropout=dropout, initializer_range=0.2))


def _train(tmp_path, steps=3, model=None, **args):
    from transformers import Trainer, TrainingArguments

    model = model or _model()
    arguments = TrainingArguments(
        output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=4,
        learning_rate=5e-3, report_to=[], logging_steps=1, save_strategy="no",
        dataloader_num_workers=0, disable_tqdm=True, seed=0, adam_epsilon=ADAM_EPS, **args)
    trainer = Trainer(model=model, args=arguments, train_dataset=Sentences())
    result = trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return trainer, model, result, losses


def test_trains_on_vk_like_cuda_and_matches_the_cpu(tmp_path):
    trainer, model, _, losses = _train(tmp_path / "vk")
    assert trainer.args.device.type == "vk"
    assert all(p.device.type == "vk" for p in model.parameters())
    cpu_trainer, cpu_model, _, cpu_losses = _train(tmp_path / "cpu", use_cpu=True)
    assert cpu_trainer.args.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in cpu_model.parameters())
    assert len(losses) == len(cpu_losses) == 3
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), atol=1e-4,
                               rtol=1e-4)
    for (name, p), (_, q) in zip(model.named_parameters(), cpu_model.named_parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_mixed_precision(tmp_path, precision):
    trainer, model, result, losses = _train(tmp_path, **{precision: True})
    assert trainer.args.device.type == "vk"
    assert trainer.accelerator.native_amp
    if precision == "fp16":
        scaler = trainer.accelerator.scaler
        assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == "vk"
    assert all(p.dtype == torch.float32 and p.device.type == "vk" for p in model.parameters())
    # Reference: the same run on the CPU in float32; 16-bit autocast changes the losses a little.
    _, _, _, cpu_losses = _train(tmp_path / "cpu", use_cpu=True)
    tolerance = 3e-2 if precision == "bf16" else 5e-3
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), atol=tolerance,
                               rtol=tolerance)


def test_checkpoint_saves_and_restores_the_vk_generator(tmp_path):
    """A checkpoint holds vk's generator state next to the CPU / CUDA ones, and resuming puts
    it back (dropout masks then continue the checkpointed stream). A CPU run writes none."""
    from transformers import Trainer, TrainingArguments

    def trainer_for(out, **args):
        arguments = TrainingArguments(
            output_dir=str(out), max_steps=2, per_device_train_batch_size=4,
            learning_rate=5e-3, report_to=[], save_strategy="steps", save_steps=2,
            disable_tqdm=True, seed=0, dataloader_num_workers=0, adam_epsilon=ADAM_EPS, **args)
        return Trainer(model=_model(dropout=0.2), args=arguments, train_dataset=Sentences())

    trainer = trainer_for(tmp_path / "vk")
    trainer.train()
    checkpoint = tmp_path / "vk" / "checkpoint-2"
    saved = torch.load(checkpoint / "rng_state_vk.pth", weights_only=True)
    torch.vk.manual_seed(12345)  # anything else
    assert not torch.equal(torch.vk.get_rng_state(), saved)
    trainer_for(tmp_path / "vk")._load_rng_state(str(checkpoint))
    assert torch.equal(torch.vk.get_rng_state(), saved)
    # The generator state the checkpoint holds is the one training left behind at the save.
    trainer_for(tmp_path / "again").train()
    after = torch.vk.get_rng_state()
    assert torch.equal(after, torch.load(tmp_path / "again" / "checkpoint-2" / "rng_state_vk.pth",
                                         weights_only=True))

    trainer_for(tmp_path / "cpu", use_cpu=True).train()
    assert not (tmp_path / "cpu" / "checkpoint-2" / "rng_state_vk.pth").exists()
