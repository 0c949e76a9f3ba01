"""Task accuracy of trained policies (PatternEval/PatternRL paper, Table 6: BaseRL vs PatternRL on math, logic and
document benchmarks), scored by each benchmark's own answer criterion.

The paper's seeds do not name the benchmarks behind Table 6, so the user names them: each benchmark of a sweep
config may carry a ``task:`` block (``howeval.config.TaskConfig``: a category ``math | logic | document`` and a
criterion below). The sweep generates their responses like any benchmark's; the ``taskacc`` plug-in
(``howeval.plugins.taskacc``) scores each response with :func:`score_response` into ``<run>/task_scores/``
(:data:`TASK_SCORE_SCHEMA`) and the report shows "Table 6 (task accuracy)" (:func:`summarize_task_rows`,
``howeval.report.tables.render_task_accuracy``).

Criteria (:data:`CRITERIA`). The answer is taken from the response as the project's verifier takes it (the last
``\\boxed{}``, an answer line, ...: :func:`howeval.judges.verify.answer.find_candidate`); what is compared is the
field's own:

==================  =============================================================================================
``exact``           normalized text equality with any gold answer (the verifier's ``norm_text``: case, LaTeX,
                    articles and sentence punctuation ignored).
``multiple_choice`` the project's verifier, answer type ``multiple_choice`` (option picked by letter, text or value).
``math``            the project's verifier with the item's answer type (numbers, math-verify equivalence); rules
                    only: what they cannot decide is unresolved (score null, counted apart), never a guess.
``relaxed``         ChartQA's relaxed accuracy (Masry et al., ACL Findings 2022, section 5; the scoring function
                    ``relaxed_correctness`` of pix2struct / lmms-eval): a number within 5% relative change of a
                    numeric gold (a trailing ``%`` divides by 100), else case-insensitive exact match.
``anls``            DocVQA / InfographicVQA ANLS (Biten et al., "Scene Text Visual Question Answering", ICCV 2019;
                    the RRC evaluation script of DocVQA): per question ``max over golds of 1 - NL(pred, gold)``,
                    set to 0 when below the threshold 0.5, with ``NL`` the Levenshtein distance over the longer
                    length, both strings stripped, lower-cased and whitespace-collapsed.
==================  =============================================================================================

No library edit distance is installed in the project's environment (neither rapidfuzz nor python-Levenshtein), so
:func:`levenshtein` is the short textbook dynamic programme.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pyarrow as pa

from howeval.judges.verify import verify
from howeval.judges.verify.answer import find_candidate, norm_text, strip_trailing
from howeval.judges.verify.official import levenshtein  # one edit distance for ANLS and MathVista's option mapping
from howeval.parsing.text import strip_latex

TASK_CATEGORIES = ("math", "logic", "document")
"""Table 6's task categories, in its column order."""

CRITERIA = ("exact", "multiple_choice", "math", "relaxed", "anls")
"""Answer criteria a task benchmark may name (module docstring)."""

ANLS_THRESHOLD = 0.5
"""tau of ANLS (ST-VQA / DocVQA): a per-question score below it counts 0."""

RELAXED_MAX_CHANGE = 0.05
"""ChartQA's relaxed accuracy: largest relative change of a numeric answer still counted correct."""

TASK_SCORE_KEY = ("sample_id", "config", "mode", "response_hash", "criterion")
"""Key of a score row: one score per response text and criterion (a rerun scores nothing twice; a changed
criterion scores again)."""

TASK_SCORE_SCHEMA = pa.schema([
    ("sample_id", pa.string()), ("config", pa.string()), ("mode", pa.string()), ("response_hash", pa.string()),
    ("criterion", pa.string()), ("benchmark", pa.string()), ("category", pa.string()),
    ("score", pa.float64()), ("extracted", pa.string()), ("reason", pa.string()),
])
"""One scored response: ``score`` in [0, 1] (0/1 except ANLS), null when the criterion could not decide."""

TASK_INPUT_SCHEMA = pa.schema([
    *(TASK_SCORE_SCHEMA.field(n) for n in ("sample_id", "config", "mode", "response_hash", "criterion", "benchmark",
                                           "category")),
    ("response", pa.string()), ("golds", pa.list_(pa.string())), ("answer_type", pa.string()),
    ("options", pa.list_(pa.string())),
])
"""What the scoring stage reads: the score key, the response, every gold answer, the answer type and options."""


# -- the fields' own criteria --------------------------------------------------------------------------
def _anls_norm(s: str) -> str:
    return " ".join(s.strip().lower().split())


