"""Judge response rows: verifier (correctness) + pattern judges (four labels) -> Judgment rows.

Pure core used by the Ray stage ``howeval/actors/judge.py`` and by tests. Rules (SPEC 1, DESIGN):
- only y_m (``response``) is judged; the reasoning channel never is;
- an engine error on the response -> ``judge_error`` "no response: <reason>", correct and labels null;
- a truncated thinking response (no y_m) -> correct False (method "truncated"), labels null;
- a judge failure -> ``judge_error`` with its reason and labels null, never a default label;
- the verifier's unresolved cases stay null unless an LLM fallback resolves them (method "llm").
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from howeval.config import JudgesConfig, PatternJudgeBase, with_changes
from howeval.judges.base import JudgeItem
from howeval.judges.registry import build_pattern_judge, default_engine_builder
from howeval.judges.verdict import PatternVerdict
from howeval.judges.verify import VerifyResult
from howeval.records import LABELS, check_columns


def judge_id(cfg: PatternJudgeBase) -> str:
    """Cache id of a pattern judge: ``<name>@<version>``."""
    return f"{cfg.name}@{cfg.version}"


def merge_judges(old: JudgesConfig, new: JudgesConfig) -> JudgesConfig:
    """The judges of a run after re-judging with ``new``: the run keeps its earlier pattern judges (their
    judgments stay reportable), a judge of the same name is replaced, the verifier is ``new``'s, and the
    primary is ``new.primary`` if given, else the old primary."""
    names = {j.name for j in new.pattern}
    return with_changes(new, "merged judges", pattern=[j for j in old.pattern if j.name not in names] + list(new.pattern),
                        primary=new.primary or old.primary_name)


def _pattern_readable(c) -> bool:
    """True when a pattern judge's answer parses into the four labels (first answers and repairs alike)."""
    from howeval.judges.rubric import JudgeParseError, parse_pattern_output

    try:
        parse_pattern_output(c.text or "")
    except JudgeParseError:
        return False
    return True


def _verdict_readable(c) -> bool:
    """True when the verifier's LLM-judge answer holds a boolean ``correct`` verdict."""
    from howeval.judges.verify import METHOD_LLM, LLMVerifier

    return LLMVerifier.parse_verdict(c).method == METHOD_LLM


def verifier_id(cfg: JudgesConfig) -> str:
    return f"rules{'+llm' if cfg.verifier.llm_fallback else ''}@{cfg.verifier.version}"


