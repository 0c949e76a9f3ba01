"""Tests for howeval.actors.policy: the policy stage on one Arrow batch, without Ray (replay engine, no model)."""
from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest
from PIL import Image

from howeval.actors.policy import REQUIRED_COLUMNS, PolicyStage
from howeval.config import ModelConfig
from howeval.records import RESPONSE_SCHEMA, MissingColumnsError, response_hash


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (255, 0, 0)).save(buf, format="PNG")
    return buf.getvalue()


def _rows(*ids: str, mode: str = "T") -> list[dict]:
    return [{"sample_id": sid, "config": "rep", "mode": mode, "question": f"Q {sid}?", "images": [_png()],
             "image_names": ["a.png"], "options": None, "answer": "4", "answer_type": "integer_number",
             "family": "VG", "category": "count", "benchmark": "demo"} for sid in ids]


@pytest.fixture
def stage(tmp_path):
    path = tmp_path / "recorded.jsonl"
    path.write_text(json.dumps({"sample_id": "s1", "mode": "T", "response": "<think>2+2</think> The answer is 4."}) + "\n")
    return PolicyStage(ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"T": {}}))


def test_rows_keep_both_channels_and_errors_stay_on_their_row(stage):
    out = stage(pa.Table.from_pylist(_rows("s1", "s2"))).to_pylist()
    assert stage.vision is True
    ok, missing = out
    assert (ok["sample_id"], ok["config"], ok["mode"], ok["engine"]) == ("s1", "rep", "T", "replay")
    assert (ok["reasoning"], ok["response"], ok["error"]) == ("2+2", "The answer is 4.", None)
    assert ok["response_hash"] == response_hash("The answer is 4.", "2+2")
    assert ok["images_seen"] == 1 and ok["answer"] == "4" and ok["benchmark"] == "demo"
    assert missing["error"].startswith("replay: no recorded response for 's2'")
    assert missing["response_hash"] is None and missing["response"] == ""


def test_output_has_exactly_the_response_schema(stage):
    table = stage(pa.Table.from_pylist(_rows("s1")))
    assert table.schema == RESPONSE_SCHEMA


def test_a_failing_engine_is_recorded_on_every_row(stage, monkeypatch):
    def boom(requests):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(stage.engine, "generate", boom)
    out = stage(pa.Table.from_pylist(_rows("s1", "s2"))).to_pylist()
    assert [r["error"] for r in out] == ["engine: RuntimeError: connection refused"] * 2
    assert all(r["response_hash"] is None for r in out)


def test_an_engine_that_drops_requests_is_an_error_on_every_row(stage, monkeypatch):
    monkeypatch.setattr(stage.engine, "generate", lambda requests: [])
    out = stage(pa.Table.from_pylist(_rows("s1", "s2"))).to_pylist()
    assert [r["error"] for r in out] == ["engine: RuntimeError: engine returned 0 completions for 2 requests"] * 2


def test_missing_columns_are_named(stage):
    rows = [{k: v for k, v in r.items() if k != "answer_type"} for r in _rows("s1")]
    with pytest.raises(MissingColumnsError, match=r"PolicyStage: missing columns \['answer_type'\] \(answer_type: verifier type\)"):
        stage(pa.Table.from_pylist(rows))
    assert "answer_type" in REQUIRED_COLUMNS


def test_a_dumped_config_is_refused_not_revalidated(tmp_path):
    with pytest.raises(TypeError, match="model_config: expected a ModelConfig, got dict"):
        PolicyStage({"name": "rep", "engine": "replay", "options": {"path": str(tmp_path / "r.jsonl")}, "modes": {"T": {}}})
