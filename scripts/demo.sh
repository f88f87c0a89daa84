#!/usr/bin/env bash
# Sets up (scripts/setup.sh), prints the Vulkan devices, and trains two small models on "vk":
# an MLP (~30 s on lavapipe), then a short run of the character-level GPT of
# examples/train_gpt.py (--quick, under a minute on lavapipe; its checkpoint, loss curve and
# summary go to runs/gpt/). Drop --quick for the full run (~5 minutes on lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m torch_vk info
.venv/bin/python examples/train_mlp.py
.venv/bin/python examples/train_gpt.py --quick
