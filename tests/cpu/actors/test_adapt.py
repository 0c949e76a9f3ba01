"""Tests for howeval.actors.adapt: AdaptMMBench episodes on one Arrow batch, without Ray (replay engine, fake embedder)."""
from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from howeval.actors.adapt import AdaptStage
from howeval.config import AdaptConfig, ModelConfig
from howeval.records import ADAPT_SCHEMA, MissingColumnsError


class WordOverlapEmbedder:
    """Stands in for StepEmbedder: similarity 1.0 when two steps share a word of 4+ letters, else 0.0."""

    def __init__(self, model_path=None):
        self.model_path = model_path

    @staticmethod
    def similarity(a, b):
        words = lambda s: {w for w in s.lower().replace(".", " ").split() if len(w) >= 4}  # noqa: E731
        return np.array([[float(bool(words(x) & words(y))) for y in b] for x in a])


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (0, 0, 255)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def stage(tmp_path, monkeypatch):
    import howeval.embed

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    path = tmp_path / "recorded.jsonl"
    # the replay engine keys an adapt turn by its request id "<uid>:<mode>:t<turn>"
    lines = [{"sample_id": "s1:text:t1", "response": "The sign is red.\nIt reads STOP.\nAnswer: STOP"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    settings = AdaptConfig(modes=["text"]).for_engine("replay")
    model = ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"NT": {}})
    return AdaptStage(model, settings, ADAPT_SCHEMA)


def _row(sid: str, mode: str = "text", **kw) -> dict:
    return {"sample_id": sid, "config": "rep", "adapt_mode": mode, "images": [_png()], "question": "What does the sign say?",
            "answer": "STOP", "answer_type": "other_text", "options": None, "evidence_boxes": [[0, 0, 8, 8]],
            "key_steps": ["Find the sign", "Read the word STOP"], "domain": "ocr", **kw}


def test_episode_verified_and_key_steps_covered(stage):
    out = stage(pa.Table.from_pylist([_row("s1")])).to_pylist()
    (r,) = out
    assert (r["sample_id"], r["config"], r["mode"], r["domain"]) == ("s1", "rep", "text", "ocr")
    assert (r["correct"], r["verify_method"], r["error"]) == (True, "rule", None)
    assert (r["called"], r["n_calls"], r["n_turns"], r["steps"]) == (False, 0, 1, 3)
    assert r["trajectory_steps"] == ["The sign is red.", "It reads STOP.", "Answer: STOP"]
    # "Find the sign" shares "sign" with step 1, "Read the word STOP" shares "stop" with steps 2 and 3
    assert r["key_step_coverage"] == 1.0
    assert json.loads(r["calls"]) == []


def test_engine_error_row_has_no_verdict_and_no_coverage(stage):
    (r,) = stage(pa.Table.from_pylist([_row("s2")])).to_pylist()
    assert r["error"].startswith("replay: no recorded response")
    assert r["correct"] is None and r["verify_method"] is None and r["key_step_coverage"] is None


def test_coverage_edge_cases(stage):
    assert stage.coverage(None, ["x"]) is None and stage.coverage([], ["x"]) is None
    assert stage.coverage(["Read the sign"], []) == 0.0
    assert stage.coverage(["Read the sign", "Count apples"], ["The sign is red."]) == 0.5


def test_missing_columns_are_named(stage):
    row = {k: v for k, v in _row("s1").items() if k != "evidence_boxes"}
    with pytest.raises(MissingColumnsError, match=r"AdaptStage: missing columns \['evidence_boxes'\]"):
        stage(pa.Table.from_pylist([row]))


def test_dumped_configs_are_refused_not_revalidated(tmp_path):
    model = ModelConfig(name="rep", engine="replay", options={"path": str(tmp_path / "r.jsonl")}, modes={"NT": {}})
    settings = AdaptConfig(modes=["text"]).for_engine("replay")
    with pytest.raises(TypeError, match="settings: expected a AdaptConfig, got dict"):
        AdaptStage(model, settings.model_dump(), ADAPT_SCHEMA)
    with pytest.raises(TypeError, match="model_config: expected a ModelConfig, got dict"):
        AdaptStage(model.model_dump(), settings, ADAPT_SCHEMA)
    with pytest.raises(ValueError, match="tool_format is None"):
        AdaptStage(model, AdaptConfig(modes=["text"]), ADAPT_SCHEMA)


def test_process_judge_decides_coverage_and_tool_effectiveness(tmp_path, monkeypatch):
    """Issue 31: with ``adapt.process_judge`` set, coverage and each executed call's effectiveness come from
    the LLM judge (the scripted fake OpenAI-compatible server), recorded with the method; without it the
    embedding match stays the named default."""
    import howeval.embed

    from fakes.chat_server import ScriptedChatServer

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    path = tmp_path / "recorded.jsonl"
    lines = [{"sample_id": "s1:adaptive:t1", "response": "The sign is small.\nTOOL: zoom_in(box=[0, 0, 16, 12])"},
             {"sample_id": "s1:adaptive:t2", "response": "It reads STOP.\nAnswer: STOP"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    model = ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"NT": {}})

    def script(n, body):
        user = body["messages"][1]["content"]
        if "Key steps:" in user:
            return ("ok", '{"covered": [true, false], "reason": "never reads the word"}')
        return ("ok", '{"effective": true, "reason": "the box holds the sign"}' if "zoom_in" in user else "?")

    with ScriptedChatServer(script) as srv:
        settings = AdaptConfig(modes=["adaptive"], process_judge={"model": "gpt-5", "options": {"base_url": srv.base_url}},
                               process_judge_cache=str(tmp_path / "cache")).for_engine("replay")
        (r,) = AdaptStage(model, settings, ADAPT_SCHEMA)(pa.Table.from_pylist([_row("s1", "adaptive")])).to_pylist()
    assert (r["called"], r["n_calls"], r["correct"]) == (True, 1, True)
    assert r["key_step_coverage"] == 0.5 and r["coverage_method"] == "llm:gpt-5@gpt-5|process-v1"
    assert r["coverage_error"] is None and (r["n_calls_effective"], r["n_calls_judged"]) == (1, 1)
    # the same episode without a process judge: the word-overlap stand-in covers both key steps
    plain = AdaptStage(model, AdaptConfig(modes=["adaptive"]).for_engine("replay"), ADAPT_SCHEMA)
    (p,) = plain(pa.Table.from_pylist([_row("s1", "adaptive")])).to_pylist()
    assert p["coverage_method"] == "embedding@0.35" and p["key_step_coverage"] == 1.0
    assert p["n_calls_judged"] is None
