"""`vllm serve` on "vk": the OpenAI-compatible server on 127.0.0.1 answers /v1/completions and a
streamed /v1/chat/completions with Hugging Face CPU's greedy tokens.

One server for the module, started in its own process group with TORCH_VK_FALLBACK=error;
every wait is bounded, and the test stops the server (SIGTERM, then SIGKILL of the group).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("vllm")

import tiny_models as tm  # noqa: E402

STARTUP_TIMEOUT = 240  # seconds (engine start-up on lavapipe, 2 cores)
REQUEST_TIMEOUT = 60
MAX_TOKENS = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tm.save("llama_gqa", str(tmp_path_factory.mktemp("served")), seed=2)
    port = _free_port()
    log = open(tmp_path_factory.mktemp("log") / "server.log", "w+")
    env = dict(os.environ, TORCH_VK_FALLBACK="error", VLLM_NO_USAGE_STATS="1",
               HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", directory,
               "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
               "--max-model-len", "128", "--kv-cache-memory-bytes", str(4 << 20),
               "--max-num-seqs", "4", "--seed", "0", "--served-model-name", "tiny"]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(f"vllm serve exited with {process.returncode}:\n{log.read()[-4000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"vllm serve did not start in {STARTUP_TIMEOUT} s:\n"
                            f"{log.read()[-4000:]}")
            time.sleep(0.5)
        yield directory, base
    finally:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
            else:  # the engine-core child, should it outlive the server
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            log.close()


def _hf_words(directory: str, prompt: str) -> list[str]:
    """HF CPU's greedy continuation as words (the word-level tokenizer: one token per word;
    servers and tokenizers differ only in the spaces they join them with)."""
    from transformers import AutoTokenizer

    tokens = tm.hf_greedy(directory, [prompt], MAX_TOKENS)[0]
    words = [AutoTokenizer.from_pretrained(directory).convert_ids_to_tokens(t) for t in tokens]
    assert len(words) == MAX_TOKENS
    return words


def test_completions(server):
    directory, base = server
    prompt = "the small cat sees a red bird"
    with _post(base + "/v1/completions",
               {"model": "tiny", "prompt": prompt, "max_tokens": MAX_TOKENS,
                "temperature": 0, "ignore_eos": True, "skip_special_tokens": False}) as r:
        body = json.load(r)
    assert body["object"] == "text_completion"
    assert body["usage"]["completion_tokens"] == MAX_TOKENS
    assert body["choices"][0]["text"].split() == _hf_words(directory, prompt)


def test_streamed_chat_completions(server):
    directory, base = server
    messages = [{"role": "user", "content": "one dog finds the old house"}]
    pieces, events = [], 0
    with _post(base + "/v1/chat/completions",
               {"model": "tiny", "messages": messages, "max_tokens": MAX_TOKENS,
                "temperature": 0, "ignore_eos": True, "stream": True,
                "skip_special_tokens": False}) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            assert chunk["object"] == "chat.completion.chunk"
            events += 1
            pieces.append(chunk["choices"][0]["delta"].get("content") or "")
    assert events >= 2  # streamed, not one response
    # The chat template of tiny_models.word_tokenizer: the contents, each followed by " ".
    assert "".join(pieces).split() == _hf_words(directory, "one dog finds the old house ")
