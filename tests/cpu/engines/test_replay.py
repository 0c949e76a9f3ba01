"""Tests for howeval.engines.replay: recorded responses by (sample_id, mode), both channels, a missing one an error."""
from __future__ import annotations

import json

from howeval.engines.base import ChatRequest
from howeval.engines.registry import build_engine


def test_replay_engine(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"sample_id": "a", "mode": "T", "response": "<think>x</think>y"}) + "\n"
                 + json.dumps({"sample_id": "a", "response": "z"}) + "\n")
    eng = build_engine("replay", None, {"path": str(p)})
    out = eng.generate([ChatRequest(messages=[], request_id=f"a|c|{m}") for m in ("T", "NT")]
                       + [ChatRequest(messages=[], request_id="b|c|NT")])
    assert [(c.reasoning, c.text) for c in out[:2]] == [("x", "y"), (None, "z")]
    assert out[2].error.startswith("replay: no recorded response")
