"""PatternRM as a pattern judge (``kind: patternrm``): sweeps and calibration label responses with it.

Wraps :class:`howeval.judges.patternrm.model.PatternRM` (default: the embedded trained PatternRM) in the
judge protocol (:class:`howeval.judges.base.PatternJudge`): one ``label_batch`` call per
``judge_batch`` (one encoder pass), one :class:`~howeval.judges.verdict.PatternVerdict` per item; a row
PatternRM could not label (unparseable LM output) is a failed verdict with the reason, never a default
label. PatternRM is text-only (SPEC section 2): images and options are not read.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from howeval.config.rewards import PatternRMConfig
from howeval.judges.base import JudgeItem, as_judge_items
from howeval.judges.verdict import PatternVerdict, make_verdict

__all__ = ["PatternRMJudge"]


class PatternRMJudge:
    """``judge_batch(items) -> list[PatternVerdict]`` over a PatternRM.

    Args:
        name: the judge's configured name (verdicts carry it).
        patternrm: which PatternRM (:class:`howeval.config.rewards.PatternRMConfig`); None = the embedded
            trained one.
        version: config version; the judge version is ``"<version>:<PatternRM version>"``.
    """

    def __init__(self, name: str = "patternrm", patternrm: PatternRMConfig | None = None, version: str = "1"):
        from howeval.judges.patternrm.model import PatternRM

        self.name = name
        self.rm = PatternRM.from_config(patternrm)
        self.version = f"{version}:{self.rm.version}"

    def judge_batch(self, items: Sequence[JudgeItem | Mapping[str, Any]]) -> list[PatternVerdict]:
        its = as_judge_items(items)
        if not its:
            return []
        res = self.rm.label_batch([{"question": it.question, "response": it.response} for it in its])
        out = []
        for r in res:
            if r.get("labels") is None or r.get("error"):
                out.append(PatternVerdict.failed(self.name, self.version, f"judge_error: {r.get('error') or 'no labels'}", r.get("raw")))
            else:
                out.append(make_verdict(dict(r["labels"]), None, self.name, self.version,
                                        raw=None if r.get("probs") is None else str(r["probs"])))
        return out