def anls(prediction: str, golds: Iterable[str], threshold: float = ANLS_THRESHOLD) -> float:
    """ANLS of one question (module docstring; DocVQA's RRC script): ``1 - min NL`` over the gold answers, 0 when
    that is below ``threshold``. A score exactly at the threshold is kept (the script tests ``< threshold``).

    Returns a float in {0} U [threshold, 1].

    Raises:
        ValueError: no gold answer.

    >>> anls("abxy", ["abcd"]), anls("axyz", ["abcd"]), anls(" The  Cat ", ["x", "the cat"])
    (0.5, 0.0, 1.0)
    """
    golds = list(golds)
    if not golds:
        raise ValueError("anls: no gold answer to compare with")
    p = _anls_norm(prediction)
    dists = []
    for g in golds:
        g = _anls_norm(g)
        n = max(len(g), len(p))
        dists.append(0.0 if n == 0 else levenshtein(g, p) / n)
    s = 1.0 - min(dists)
    return 0.0 if s < threshold else s


def _to_float(text: str) -> float | None:
    try:
        return float(text.rstrip("%")) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_correct(prediction: str, gold: str, max_relative_change: float = RELAXED_MAX_CHANGE) -> bool:
    """ChartQA's relaxed accuracy of one answer (module docstring): with a numeric, non-zero gold, a numeric
    prediction within ``max_relative_change`` of it (``|p - g| / |g| <= 0.05``); otherwise case-insensitive
    equality of the two strings.

    >>> relaxed_correct("105", "100"), relaxed_correct("105.1", "100"), relaxed_correct("12%", "0.12")
    (True, False, True)
    >>> relaxed_correct("Yes", "yes"), relaxed_correct("0.01", "0")
    (True, False)
    """
    p, g = _to_float(prediction), _to_float(gold)
    if p is not None and g:
        return abs(p - g) / abs(g) <= max_relative_change
    return prediction.lower() == gold.lower()


def _prediction(response: str) -> tuple[str | None, str]:
    """The answer string the criteria compare: the verifier's candidate (LaTeX and trailing punctuation removed),
    or, without an answer marker, the whole response as given; None for an empty response, a refusal or a program
    artefact (``(None, why)``)."""
    cand, where = find_candidate(response)
    if cand is None:
        if where in ("empty", "refusal", "artefact"):
            return None, where
        return strip_trailing(response.strip()), "whole response (no final-answer marker)"
    return strip_trailing(strip_latex(cand)), where


def score_response(criterion: str, response: str, golds: list[str], answer_type: str | None = None,
                   options: list[str] | None = None) -> tuple[float | None, str | None, str]:
    """Score one response by ``criterion`` (:data:`CRITERIA`) against every gold answer (the best one counts).

    Args:
        criterion: one of :data:`CRITERIA`.
        response: the user-facing response y_m.
        golds: the accepted answers (>= 1; DocVQA lists several per question).
        answer_type: the item's answer type (``math``: the verifier's rules per type; default ``free_form``).
        options: the item's options (``multiple_choice``, and ``math`` items with options).

    Returns:
        ``(score, extracted, reason)``: score in [0, 1] (ANLS) or 0/1, None when unresolved (``math`` /
        ``multiple_choice``: the verifier's rules could not decide; any criterion: the response is a program
        artefact); an empty response or a refusal scores 0.

    Raises:
        ValueError: unknown criterion, or no gold answer.

    >>> score_response("anls", "The total is \\\\boxed{0.28}", ["0.28", "$0.28"])
    (1.0, '0.28', 'anls over 2 gold(s), answer from boxed')
    """
    if criterion not in CRITERIA:
        raise ValueError(f"unknown task criterion {criterion!r}; known: {list(CRITERIA)}")
    golds = [str(g) for g in golds if g is not None and str(g).strip()]
    if not golds:
        raise ValueError("score_response: no gold answer")
    if criterion in ("math", "multiple_choice"):
        atype = "multiple_choice" if criterion == "multiple_choice" else (answer_type or "free_form")
        rank = {True: 2, None: 1, False: 0}  # any gold matched > undecided > wrong against every gold
        best = None
        for g in golds:
            v = verify(response, g, atype, options)
            if best is None or rank[v.correct] > rank[best.correct]:
                best = v
        score = None if best.correct is None else float(best.correct)
        return score, best.extracted, f"{criterion}: verifier ({atype}): {best.reason}"
    pred, where = _prediction(response)
    if pred is None:
        return (None if where == "artefact" else 0.0), None, f"{criterion}: no answer ({where})"
    if criterion == "anls":
        return anls(pred, golds), pred, f"anls over {len(golds)} gold(s), answer from {where}"
    if criterion == "relaxed":
        ok = any(relaxed_correct(pred, g) for g in golds)
        return float(ok), pred, f"relaxed (5%) vs {golds[:3]}, answer from {where}"
    ok = any(norm_text(pred) == norm_text(g) for g in golds)
    return float(ok), pred, f"exact (normalized) vs {golds[:3]}, answer from {where}"