class Judger:
    """Runs the verifier and every configured pattern judge over response rows.

    Args:
        cfg: the sweep's ``judges`` block.
        only: judge names to run (default: all configured).
        engine_builder: ``(model, options) -> Engine`` for LLM judges (tests inject fakes).
        cache_dir: a local folder for the write-ahead judge cache (:mod:`howeval.judges.cache`): every
            LLM call (pattern judges, repairs, the verifier's fallback) is written there as it finishes,
            so a killed re-judge pays no call twice. None: no cache.
    """

    def __init__(self, cfg: JudgesConfig, only: list[str] | None = None, engine_builder=None,
                 cache_dir: str | None = None):
        self.cfg = cfg
        self.judge_cfgs = [j for j in cfg.pattern if only is None or j.name in only]
        base = engine_builder or default_engine_builder
        self.cache = None
        if cache_dir is not None:
            from howeval.judges.cache import JudgeCache

            self.cache = JudgeCache(cache_dir)
        self.verifier_id = verifier_id(cfg)
        self.judges = {j.name: build_pattern_judge(j, self._builder(base, judge_id(j), _pattern_readable))
                       for j in self.judge_cfgs}
        self.llm_verifier = None
        if cfg.verifier.llm_fallback is not None:
            from howeval.judges.verify import LLMVerifier

            fb = cfg.verifier.llm_fallback
            self.llm_verifier = LLMVerifier(self._builder(base, self.verifier_id, _verdict_readable)(fb.model, fb.options))

    def _builder(self, base, namespace: str, accept=None):
        """``base``, its engines wrapped in the write-ahead cache under ``namespace`` when there is one;
        only answers ``accept`` can read are cached (and replayed): an unparseable judge answer is asked
        again on the next run, like an engine error."""
        if self.cache is None:
            return base
        from howeval.judges.cache import CachingEngine

        return lambda model, options: CachingEngine(base(model, options), self.cache, namespace, accept)

    def verify_rows(self, rows: list[dict]) -> list[VerifyResult]:
        """Verifier verdicts, one per row, in order.

        A row's ``cached_verify`` (a :class:`VerifyResult` or its fields as a mapping, as an Arrow struct
        row comes back) is reused as is; an engine error gives method ``"no_response"`` (correct None); a
        truncated thinking response gives method ``"truncated"`` (correct False); the rest go to the rules,
        then to the LLM fallback when configured.
        """
        from howeval.judges.verify import verify
        from howeval.judges.verify.official import row_source

        out: list[VerifyResult | None] = [None] * len(rows)
        pending = []
        for i, r in enumerate(rows):
            if r.get("cached_verify"):  # verdict already paid for (same response hash and verifier id)
                out[i] = as_verify_result(r["cached_verify"])
            elif r.get("error"):
                out[i] = VerifyResult(None, None, "no_response", r["error"])
            elif r.get("truncated"):
                out[i] = VerifyResult(False, None, "truncated",
                                      "thinking response cut off before its reasoning closed: no y_m")
            else:
                pending.append(i)
        if self.llm_verifier is not None and pending:
            items = [{"question": rows[i]["question"], "response": rows[i]["response"], "answer": rows[i]["answer"],
                      "answer_type": rows[i]["answer_type"], "options": rows[i].get("options"),
                      "source": row_source(rows[i])} for i in pending]
            results = self.llm_verifier.verify_batch(items)
        else:
            results = [verify(rows[i]["response"], rows[i]["answer"], rows[i]["answer_type"], rows[i].get("options"),
                              row_source(rows[i])) for i in pending]
        for i, v in zip(pending, results):
            out[i] = v
        return out  # type: ignore[return-value]

    def pattern_rows(self, name: str, rows: list[dict], images: list[Any] | None = None) -> list[PatternVerdict | None]:
        """Verdicts of pattern judge ``name``, one per row, in order, through its ``judge_batch``.

        ``images[i]`` is row i's images for image-aware judges: a list of data URLs (every image of the
        sample, :func:`howeval.judges.images.judge_image_urls`), one data URL, or None.

        A row with an engine error gets a failed verdict (``"no response: <reason>"``); a truncated
        thinking response has no y_m to judge: None (no labels, no error).
        """
        judge = self.judges[name]
        out: list[PatternVerdict | None] = [None] * len(rows)
        todo = []
        for i, r in enumerate(rows):
            if r.get("error"):
                out[i] = PatternVerdict.failed(judge.name, judge.version, f"no response: {r['error']}")
            elif not r.get("truncated"):
                todo.append(i)
        items = [JudgeItem(rows[i]["question"] or "", rows[i]["response"], rows[i].get("options"),
                           *_image_fields(images[i] if images else None)) for i in todo]
        verdicts = judge.judge_batch(items) if items else []
        if len(verdicts) != len(items):
            raise RuntimeError(f"judge {name!r} returned {len(verdicts)} verdicts for {len(items)} items")
        for i, v in zip(todo, verdicts):
            out[i] = v
        return out

    def judge(self, rows: list[dict], images: list[Any] | None = None) -> list[dict]:
        """Judgment rows (``records.JUDGMENT_SCHEMA``), one per (row, pattern judge).

        Optional row fields: ``judges_needed`` (judge ids to run on this row; default all) and
        ``cached_verify`` (an earlier verifier verdict for the same response, reused as is).
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


def as_verify_result(v: VerifyResult | Mapping[str, Any]) -> VerifyResult:
    """A :class:`VerifyResult` from itself or its fields (``correct, extracted, method, reason``), e.g. a
    ``records.VERIFY_TYPE`` struct value read back from Arrow.

    Raises:
        MissingColumnsError (KeyError/ValueError): a field is missing.
    """
    if isinstance(v, VerifyResult):
        return v
    check_columns(v, VERIFY_FIELDS, "cached verifier verdict", "fields")
    return VerifyResult(v["correct"], v["extracted"], v["method"], v["reason"])


VERIFY_FIELDS = tuple(f.name for f in dataclasses.fields(VerifyResult))
"""The fields of a verifier verdict, in ``records.VERIFY_TYPE`` order."""


def _image_fields(img: Any) -> tuple[str | None, tuple[str, ...]]:
    """``(image_data_url, image_data_urls)`` of a JudgeItem from one row's images (None, a URL or a list)."""
    if img is None:
        return None, ()
    if isinstance(img, str):
        return img, ()
    return None, tuple(u for u in img if u)


def judgment_row(r: dict, jid: str, vid: str, v: VerifyResult, p: PatternVerdict | None) -> dict[str, Any]:
    """One Judgment record (``records.JUDGMENT_SCHEMA``) from a response row and its two verdicts.

    ``p`` None (nothing to judge: a truncated response) leaves the labels null with no error; a failed
    verdict leaves them null with ``judge_error`` set and its raw output as ``rationale``.
    """
    labels = p.labels if p is not None and p.ok else None
    evidence = dict(p.evidence) if labels else None
    rationale = "truncated: no y_m to judge" if p is None else (p.raw if not p.ok else None)
    return {
        "sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"], "judge": jid, "verifier": vid,
        "response_hash": r.get("response_hash"), "correct": v.correct, "extracted": v.extracted,
        "verify_method": v.method, "verify_reason": v.reason,
        **{k: (bool(labels[k]) if labels is not None else None) for k in LABELS},
        "evidence": json.dumps(evidence, ensure_ascii=False) if evidence else None,
        "rationale": rationale, "judge_error": p.error if p is not None else None,
    }
