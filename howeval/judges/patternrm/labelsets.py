"""Every human label the project can train PatternRM on, read in place from ``../shared/data`` (never copied).

Each source is mapped onto the pattern labels (``cot, rep, con, pr``) as ``gold`` (a human judgement of that
very pattern) or ``weak`` (a related human judgement: a proxy, trained with a smaller weight and reported
apart, never counted as gold). The mapping, per source (``../shared/data/README.md`` says how strong each is):

- ``human47``: the project's 47 hand labels (:data:`HUMAN_LABELS_FILE`) of real
  VLM responses (``responses/``: 38 MATH-Vision, MIT; 9 TabMWP GPT-3, CC BY-NC-SA): gold ``rep``, ``con``,
  ``pr`` and ``cot`` (no ``cot`` positive).
- ``roscoe``: ROSCOE expert judgements of GPT-3 chains of thought (``labels/roscoe_judgements.jsonl``): gold
  ``con`` (response-level "Contradiction") and ``rep`` (a step marked "Repetition"); weak ``con``
  (``con_step_logic``: a step marked illogical) and weak ``pr`` (``pr_redundancy``: a step not needed).
- ``prm800k``: PRM800K step ratings of GPT-4 solutions (``labels/prm800k_neutral_steps.jsonl``): weak ``pr``
  (``pr_neutral_step``: a step rated 0, correct but no progress), weak ``con``/``rep`` = 0 where the file says so.

Records: ``{"uid", "source", "subset", "licence", "permissive", "question", "response", "steps", "gold":
{label: 0|1|None}, "weak": {label: 0|1|None}, "weak_name": {label: str}, "evidence": {label: str|None},
"correct": 1|0|None}``. ``correct`` is the verifier's bit (:func:`answer_correct`: the final answer against the
source's reference; None where it cannot be read): used only by the verifier-bit variant (issue 42), never by
the served head.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from howeval.records import LABELS

__all__ = ["answer_correct", "HUMAN_LABELS_FILE", "SOURCES", "load_human47", "load_roscoe", "load_prm800k", "load_label_sources", "LabelSourceMissing"]

SOURCES = ("human47", "roscoe", "prm800k")

HUMAN_LABELS_FILE = Path(__file__).resolve().parent / "data" / "human_labels.jsonl"
"""The 47 hand labels of real responses (package data); the texts they point at stay in ``../shared/data``."""

_LICENCE = {
    "mathv_model_responses.jsonl": ("MIT (mathllm/MATH-V)", True),
    "tabmwp_gpt3_cot_responses.jsonl": ("CC BY-NC-SA 4.0 (lupantech/PromptPG)", False),
    "roscoe-gsm8k": ("MIT (ROSCOE annotations); GSM8K MIT", True),
    "roscoe-cosmos": ("MIT (ROSCOE annotations); CosmosQA CC BY 4.0", True),
    "roscoe-drop": ("MIT (ROSCOE annotations); DROP CC BY-SA 4.0 (share-alike)", False),
    "roscoe-esnli": ("MIT (ROSCOE annotations); e-SNLI CC BY-SA 4.0 (share-alike)", False),
    "prm800k": ("MIT (PRM800K, MATH; GAIR-NLP/ReasonEval)", True),
}
"""Licence of each subset (``../shared/data/README.md``) and whether it is permissive (MIT, CC BY: no
share-alike, no non-commercial term): the shipped head trains on the permissive subsets only."""


class LabelSourceMissing(FileNotFoundError):
    """A human-label file of ``../shared/data`` is not on this machine."""


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise LabelSourceMissing(f"{path} not found (../shared/data; HOWEVAL_SHARED_DATA overrides)")
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


_FINAL_NUM = re.compile(r"(?:A:|# Answer|answer is|\\boxed\{)\s*\$?\s*(-?[\d,]*\.?\d+)", re.IGNORECASE)
_YES_NO = re.compile(r"answer is:?\s*(yes|no)\b", re.IGNORECASE)


def _norm_num(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def answer_correct(subset: str, response: str, reference: str | None) -> int | None:
    """The verifier's correctness bit for one label record: 1 when the response's final answer matches
    ``reference``, 0 when it names another, None when either cannot be read.

    - ROSCOE GSM8K: the last ``A: N`` / "answer is N" number against the reference's (numeric, 1e-6);
    - ROSCOE CosmosQA, DROP, e-SNLI: the last "answer is yes|no" against the reference's yes/no;
    - PRM800K: the ``# Answer`` line against ``ground_truth_answer`` (numeric where both parse, else the
      text with spaces and ``$`` removed); no ``# Answer`` line: None (an unfinished solution).

    >>> answer_correct("roscoe-gsm8k", "2 * 9 = 18. A: 18", "9 * 2 = 18. A: 18"), answer_correct("roscoe-esnli", "The answer is No.", "yes")
    (1, 0)
    """
    if reference is None:
        return None
    ref = str(reference)
    if subset == "prm800k":
        if "# Answer" not in response:
            return None
        got = response.rsplit("# Answer", 1)[1].strip()
        a, b = _norm_num(got), _norm_num(ref)
        if a is not None and b is not None:
            return int(abs(a - b) <= 1e-6)
        clean = lambda x: re.sub(r"[\s$]", "", x).lower()  # noqa: E731
        return int(clean(got) == clean(ref))
    if subset == "roscoe-gsm8k":
        got = [_norm_num(m) for m in _FINAL_NUM.findall(response)]
        want = [_norm_num(m) for m in _FINAL_NUM.findall(ref)]
        if not got or not want or got[-1] is None or want[-1] is None:
            return None
        return int(abs(got[-1] - want[-1]) <= 1e-6)
    got = _YES_NO.findall(response)
    want = ref.strip().lower()
    if not got or want not in ("yes", "no"):
        return None
    return int(got[-1].lower() == want)


def _rec(uid: str, source: str, subset: str, question: str, response: str, steps: Sequence[str] | None,
         gold: Mapping[str, Any], weak: Mapping[str, Any] | None = None, weak_name: Mapping[str, str] | None = None,
         evidence: Mapping[str, str | None] | None = None, correct: int | None = None) -> dict[str, Any]:
    lic, ok = _LICENCE.get(subset, ("see ../shared/data/README.md", False))
    norm = lambda v: None if v is None else int(bool(v))  # noqa: E731
    return {"uid": uid, "source": source, "subset": subset, "licence": lic, "permissive": ok, "question": question or "",
            "response": response, "steps": list(steps) if steps else None,
            "gold": {k: norm(gold.get(k)) for k in LABELS}, "weak": {k: norm((weak or {}).get(k)) for k in LABELS},
            "weak_name": dict(weak_name or {}), "evidence": dict(evidence or {}),
            "correct": None if correct is None else int(bool(correct))}


def load_human47(data_root: str | Path, labels_file: str | Path | None = None) -> list[dict[str, Any]]:
    """The 47 hand-labelled real responses: labels from ``labels_file`` (default: the package's
    ``data/human_labels.jsonl``), texts from ``data_root/responses`` (matched by source, id, model).

    Raises:
        LabelSourceMissing: the responses folder is missing.
        KeyError: a labelled response is not in the responses files (the key is named).
    """

    root = Path(data_root) / "responses"
    if not root.is_dir():
        raise LabelSourceMissing(f"{root} not found (../shared/data; HOWEVAL_SHARED_DATA overrides)")
    texts: dict[str, dict] = {}
    for f in sorted(root.glob("*.jsonl")):
        for r in _read(f):
            texts[f"{f.name}|{r['id']}|{r.get('model') or ''}"] = r
    questions: dict[str, str] = {}  # the item's question, by responses file and id (used by the question features)
    for resp, vqa in (("mathv_model_responses.jsonl", "mathv_testmini_subset.jsonl"),
                      ("tabmwp_gpt3_cot_responses.jsonl", "tabmwp_subset.jsonl")):
        f = Path(data_root) / "vqa" / vqa
        if f.is_file():
            questions.update({f"{resp}|{q['id']}": str(q.get("question") or "") for q in _read(f)})
    out = []
    for r in _read(Path(labels_file or HUMAN_LABELS_FILE)):
        key = f"{r['source']}|{r['id']}|{r.get('model') or ''}"
        if key not in texts:
            raise KeyError(f"hand-labelled response {key!r} not found under {root}")
        t = texts[key]
        note = r.get("note")
        out.append(_rec("human:" + key, "human47", r["source"], questions.get(f"{r['source']}|{r['id']}", ""), t["response"], None,
                        r["labels"], evidence={k: note if r["labels"][k] else None for k in LABELS},
                        correct=t.get("correct")))
    return sorted(out, key=lambda x: x["uid"])


def _roscoe_evidence(raw: Mapping[str, Any], name: str) -> str | None:
    steps = raw.get("response_steps") or []
    for s, lab in zip(steps, raw.get("steps") or []):
        if str(lab.get(name, "no")).lower() == "yes":
            return str(s)
    return None


def load_roscoe(data_root: str | Path) -> list[dict[str, Any]]:
    """ROSCOE judgements (``labels/roscoe_judgements.jsonl``): gold ``con``/``rep``; weak ``con`` =
    ``con_step_logic``, weak ``pr`` = ``pr_redundancy``. Raises :class:`LabelSourceMissing` when absent."""
    out = []
    for r in _read(Path(data_root) / "labels" / "roscoe_judgements.jsonl"):
        raw, w = r.get("raw_label") or {}, r.get("labels_weak") or {}
        ev = {"rep": _roscoe_evidence(raw, "Repetition"), "con": _roscoe_evidence(raw, "Coherency and Logic"),
              "pr": _roscoe_evidence(raw, "Redundancy")}
        out.append(_rec(f"roscoe:{r['id']}", "roscoe", r["source"], r.get("question") or "", r["response"],
                        raw.get("response_steps"), r["labels"],
                        weak={"con": w.get("con_step_logic"), "pr": w.get("pr_redundancy")},
                        weak_name={"con": "con_step_logic", "pr": "pr_redundancy"}, evidence=ev,
                        correct=answer_correct(r["source"], r["response"], raw.get("reference"))))
    return out


def load_prm800k(data_root: str | Path) -> list[dict[str, Any]]:
    """PRM800K neutral-step ratings (``labels/prm800k_neutral_steps.jsonl``): weak ``pr`` =
    ``pr_neutral_step``; weak ``con``/``rep`` where given. Raises :class:`LabelSourceMissing` when absent."""
    out = []
    for r in _read(Path(data_root) / "labels" / "prm800k_neutral_steps.jsonl"):
        raw, w = r.get("raw_label") or {}, r.get("labels_weak") or {}
        steps = raw.get("response_steps")
        ev = None
        if w.get("pr_neutral_step"):
            ev = next((s for s, v in zip(steps or [], raw.get("step_ratings") or []) if v == 0), None)
        out.append(_rec(f"prm800k:{r['id']}", "prm800k", "prm800k", r.get("question") or "", r["response"], steps,
                        r.get("labels") or {}, weak={"pr": w.get("pr_neutral_step"), "con": w.get("con"), "rep": w.get("rep")},
                        weak_name={"pr": "pr_neutral_step", "con": "con (none marked)", "rep": "rep (none marked)"},
                        evidence={"pr": ev}, correct=answer_correct("prm800k", r["response"], raw.get("ground_truth_answer"))))
    return out


def load_label_sources(data_root: str | Path, labels_file: str | Path | None = None,
                       sources: Sequence[str] = SOURCES) -> list[dict[str, Any]]:
    """The records of ``sources`` (default all of :data:`SOURCES`), in that order.

    Raises:
        ValueError: an unknown source name.
        LabelSourceMissing: a source's file is not under ``data_root``.
    """
    bad = [s for s in sources if s not in SOURCES]
    if bad:
        raise ValueError(f"sources {bad}: expected names from {SOURCES}")
    load = {"human47": lambda: load_human47(data_root, labels_file), "roscoe": lambda: load_roscoe(data_root),
            "prm800k": lambda: load_prm800k(data_root)}
    return [r for s in sources for r in load[s]()]