def score_rows(rows: list[dict]) -> list[dict]:
    """Score rows of :data:`TASK_INPUT_SCHEMA` (the scoring stage's batch) into :data:`TASK_SCORE_SCHEMA` rows.

    An item the criterion cannot score (no gold; a multiple-choice gold that is not among its options) gets a null
    score whose reason names the fault, so one bad item never fails the batch of the others."""
    out = []
    for r in rows:
        try:
            score, extracted, reason = score_response(r["criterion"], r.get("response") or "", r["golds"] or [],
                                                      r.get("answer_type"), r.get("options"))
        except ValueError as e:
            score, extracted, reason = None, None, f"{r['criterion']}: item not scorable: {e}"
        out.append({**{k: r[k] for k in TASK_SCORE_KEY}, "benchmark": r["benchmark"], "category": r["category"],
                    "score": score, "extracted": extracted, "reason": reason})
    return out


# -- Table 6 ------------------------------------------------------------------------------------------
def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize_task_rows(rows: list[dict], benchmarks: Mapping[str, str], pairs: Mapping[str, str] | None = None) -> dict:
    """Table 6 from score rows: per policy (config; a T/NT pair under its ``pair_as`` name) and mode, the accuracy
    of each benchmark and the average of each category.

    Args:
        rows: :data:`TASK_SCORE_SCHEMA` rows, already restricted to the current responses and criteria.
        benchmarks: every task benchmark of the config, ``{name: category}`` (a benchmark without rows is listed
            with ``n`` 0 and accuracy None).
        pairs: config -> ``pair_as`` name (:meth:`howeval.config.SweepConfig.mode_pairs`).

    Returns:
        ``{"benchmarks": {name: category}, "categories": [category with >= 1 benchmark, in TASK_CATEGORIES
        order], "absent": [category with none], "rows": {policy: {mode: {"benchmarks": {name: {"acc", "n",
        "n_unresolved"}}, "categories": {category: {"acc", "n", "n_benchmarks"}}}}}}``. A benchmark's ``acc`` is
        the mean score over its scored responses (ANLS for ``anls``; in [0, 1]; None when none); a category's
        ``acc`` is the unweighted mean of its benchmarks' accuracies (the macro average, each benchmark counting
        once whatever its size; None when none is measured), its ``n`` the scored responses in all of them.
    """
    pairs = pairs or {}
    by: dict[tuple, dict[str, list]] = {}
    unresolved: dict[tuple, dict[str, int]] = {}
    for r in rows:
        if r["benchmark"] not in benchmarks:
            continue
        k = (pairs.get(r["config"], r["config"]), r["mode"])
        by.setdefault(k, {})
        unresolved.setdefault(k, {})
        if r.get("score") is None or (isinstance(r["score"], float) and math.isnan(r["score"])):
            unresolved[k][r["benchmark"]] = unresolved[k].get(r["benchmark"], 0) + 1
        else:
            by[k].setdefault(r["benchmark"], []).append(float(r["score"]))
    cats = [c for c in TASK_CATEGORIES if c in benchmarks.values()]
    out_rows: dict[str, dict] = {}
    for (policy, mode) in sorted(by, key=lambda k: (k[0], {"NT": 0, "T": 1}.get(k[1], 2), k[1])):
        bench = {b: {"acc": _mean(by[(policy, mode)].get(b, [])), "n": len(by[(policy, mode)].get(b, [])),
                     "n_unresolved": unresolved[(policy, mode)].get(b, 0)} for b in benchmarks}
        cat = {}
        for c in cats:
            names = [b for b, bc in benchmarks.items() if bc == c]
            accs = [bench[b]["acc"] for b in names if bench[b]["acc"] is not None]
            cat[c] = {"acc": _mean(accs), "n": sum(bench[b]["n"] for b in names), "n_benchmarks": len(accs)}
        out_rows.setdefault(policy, {})[mode] = {"benchmarks": bench, "categories": cat}
    return {"benchmarks": dict(benchmarks), "categories": cats, "absent": [c for c in TASK_CATEGORIES if c not in cats],
            "rows": out_rows}
