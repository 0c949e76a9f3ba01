"""Judge response rows: verifier (correctness) + pattern judges (four labels) -> Judgment rows.

Pure core used by the Ray stage ``actors/judge.py`` and by tests. Rules (SPEC 1, DESIGN):
- only y_m (``response``) is judged; the reasoning channel never is;
- an engine error on the response -> ``judge_error`` "no response: <reason>", correct and labels null;
- a truncated thinking response (no y_m) -> correct False (method "truncated"), labels null;
- a judge failure -> ``judge_error`` with its reason and labels null, never a default label;
- the verifier's unresolved cases stay null unless an LLM fallback resolves them (method "llm").
"""
from __future__ import annotations

import json
from typing import Any

from howeval.config import JudgesConfig, PatternJudgeConfig
from howeval.records import LABELS


def judge_id(cfg: PatternJudgeConfig) -> str:
    """Cache id of a pattern judge: ``<name>@<version>``."""
    return f"{cfg.name}@{cfg.version}"


def merge_judges(old: JudgesConfig, new: JudgesConfig) -> JudgesConfig:
    """The judges of a run after re-judging with ``new``: the run keeps its earlier pattern judges (their
    judgments stay reportable), a judge of the same name is replaced, the verifier is ``new``'s, and the
    primary is ``new.primary`` if given, else the old primary."""
    names = {j.name for j in new.pattern}
    merged = new.model_dump()
    merged["pattern"] = [j.model_dump() for j in old.pattern if j.name not in names] + merged["pattern"]
    merged["primary"] = new.primary or old.primary_name
    return JudgesConfig.model_validate(merged)


def verifier_id(cfg: JudgesConfig) -> str:
    return f"rules{'+llm' if cfg.verifier.llm_fallback else ''}@{cfg.verifier.version}"


def build_pattern_judge(cfg: PatternJudgeConfig, engine_builder=None):
    """Instantiate a pattern judge from its config (``rules`` or ``llm``)."""
    if cfg.kind == "rules":
        from howeval.judges.rules import RuleJudge

        return RuleJudge()
    from howeval.judges.llm import LLMPatternJudge

    build = engine_builder or _default_engine_builder
    engine = build(cfg.llm.model, cfg.llm.options)
    return LLMPatternJudge(engine, name=cfg.name, version=cfg.version, with_image=cfg.with_image,
                           max_tokens=cfg.llm.max_tokens, temperature=cfg.llm.temperature)


def _default_engine_builder(model: str, options: dict):
    from howeval.engines.registry import build_engine

    return build_engine("openai", model, options)


