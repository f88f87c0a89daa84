"""The adapters in torch_vk/integrations are lazy (nothing is imported or patched until the
user imports the library) and change nothing on a machine without a vk device."""
import os
import subprocess
import sys
import textwrap

import pytest


def _run(code, **env):
    environment = dict(os.environ, **env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_importing_torch_imports_no_library():
    out = _run("""
        import sys, torch, torch_vk
        libs = ["transformers", "accelerate", "peft", "diffusers", "safetensors.torch",
                "sentence_transformers"]
        print([m for m in libs if m in sys.modules])
    """)
    assert out == "[]"


@pytest.mark.parametrize("visible", ["", None])
def test_patches_only_where_vk_is_available(visible):
    env = {} if visible is None else {"TORCH_VK_VISIBLE_DEVICES": visible}
    out = _run("""
        import torch, torch_vk
        import transformers.training_args as ta, transformers.generation.utils as gu
        import transformers.trainer as tr
        wrapped = lambda f: getattr(f, "_torch_vk_wrapped", False)
        print(torch.vk.is_available(),
              wrapped(ta.TrainingArguments.__dict__["_setup_devices"].func),
              wrapped(ta.is_torch_bf16_gpu_available),
              wrapped(gu.GenerationMixin._valid_auto_compile_criteria),
              wrapped(tr.Trainer._save_rng_state))
    """, **env)
    available = visible is None
    assert out == " ".join([str(available)] * 5)


def test_cpu_only_trainer_args_unchanged_without_vk():
    out = _run("""
        import torch, torch_vk
        from transformers import TrainingArguments
        print(TrainingArguments(output_dir="/tmp/unused", report_to=[]).device)
    """, TORCH_VK_VISIBLE_DEVICES="")
    assert out == "cpu"
