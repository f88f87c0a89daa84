#!/usr/bin/env bash
# Sets up (scripts/setup.sh), prints the Vulkan devices, and trains a small model on "vk".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m torch_vk info
.venv/bin/python examples/train_mlp.py