class Judger:
    """Runs the verifier and every configured pattern judge over response rows.

    Args:
        cfg: the sweep's ``judges`` block.
        only: judge names to run (default: all configured).
        engine_builder: ``(model, options) -> Engine`` for LLM judges (tests inject fakes).
    """

    def __init__(self, cfg: JudgesConfig, only: list[str] | None = None, engine_builder=None):
        self.cfg = cfg
        self.judge_cfgs = [j for j in cfg.pattern if only is None or j.name in only]
        self.judges = {j.name: build_pattern_judge(j, engine_builder) for j in self.judge_cfgs}
        self.llm_verifier = None
        if cfg.verifier.llm_fallback is not None:
            from howeval.judges.verify import LLMVerifier

            fb = cfg.verifier.llm_fallback
            self.llm_verifier = LLMVerifier((engine_builder or _default_engine_builder)(fb.model, fb.options))
        self.verifier_id = verifier_id(cfg)

    def verify_rows(self, rows: list[dict]) -> list[dict]:
        """Verifier verdicts for rows with a response: dicts with correct, extracted, method, reason."""
        from howeval.judges.verify import verify

        out: list[dict | None] = [None] * len(rows)
        pending = []
        for i, r in enumerate(rows):
            if r.get("cached_verify"):  # verdict already paid for (same response hash and verifier id)
                out[i] = json.loads(r["cached_verify"])
            elif r.get("error"):
                out[i] = {"correct": None, "extracted": None, "method": "no_response", "reason": r["error"]}
            elif r.get("truncated"):
                out[i] = {"correct": False, "extracted": None, "method": "truncated",
                          "reason": "thinking response cut off before its reasoning closed: no y_m"}
            else:
                pending.append(i)
        if self.llm_verifier is not None and pending:
            items = [{"question": rows[i]["question"], "response": rows[i]["response"], "answer": rows[i]["answer"],
                      "answer_type": rows[i]["answer_type"], "options": rows[i].get("options"),
                      "source": rows[i].get("benchmark")} for i in pending]
            results = self.llm_verifier.verify_batch(items)
        else:
            results = [verify(rows[i]["response"], rows[i]["answer"], rows[i]["answer_type"], rows[i].get("options"),
                              rows[i].get("benchmark")) for i in pending]
        for i, v in zip(pending, results):
            out[i] = {"correct": v.correct, "extracted": v.extracted, "method": v.method, "reason": v.reason}
        return out  # type: ignore[return-value]

    def pattern_rows(self, name: str, rows: list[dict], images: list[str | None] | None = None) -> list[dict]:
        """Pattern verdicts of judge ``name``: dicts with labels (or None), evidence, error."""
        judge = self.judges[name]
        out: list[dict | None] = [None] * len(rows)
        todo = []
        for i, r in enumerate(rows):
            if r.get("error"):
                out[i] = {"labels": None, "evidence": None, "error": f"no response: {r['error']}", "rationale": None}
            elif r.get("truncated"):
                out[i] = {"labels": None, "evidence": None, "error": None, "rationale": "truncated: no y_m to judge"}
            else:
                todo.append(i)
        if hasattr(judge, "judge_batch"):
            items = [{"question": rows[i]["question"], "response": rows[i]["response"],
                      "image_data_url": images[i] if images else None} for i in todo]
            verdicts = judge.judge_batch(items) if items else []
        else:
            verdicts = [judge.judge(rows[i]["response"], rows[i]["question"], rows[i].get("options")) for i in todo]
        for i, v in zip(todo, verdicts):
            if v.error:
                out[i] = {"labels": None, "evidence": None, "error": v.error, "rationale": v.raw}
            else:
                out[i] = {"labels": dict(v.labels), "evidence": v.evidence, "error": None, "rationale": None}
        return out  # type: ignore[return-value]

    def judge(self, rows: list[dict], images: list[str | None] | None = None) -> list[dict]:
        """Judgment rows (``records.JUDGMENT_SCHEMA``), one per (row, pattern judge).

        Optional row fields: ``judges_needed`` (judge ids to run on this row; default all) and
        ``cached_verify`` (JSON of an earlier verifier verdict for the same response, reused as is).
        """
        ver = self.verify_rows(rows)
        out = []
        for jc in self.judge_cfgs:
            jid = judge_id(jc)
            idx = [i for i, r in enumerate(rows) if r.get("judges_needed") is None or jid in r["judges_needed"]]
            if not idx:
                continue
            pats = self.pattern_rows(jc.name, [rows[i] for i in idx], [images[i] for i in idx] if images else None)
            for i, p in zip(idx, pats):
                out.append(judgment_row(rows[i], jid, self.verifier_id, ver[i], p))
        return out


def judgment_row(r: dict, jid: str, vid: str, v: dict, p: dict) -> dict[str, Any]:
    """Assemble one Judgment record (``records.JUDGMENT_SCHEMA``)."""
    labels = p["labels"]
    return {
        "sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"], "judge": jid, "verifier": vid,
        "response_hash": r.get("response_hash"), "correct": v["correct"], "extracted": v["extracted"],
        "verify_method": v["method"], "verify_reason": v["reason"],
        **{k: (bool(labels[k]) if labels is not None else None) for k in LABELS},
        "evidence": json.dumps(p["evidence"], ensure_ascii=False) if p["evidence"] else None,
        "rationale": p["rationale"], "judge_error": p["error"],
    }
