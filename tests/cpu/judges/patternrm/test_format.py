"""PatternRM: label format and parser, SFT records, oversampling, the actor, and a CPU SFT smoke run."""
from __future__ import annotations

import json

import pytest

from howeval.judges.patternrm.format import (
    PatternRMParseError,
    format_labels,
    oversample,
    parse_label_output,
    rollout_key,
    sft_record,
    thinking_target,
    unanimous_rows,
)

L = lambda *b: dict(zip(("cot", "rep", "con", "pr"), b))  # noqa: E731


@pytest.mark.parametrize("text, want", [
    ("LABELS: cot=1 rep=0 con=0 pr=1", L(True, False, False, True)),
    ("labels: cot=0, rep=0, con=1, pr=0.", L(False, False, True, False)),
    ("LABELS: cot=1 rep=1 con=1 pr=1\nLABELS: cot=0 rep=0 con=0 pr=0", L(False, False, False, False)),  # last line
    ("<analysis>\ncot: absent.\n</analysis>\nLABELS: pr=1 con=0 rep=0 cot=0", L(False, False, False, True)),
])
def test_parse_ok(text, want):
    assert parse_label_output(text) == want


@pytest.mark.parametrize("text, why", [
    ("", "no 'LABELS:'"),
    ("cot=1 rep=0 con=0 pr=0", "no 'LABELS:'"),
    ("LABELS: cot=1 rep=0 con=0", "missing"),
    ("LABELS: cot=1 rep=0 con=0 pr=0 cot=1", "repeated"),
    ("LABELS: cot=yes rep=0 con=0 pr=0", "must be 0 or 1"),
    ("LABELS: cot=1 rep=0 con=0 pr=0 foo=1", "unknown label"),
    ("LABELS: cot=1 rep=0 con=0 pr=0 because", "unexpected text"),
])
def test_parse_errors(text, why):
    with pytest.raises(PatternRMParseError, match=why):
        parse_label_output(text)


def test_round_trip_and_records():
    labs = L(True, False, True, False)
    assert parse_label_output(format_labels(labs)) == labs
    assert parse_label_output(thinking_target(labs, {"con": "5 ... 6"})) == labs
    rec = sft_record("Q?", "R" * 100, labs, "direct", max_chars=20, meta={"sample_id": "s"})
    assert rec["sample_id"] == "s" and rec["labels"] == labs
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant"]
    assert "[...]" in rec["messages"][1]["content"] and "image" not in json.dumps(rec["messages"][1])
    with pytest.raises(ValueError, match="target"):
        sft_record("q", "r", labs, "both")


def test_unanimous_and_oversample():
    rows = []
    for sid, votes in {"a": [L(1, 0, 0, 0)] * 3, "b": [L(0, 0, 0, 0), L(0, 0, 0, 0), L(0, 1, 0, 0)]}.items():
        for j, v in zip(("j1", "j2", "j3"), votes):
            rows.append({"sample_id": sid, "config": "c", "mode": "NT", "response_hash": "h", "judge": j, **v})
    kept, counts = unanimous_rows(rows, ["j1", "j2", "j3"])
    assert [k["sample_id"] for k in kept] == ["a"] and counts["disagree"] == 1
    base = [{"sample_id": str(i), "labels": L(i < 1, i < 2, False, False)} for i in range(20)]
    out = oversample(base, min_rate=0.2, max_copies=10)
    assert out == oversample(base, min_rate=0.2, max_copies=10)  # deterministic
    n = len(out)
    assert sum(r["labels"]["cot"] for r in out) / n >= 0.2 and sum(r["labels"]["rep"] for r in out) / n >= 0.2
    assert out[:20] == [{**r, "copy": 0} for r in base]


def test_rollout_key_stable():
    assert rollout_key("p", "r") == rollout_key("p", "r") != rollout_key("p", "r ")
    assert rollout_key("ab", "c") != rollout_key("a", "bc")


@pytest.mark.slow
def test_sft_smoke_then_calibration(tmp_path):
    """3 SFT steps (use_cpu) on the tiny test LM (SmolLM2's tokenizer and chat template, 40 MB checkpoints where
    SmolLM2's are 500 MB), checkpoint saved, scored by the calibration job: every prediction either parses or
    carries its reason."""
    from howeval.ray_jobs.build_corpus import build_corpus
    from howeval.ray_jobs.train_patternrm import main

    from fakes.judged_run import make_run

    build_corpus(str(make_run(tmp_path)), None, str(tmp_path / "corpus"), holdout=0.3, seed=0)
    cfg = tmp_path / "smoke.yaml"
    import yaml

    raw = yaml.safe_load(open("configs/patternrm/smoke.yaml"))
    raw["model"] = "embedded:tiny-lm"
    raw["sft"].update(per_device_train_batch_size=1, max_length=256)
    raw["calibration"].update(max_items=4)
    cfg.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert main(["--config", str(cfg), "--corpus", str(tmp_path / "corpus" / "sft_direct.jsonl"),
                 "--output-dir", str(out), "--calibration", str(tmp_path / "corpus" / "heldout.jsonl")]) == 0
    assert (out / "checkpoint" / "config.json").exists() and (out / "checkpoint" / "model.safetensors").exists()
    scores = json.loads((out / "calibration" / "calibration.json").read_text())["judges"]["patternrm"]
    assert set(scores["labels"]) == {"cot", "rep", "con", "pr"}
    assert {"precision", "recall", "f1"} <= set(scores["labels"]["cot"])
    preds = [json.loads(x) for x in (out / "calibration" / "patternrm_predictions.jsonl").read_text().splitlines()]
    assert preds and all((p["labels"] is None) == (p["judge_error"] is not None) for p in preds)
