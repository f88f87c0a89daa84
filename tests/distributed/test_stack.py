"""Frameworks on top of the backend: TorchTitan (the llama3 debug model, 10 steps, FSDP on 2
ranks vs 1 rank, device "vk") and Ray Train (TorchTrainer, 2 workers on a local cluster, DDP
on vk with backend "vkgloo"). Tokenizer and dataset are built here; nothing is downloaded."""
import importlib.util
import json
import os
import random
import re
import sys

import pytest

from launcher import REPO, WORKERS, run_command

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}

WORDS = ("the quick brown fox jumps over a lazy dog while seven small vulkan devices train one "
         "tiny llama on shards of text and every rank keeps the same weights after each step "
         "because gradients are reduced across the group").split()


SEQ_LEN = 32


def build_assets(root):
    """A word-level tokenizer (tokenizer.json + tokenizer_config.json; the debug model has 2048
    embeddings) and a JSON-lines dataset whose documents are all the same SEQ_LEN - 1 words:
    with the BOS / EOS tokens each document is exactly one training sample (SEQ_LEN + 1
    tokens), so every sample is the same and the 1-rank and 2-rank runs see the same global
    batches whatever the sharding of the dataset."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    rng = random.Random(0)
    words = [rng.choice(WORDS) for _ in range(SEQ_LEN - 1)]
    doc = " ".join(words)
    vocab = {w: i for i, w in enumerate(["<unk>", "<|begin_of_text|>", "<|end_of_text|>"] +
                                        sorted(set(WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert len(tok.encode(doc).ids) == SEQ_LEN - 1
    tok_dir, data_dir = os.path.join(root, "tokenizer"), os.path.join(root, "data")
    os.makedirs(tok_dir)
    os.makedirs(data_dir)
    tok.save(os.path.join(tok_dir, "tokenizer.json"))
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>",
                   "add_bos_token": True, "add_eos_token": True}, f)
    with open(os.path.join(data_dir, "train.json"), "w") as f:
        for _ in range(64):
            f.write(json.dumps({"text": doc}) + "\n")
    return tok_dir, data_dir


def titan_losses(out):
    """{step: loss} from TorchTitan's metrics lines ("step:  3  loss:  7.1234  ..."); every rank
    logs the same global loss."""
    losses = {}
    for m in re.finditer(r"step:\s*(\d+)\s+loss:\s*([0-9.]+)", out):
        losses.setdefault(int(m.group(1)), float(m.group(2)))
    return [losses[k] for k in sorted(losses)]


def test_torchtitan_llama3_debug_fsdp_2_ranks_vs_1(tmp_path):
    if importlib.util.find_spec("torchtitan") is None:  # importing it needs Triton (see stubs/)
        pytest.skip("TorchTitan is not installed (scripts/setup.sh installs it)")
    tok_dir, data_dir = build_assets(str(tmp_path))
    global_batch = 2

    common = ["--model.name", "llama3", "--model.flavor", "debugmodel",
              "--model.hf_assets_path", tok_dir,
              "--training.dataset", "c4_test", "--training.dataset_path", data_dir,
              "--training.seq_len", str(SEQ_LEN), "--training.mixed_precision_param", "float32",
              "--activation_checkpoint.mode", "none", "--compile.no-enable",
              "--optimizer.implementation", "foreach", "--lr_scheduler.warmup_steps", "2",
              "--metrics.log_freq", "1", "--metrics.disable_color_printing",
              "--comm.init_timeout_seconds", "120", "--comm.train_timeout_seconds", "120"]

    def torchrun(ranks, args):
        cmd = TORCHRUN + [f"--nproc_per_node={ranks}", str(WORKERS / "torchtitan_run.py"),
                          *common, *args]
        # TorchTitan sets device LOCAL_RANK: the ranks share the one device as vk:0, vk:1.
        env = dict(OFFLINE, TORCH_VK_VISIBLE_DEVICES=",".join(["0"] * ranks),
                   HF_DATASETS_CACHE=str(tmp_path / "hf_datasets_cache"))
        out = run_command(cmd, env=env, timeout=400).stdout
        assert out.count("TORCHTITAN-DONE") == ranks, out[-5000:]
        return out

    # One initialization for both runs (TorchTitan's recipe for comparing parallelisms): a
    # sharded init draws other random numbers than an unsharded one. The seed checkpoint is
    # written by one process and loaded (resharded by DCP) by each run.
    seed_dir = tmp_path / "seed"
    torchrun(1, ["--checkpoint.enable", "--checkpoint.create_seed_checkpoint",
                 "--parallelism.data_parallel_shard_degree", "1", "--training.steps", "1",
                 "--training.local_batch_size", "1", "--job.dump_folder", str(seed_dir)])
    seed = seed_dir / "checkpoint" / "step-0"
    assert seed.is_dir(), sorted(p.name for p in seed_dir.rglob("*"))

    def run(ranks):
        out = torchrun(ranks, ["--training.steps", "10",
                               "--training.local_batch_size", str(global_batch // ranks),
                               "--parallelism.data_parallel_shard_degree", "-1",
                               "--checkpoint.enable", "--checkpoint.load_only",
                               "--checkpoint.initial_load_path", str(seed),
                               "--job.dump_folder", str(tmp_path / f"out{ranks}")])
        losses = titan_losses(out)
        assert len(losses) == 10, out[-5000:]
        return losses, out

    one, _ = run(1)
    two, out2 = run(2)
    assert "FSDP" in out2 or "fsdp" in out2.lower(), out2[-3000:]  # the 2-rank run sharded
    assert one[-1] < one[0]  # it learns
    for step, (a, b) in enumerate(zip(one, two), start=1):
        assert abs(a - b) <= 0.01 * a, f"step {step}: 1 rank {a}, 2 ranks {b}\n{one}\n{two}"


def test_ray_train_torch_trainer_two_workers(tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (scripts/setup.sh installs it)")
    out = run_command([sys.executable, str(WORKERS / "ray_train.py"), str(tmp_path)],
                      env={"RAY_DISABLE_USAGE_STATS": "1", "RAY_USAGE_STATS_ENABLED": "0",
                           "PYTHONPATH": os.pathsep.join([str(REPO), str(WORKERS)])},
                      timeout=400).stdout
    assert "RAY-TRAIN-OK" in out, out[-6000:]
