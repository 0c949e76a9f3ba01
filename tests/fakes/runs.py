"""A small synthetic run folder (responses, judgments, run_config.json) written without Ray or a model.

``make_run(path)`` writes 2 configs x 12 samples x 2 modes with known outcomes, for the report tests:
config ``alpha`` sends images (``images_seen`` 1, except on two samples without an image), ``beta`` is
text-only (``vision: false``, ``images_seen`` 0) and has no row in the ``factuality`` category. Two
pattern judges: ``rules`` (primary) and ``other`` (which fails on one row).
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA, conform, response_hash

CATS = [("ood_perception", "VG"), ("content_recognition", "VG"), ("grounding", "VG"), ("factuality", "VG"),
        ("ocr", "OS"), ("chart_understanding", "OS"), ("stem", "KR"), ("knowledge", "KR"), ("general_reasoning", "KR"),
        ("ocr", "OS"), ("stem", "KR"), ("grounding", "VG")]


def outcome(cfg: str, mode: str, i: int) -> tuple[bool | None, tuple[bool, bool, bool, bool]]:
    """(correct, (cot, rep, con, pr)) of sample i: a fixed pattern that differs per config and mode."""
    k = {"alpha": 0, "beta": 1}[cfg] + (2 if mode == "T" else 0)
    correct = None if (i + k) % 7 == 0 else (i + k) % 3 != 0
    cot = (i + k) % 4 == 0
    rep = (i * (k + 1)) % 5 == 1
    return correct, (cot, rep, False, i % 6 == 5 and mode == "NT")


def make_run(root: Path, name: str = "t") -> Path:
    root = Path(root)
    responses, judgments = [], []
    for cfg in ("alpha", "beta"):
        for mode in ("NT", "T"):
            for i, (cat, fam) in enumerate(CATS):
                if cfg == "beta" and cat == "factuality":
                    continue
                sid = f"s{i:02d}"
                text = " ".join(["word"] * (3 + 2 * i + (5 if mode == "T" else 0)))
                reasoning = "think" if mode == "T" else None
                h = response_hash(text, reasoning)
                prompt = json.dumps({"messages": [{"role": "system", "content": f"sys {mode}"},
                                                  {"role": "user", "content": [{"type": "image", "image_id": f"{sid}.png"},
                                                                               {"type": "text", "text": f"Q{i}"}]}],
                                     "max_tokens": 32})
                responses.append({"sample_id": sid, "config": cfg, "mode": mode, "model": "m", "engine": "replay",
                                  "benchmark": "b", "family": fam, "category": cat, "question": f"Q{i}", "answer": str(i),
                                  "answer_type": "integer", "reasoning": reasoning, "response": text,
                                  "finish_reason": "stop", "truncated": False, "prompt_tokens": 10, "completion_tokens": 5 + i,
                                  "latency_s": 0.1, "images_seen": (0 if cfg == "beta" or i in (3, 7) else 1), "error": None,
                                  "response_hash": h, "prompt": prompt, "raw_output": (f"<think>think</think>{text}" if reasoning else text)})
                correct, labels = outcome(cfg, mode, i)
                base = {"sample_id": sid, "config": cfg, "mode": mode, "verifier": "rules@1", "response_hash": h,
                        "correct": correct, "extracted": str(i) if correct else "0",
                        "verify_method": "rules" if correct is not None else "unresolved", "verify_reason": f"r{i}"}
                judgments.append({**base, "judge": "rules@1", **dict(zip(("cot", "rep", "con", "pr"), labels)),
                                  "evidence": json.dumps({"cot": "ev" if labels[0] else None}), "rationale": "rule cues",
                                  "judge_error": None})
                if cfg == "alpha" and mode == "NT" and i == 1:
                    judgments.append({**base, "judge": "other@1", "cot": None, "rep": None, "con": None, "pr": None,
                                      "evidence": None, "rationale": None, "judge_error": "llm: timeout"})
                else:
                    judgments.append({**base, "judge": "other@1", "cot": not labels[0], "rep": False, "con": False,
                                      "pr": False, "evidence": "{}", "rationale": "x", "judge_error": None})
    (root / "responses").mkdir(parents=True, exist_ok=True)
    (root / "judgments").mkdir(parents=True, exist_ok=True)
    pq.write_table(conform(responses, RESPONSE_SCHEMA), root / "responses" / "part-0.parquet")
    pq.write_table(conform(judgments, JUDGMENT_SCHEMA), root / "judgments" / "part-0.parquet")
    model = {"engine": "replay", "options": {"path": "x.jsonl"}, "modes": {"NT": {}, "T": {"max_tokens": 64}},
             "sampling": {"max_tokens": 32}}
    cfg = {"name": name, "output_uri": str(root), "benchmarks": [{"path": "m.jsonl", "name": "b"}],
           "models": [{"name": "alpha", **model}, {"name": "beta", "vision": False, **model}],
           "judges": {"pattern": [{"name": "rules"}, {"name": "other"}], "primary": "rules"}}
    (root / "run_config.json").write_text(json.dumps(cfg))
    return root
