"""The checkpoint PatternRM through the project's engine interface (``engine: vllm``), with vLLM replaced by a
scripted engine in the registry: requests, options and error rows, without a GPU."""
from __future__ import annotations

import pytest

from howeval.config.rewards import PatternRMConfig
from howeval.engines.base import Completion
from howeval.judges.patternrm.format import patternrm_messages
from howeval.judges.patternrm.model import PatternRM


class ScriptedEngine:
    def __init__(self, model, opts, outputs):
        self.model, self.opts, self.outputs, self.requests = model, opts, outputs, []

    def generate(self, reqs):
        self.requests += reqs
        return [Completion(text="", raw=o, request_id=r.request_id) if not o.startswith("!")
                else Completion(text="", error=o[1:], finish_reason="error", request_id=r.request_id)
                for r, o in zip(reqs, self.outputs)]


def test_checkpoint_patternrm_on_the_vllm_engine(monkeypatch):
    from howeval.engines import registry

    made = []
    outputs = ["LABELS: cot=1 rep=0 con=0 pr=1", "no labels here", "!CUDA out of memory"]
    monkeypatch.setitem(registry._BUILDERS, "vllm", lambda model, opts: made.append(ScriptedEngine(model, opts, outputs)) or made[-1])
    cfg = PatternRMConfig(kind="checkpoint", path="/models/patternrm-sft", engine="vllm",
                          engine_options={"gpu_memory_utilization": 0.2}, max_new_tokens=16)
    rm = PatternRM(**cfg.model_dump())
    assert rm.version == "checkpoint@/models/patternrm-sft#vllm"
    eng = made[0]
    assert eng.model == "/models/patternrm-sft"
    assert eng.opts.all_engine_kwargs() == {"max_model_len": 4096, "gpu_memory_utilization": 0.2}  # VLLMOptions
    items = [{"question": f"q{i}", "response": f"r{i}"} for i in range(3)]
    out = rm.label_batch(items)
    assert [r.max_tokens for r in eng.requests] == [16, 16, 16] and {r.temperature for r in eng.requests} == {0.0}
    assert eng.requests[1].messages == patternrm_messages("q1", "r1", 4000)
    assert out[0] == {"labels": {"cot": True, "rep": False, "con": False, "pr": True}, "error": None,
                      "raw": "LABELS: cot=1 rep=0 con=0 pr=1"}
    assert out[1]["labels"] is None and out[1]["error"].startswith("patternrm_parse_error")
    assert out[2] == {"labels": None, "error": "patternrm_engine_error: CUDA out of memory", "raw": None}


@pytest.mark.parametrize("kw", [{"kind": "trained", "engine": "vllm"}, {"kind": "rules", "engine_options": {"x": 1}}])
def test_engine_settings_need_kind_checkpoint(kw):
    with pytest.raises(ValueError, match="apply to kind 'checkpoint' only"):
        PatternRMConfig(**kw)
