"""GPU checks in one command (``make check-gpu``): the vLLM engine, a DeepSpeed GRPO step, PatternRM on the GPU.

Run on a CUDA machine with the GPU extra: ``pip install -e '.[gpu,test]' -c constraints/gpu.txt`` then
``make check-gpu``. Each check prints one line, ``PASS|FAIL|SKIP <name>: <detail>``; the exit status is the
number of failed checks. Without CUDA (or without vllm / deepspeed) a check prints SKIP and the reason.

- ``vllm-engine``: the project's ``vllm`` engine (``howeval.engines.registry.build_engine``) on the embedded
  SmolLM2 copy, 64 greedy prompts of 32 tokens; prints output tokens/s.
- ``deepspeed-grpo``: ``howeval.ray_jobs.train_grpo.run`` with ``configs/deepspeed/zero2.json`` on 1 GPU worker, 1 step
  (the tiny test LM, in-process rule rewards); checks DeepSpeed's ``global_step1/`` ZeRO shards.
- ``patternrm-gpu``: the embedded trained PatternRM (``kind: trained``, ``device: cuda``; needs the head from
  ``make patternrm`` or ``build/k8s/patternrm-minilm``), 256 items; prints labels/s.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class Skip(Exception):
    """A check that cannot run here (the message says why)."""


def _cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise Skip("no CUDA device (torch.cuda.is_available() is False)")


def check_vllm_engine() -> str:
    _cuda()
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        raise Skip(f"vllm not installed ({e}): pip install -e '.[gpu]' -c constraints/gpu.txt") from e
    from howeval.engines.base import ChatRequest
    from howeval.engines.hf import embedded_checkpoint
    from howeval.engines.registry import build_engine

    eng = build_engine("vllm", embedded_checkpoint(), {"max_model_len": 2048, "gpu_memory_utilization": 0.3})
    reqs = [ChatRequest(messages=[{"role": "user", "content": f"Count from {i} to {i + 20}."}], max_tokens=32)
            for i in range(64)]
    t0 = time.perf_counter()
    out = eng.generate(reqs)
    dt = time.perf_counter() - t0
    errors = [c.error for c in out if c.error]
    assert not errors, errors[:3]
    tokens = sum(c.completion_tokens for c in out)
    return f"{len(out)} completions, {tokens} tokens in {dt:.2f} s = {tokens / dt:.0f} tok/s (vllm {vllm.__version__})"


def check_deepspeed_grpo() -> str:
    _cuda()
    try:
        import deepspeed
    except ImportError as e:
        raise Skip(f"deepspeed not installed ({e})") from e
    from howeval.ray_jobs.train_grpo import run
    from howeval.training.config import load_train_config

    os.environ.setdefault("RAY_ADDRESS", "local")
    cfg = load_train_config(str(REPO / "configs" / "train" / "smoke.yaml"), overrides={
        "model": "embedded:tiny-lm",
        "reward": {"source": "inprocess", "patternrm": {"kind": "rules"}},
        "scaling": {"use_gpu": True, "resources_per_worker": {"CPU": 2, "GPU": 1}},
        "grpo": {"deepspeed": str(REPO / "configs" / "deepspeed" / "zero2.json"), "beta": 0.0, "bf16": True},
    })
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="check-gpu-") as tmp:
        result = run(cfg, storage_path=tmp, max_steps=1)
        with result.checkpoint.as_directory() as d:
            shards = sorted(p.name for p in (Path(d) / "global_step1").iterdir())
    assert any(s.endswith("optim_states.pt") for s in shards), shards
    return f"step {result.metrics['step']} in {time.perf_counter() - t0:.1f} s, ZeRO-2 shards {shards} (deepspeed {deepspeed.__version__})"


def check_patternrm_gpu() -> str:
    _cuda()
    from howeval.judges.patternrm.head import default_cache_path
    from howeval.judges.patternrm.model import PatternRM

    path = next((p for p in (REPO / "build" / "k8s" / "patternrm-minilm", default_cache_path())
                 if (p / "meta.json").exists()), None)
    if path is None:
        raise Skip("no trained PatternRM head: run `make patternrm` (or make k8s-image-assets) first")
    prm = PatternRM(kind="trained", path=str(path), device="cuda")
    items = [{"prompt": "What is 2+2?", "response": f"Step {i}: 2+2 = 4. So the answer is \\boxed{{4}}."}
             for i in range(256)]
    prm.label_batch(items[:8])  # warm-up (CUDA context, kernels)
    t0 = time.perf_counter()
    out = prm.label_batch(items)
    dt = time.perf_counter() - t0
    assert len(out) == len(items) and not [o for o in out if o.get("error")], out[:2]
    return f"{len(out)} items in {dt:.3f} s = {len(out) / dt:.0f} labels/s on cuda ({path.name})"


CHECKS = {"vllm-engine": check_vllm_engine, "deepspeed-grpo": check_deepspeed_grpo, "patternrm-gpu": check_patternrm_gpu}


def main(names: list[str]) -> int:
    failed = 0
    for name in names or list(CHECKS):
        if name not in CHECKS:
            raise SystemExit(f"unknown check {name!r}; known: {sorted(CHECKS)}")
        try:
            print(f"PASS {name}: {CHECKS[name]()}", flush=True)
        except Skip as e:
            print(f"SKIP {name}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - one line per check, whatever broke; the exit status counts them
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e)[:400]}", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
