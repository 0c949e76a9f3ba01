"""PatternRM head v5 features: what a CPU can compute that can see a contradiction (issue 29).

Eight blocks, each a fixed-width float vector per response (``featurize_v5`` stacks the ones asked for):

- ``lex`` (:data:`howeval.judges.patternrm.lexical.LEX_FEATURES`, 12): the v4 content features (repetition,
  answer statements, cue counts, number shares, length).
- ``consist`` (:data:`CONSIST_FEATURES`, 10): claim and number consistency between steps, computed from the
  text alone: ``a op b = c`` computations that are wrong, the final answer against the value the steps last
  derive, a final value that appears nowhere before it, one quantity given two values (``N unit`` pairs),
  near-duplicate steps with opposite polarity (one negated), yes/no answers that disagree, contrast cues,
  numbers that come from neither the question nor an earlier step.
- ``pairs`` (:data:`PAIR_FEATURES`, 10): the bundled all-MiniLM-L6-v2 over the steps and step pairs: the
  highest, mean and lowest cosine between two steps, between consecutive steps, the share of near-duplicate
  pairs, the last step against the others, steps against the question, and the highest cosine of a
  near-duplicate pair with opposite polarity (a step that says the opposite of another).
- ``doc`` (384): the MiniLM embedding of the whole plain text (the v4 ``content+minilm`` input).
- ``steps`` (:data:`STEP_FEATURES`, 14; issue 42, head v6): per-response statistics over the segmented steps,
  each aimed at one pattern (:data:`STEP_FEATURE_DOCS` names it): step-to-step redundancy and each step's
  similarity to the question (MiniLM cosine), near-duplicate steps that differ by a negation, steps that open
  with a planning phrase, steps with no math content, steps that add no new number, steps with a negation,
  step count and length.
- ``counts`` (:data:`COUNT_FEATURES`, 7): the step block's shares as log counts (planning, no-math,
  no-new-number, negated and redundant steps) with step count and length: "does ANY step ...?" labels grow
  with the count.
- ``progress`` (:data:`PROGRESS_FEATURES`, 5; head v7): log counts of steps that narrate instead of compute, each
  aimed at PRM800K's neutral step (a correct step that makes no progress): remarks about the problem or the
  solver's state ("This problem involves", "I notice", "Wow", "That looks manageable"), first-person
  narration, recalled general facts ("the quadratic formula says", "I recall"), tentative method talk ("I can
  use", "one way to", "maybe") and checks ("let me verify").
- ``verifier`` (:data:`VERIFIER_FEATURES`, 1): the verifier's correctness bit when the caller gives it (an
  option measured apart, not the served default).

Steps: the response's own steps when a source gives them (ROSCOE, PRM800K), else its non-empty lines, else
its sentences (``layout.plain_text`` first: no step numbers, bullets or markdown), at most
:data:`MAX_STEPS`. Encoder passes: one per batch (questions, documents and steps together), cached by text
when the encoder is a :class:`howeval.judges.patternrm.head.CachedEncoder`.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from howeval.judges.patternrm.layout import plain_text
from howeval.judges.patternrm.lexical import LEX_FEATURES, lexical_features

__all__ = ["PROGRESS_FEATURES", "PROGRESS_FEATURE_DOCS", "progress_features", "COUNT_FEATURES", "COUNT_FEATURE_DOCS", "count_features", "VERIFIER_FEATURES", "CONSIST_FEATURES", "PAIR_FEATURES", "STEP_FEATURES", "STEP_FEATURE_DOCS", "step_features", "BLOCKS", "MAX_STEPS", "split_steps", "cot_rule", "consistency_features",
           "pair_features", "featurize_v5", "block_columns", "feature_names"]

MAX_STEPS = 24
CONSIST_FEATURES = ("log_wrong_arith", "share_wrong_arith", "final_vs_derived", "final_unsupported", "quantity_conflicts",
                    "polarity_flip_pairs", "yes_no_conflict", "log_contrast_cues", "share_new_numbers", "log_numbers")
PAIR_FEATURES = ("log_steps", "pair_cos_max", "pair_cos_mean", "pair_cos_min", "next_cos_mean", "next_cos_min",
                 "share_pairs_over_085", "last_vs_rest_cos", "question_cos_mean", "flip_pair_cos_max")
STEP_FEATURES = ("step_redundancy_mean", "step_redundancy_max", "share_redundant_steps", "question_cos_mean",
                 "question_cos_max", "first_step_question_cos", "negation_twin_pairs", "share_planning_steps",
                 "share_no_math_steps", "share_no_new_number_steps", "share_negation_steps", "log_step_count",
                 "log_chars_total", "log_mean_step_chars")
STEP_FEATURE_DOCS = {
    "step_redundancy_mean": "rep/pr: mean over steps 2..s of the step's highest MiniLM cosine to an earlier step (a step "
                            "that says again what was said)",
    "step_redundancy_max": "rep: the highest cosine between a step and an earlier one (a repeated step)",
    "share_redundant_steps": "rep/pr: share of steps 2..s whose highest cosine to an earlier step is >= 0.85",
    "question_cos_mean": "pr/con: mean cosine of the steps to the question (steps that stay on the problem vs. "
                         "restate it or wander)",
    "question_cos_max": "pr: the highest step-question cosine (a step restating the question)",
    "first_step_question_cos": "pr: cosine of the first step to the question (opening by restating the goal)",
    "negation_twin_pairs": "con: log(1 + pairs of steps with cosine >= 0.75 where exactly one is negated: a step "
                           "that says the opposite of another)",
    "share_planning_steps": "pr: share of steps opening with a planning phrase ('let me', 'I need to', 'this means', "
                            "'we want', 'to find') that announce work instead of doing it",
    "share_no_math_steps": "pr: share of steps with no digit, operator, equation or LaTeX (no computation)",
    "share_no_new_number_steps": "pr: share of steps that add no number not already in the question or an earlier "
                                 "step (no progress on the quantities)",
    "share_negation_steps": "con: share of steps holding a negation (not, no, never, cannot, ...)",
    "log_step_count": "length: log(1 + number of steps)",
    "log_chars_total": "length: log(1 + characters over the steps) / 10",
    "log_mean_step_chars": "length: log(1 + mean characters per step) / 10",
}
"""Each :data:`STEP_FEATURES` column and the pattern it targets (``rep``, ``con``, ``pr`` or length)."""
COUNT_FEATURES = ("n_planning_steps", "n_no_math_steps", "n_no_new_number_steps", "n_negation_steps", "n_redundant_steps",
                  "log_step_count", "log_chars_total")
COUNT_FEATURE_DOCS = {
    "n_planning_steps": "pr: log(1 + steps opening with a planning phrase)",
    "n_no_math_steps": "pr: log(1 + steps with no math content)",
    "n_no_new_number_steps": "pr: log(1 + steps adding no new number): a label that asks whether ANY step makes no "
                             "progress (PRM800K's neutral step) grows with their count, not their share",
    "n_negation_steps": "con: log(1 + steps holding a negation)",
    "n_redundant_steps": "rep/pr: log(1 + steps whose highest cosine to an earlier step is >= 0.85)",
    "log_step_count": "length: log(1 + number of steps) (as in the steps block)",
    "log_chars_total": "length: log(1 + characters over the steps) / 10 (as in the steps block)",
}
"""The ``counts`` block: the step block's shares as counts (log1p), with the two length columns."""
PROGRESS_FEATURES = ("n_remark_steps", "n_first_person_steps", "n_recalled_fact_steps", "n_tentative_steps", "n_check_steps")
PROGRESS_FEATURE_DOCS = {
    "n_remark_steps": "pr: log(1 + steps opening with a remark on the problem or the solver's state: 'This problem "
                      "involves', 'I notice', 'I wonder', 'Wow', 'That looks manageable', 'One way to')",
    "n_first_person_steps": "pr: log(1 + steps narrated in the first person: 'I', 'me', 'my' (the solver talking about "
                            "its work rather than doing it)",
    "n_recalled_fact_steps": "pr: log(1 + steps stating a general fact: 'recall', 'formula', 'states that', 'rule', "
                             "'theorem', 'property', 'by definition')",
    "n_tentative_steps": "pr: log(1 + steps with tentative method talk: 'I can', 'could', 'might', 'maybe', 'try', "
                         "'one way', 'approach', 'technique')",
    "n_check_steps": "pr: log(1 + steps that check instead of advance: 'check', 'verify', 'make sure', 'confirm')",
}
"""The ``progress`` block (issue 42, head v7): counts of narrating steps, the kinds PRM800K's raters marked
neutral (correct, no progress); counts rather than shares, as in ``counts`` (a label that asks whether ANY step
makes no progress grows with their number)."""
VERIFIER_FEATURES = ("verifier_correct",)
"""The verifier's correctness bit (item ``"correct"``: 1.0, 0.0, or 0.5 when unknown): an option measured by the
calibration (issue 42: ROSCOE's annotators saw the reference, so its ``con`` tracks wrong answers), never in
the served default (it would penalise a wrong answer twice in the PatternRL reward)."""
BLOCKS = ("lex", "consist", "pairs", "doc", "steps", "verifier", "counts", "progress")
DOC_DIM = 384

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(])")
_NUM = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")
_ARITH = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/×x÷])\s*(-?\d+(?:\.\d+)?)\s*=\s*\$?(-?\d+(?:,\d{3})*(?:\.\d+)?)")
_FINAL = re.compile(r"(?:answer is|answer:|final answer|\\boxed\{)\s*\$?\\?\(?\s*(-?\d+(?:,\d{3})*(?:\.\d+)?|yes|no|[A-E]\b)",
                    re.IGNORECASE)
_EQ_RESULT = re.compile(r"=\s*\$?(-?\d+(?:,\d{3})*(?:\.\d+)?)")
_QTY = re.compile(r"(-?\d+(?:\.\d+)?)\s+([a-z]{3,})(?:\s+(?:per|each|of)\s+([a-z]{3,}))?", re.IGNORECASE)
_NEG = re.compile(r"\b(?:not|no|never|cannot|can't|isn't|aren't|doesn't|don't|didn't|won't|wasn't|weren't|neither|nor|"
                  r"impossible|false|incorrect)\b", re.IGNORECASE)
_CONTRAST = re.compile(r"\b(?:but|however|although|though|whereas|yet|instead|contradict\w*|on the other hand|"
                       r"inconsistent|mismatch)\b", re.IGNORECASE)
_YES_NO = re.compile(r"\b(?:answer is|answer:)\s*(yes|no)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")
_PLAN = re.compile(r"^\W*(?:let me|let's|let us|i need to|i will|i'll|i want to|i should|i can|i have to|we need to|we will|"
                   r"we want to|we have to|we can|we should|we must|this means|that means|to (?:find|solve|determine|"
                   r"calculate|compute|answer|get)|first,? (?:we|i|let)|next,? (?:we|i|let)|now,? (?:we|i|let)|"
                   r"the (?:problem|question) (?:asks|is asking|wants|gives)|our goal|the goal)\b", re.IGNORECASE)
_MATH = re.compile(r"\d|[=+*/^<>×÷]|\\|\b[a-z]\s*[=+\-*/^]|\b(?:sqrt|sin|cos|tan|log|frac|pi)\b", re.IGNORECASE)
_REMARK = re.compile(r"^\W*(?:this (?:problem|question|is a|looks|seems)|wow|hmm|ok(?:ay)?|well|that (?:looks|seems|is (?:a|much|"
                     r"more|easier|hard))|i (?:notice|wonder|see|think|recall|know|remember|realize)|it (?:looks|seems)|"
                     r"interesting|one (?:way|approach|idea)|a (?:common|good|useful|possible|better) (?:technique|way|"
                     r"approach|idea|strategy))\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i'll|i've|me|my)\b", re.IGNORECASE)
_FACT = re.compile(r"\b(?:recall|remember|formula|states? that|says? that|rule|theorem|property|identity|by definition|"
                   r"is defined|definition of|which means that|in general)\b", re.IGNORECASE)
_TENTATIVE = re.compile(r"\b(?:i can|we can|could|might|maybe|perhaps|try|trying|wonder|seems?|looks like|one way|approach|"
                        r"strategy|technique|idea)\b", re.IGNORECASE)
_CHECK = re.compile(r"\b(?:check|verify|double-check|make sure|confirm|sanity)\b", re.IGNORECASE)
_STOP = frozenset("the a an of to is are was were be in on at and or for with by it this that as so we i".split())


def split_steps(response: str, steps: Sequence[str] | None = None) -> list[str]:
    """The steps of a response (at most :data:`MAX_STEPS`): ``steps`` when given (non-empty ones), else the
    plain text's non-empty lines when there are several (``layout.plain_text`` puts sentences on lines), else
    its sentences.

    >>> split_steps("Step 1: 2 + 2 = 4.\\nStep 2: so the answer is 4.")
    ['2 + 2 = 4.', 'so the answer is 4.']
    """
    if steps:
        out = [plain_text(str(s)).strip() for s in steps]
    else:
        plain = plain_text(response)
        lines = [x.strip() for x in plain.splitlines() if x.strip()]
        out = lines if len(lines) > 1 else [x.strip() for x in _SENT.split(plain) if x.strip()]
    return [x for x in out if x][:MAX_STEPS]


def _num(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 + 0.011 * max(abs(a), abs(b))


def _arith(a: float, op: str, b: float) -> float | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op in "*×x":
        return a * b
    if op in "/÷":
        return None if b == 0 else a / b
    return None


def _content(s: str) -> set[str]:
    return {w for w in _WORD.findall(s.lower()) if w not in _STOP and not _NEG.fullmatch(w)}


def _flip_pairs(steps: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs of steps with overlapping content (Jaccard >= 0.5 over non-stop words) where exactly one is negated."""
    neg = [bool(_NEG.search(s)) for s in steps]
    cont = [_content(s) for s in steps]
    out = []
    for i in range(len(steps)):
        for j in range(i + 1, len(steps)):
            if neg[i] != neg[j] and cont[i] and cont[j]:
                if len(cont[i] & cont[j]) / len(cont[i] | cont[j]) >= 0.5:
                    out.append((i, j))
    return out


def consistency_features(question: str, response: str, steps: Sequence[str]) -> list[float]:
    """:data:`CONSIST_FEATURES` of one response (floats >= 0; the ``share_*`` in [0, 1]).

    >>> f = dict(zip(CONSIST_FEATURES, consistency_features("", "", ["3 + 4 = 8", "So the answer is 7."])))
    >>> f["log_wrong_arith"] > 0, f["final_vs_derived"]
    (True, 1.0)
    """
    text = "\n".join(steps)
    checked, wrong = _arith_counts(text)
    final_vs_derived, unsupported = _final_checks(question, text)
    conflicts = _quantity_conflicts(text)
    yn = {m.group(1).lower() for m in _YES_NO.finditer(text)}
    new, total = _new_numbers(question, steps)
    return [math.log1p(wrong), wrong / checked if checked else 0.0, final_vs_derived, unsupported, float(min(conflicts, 5)),
            float(min(len(_flip_pairs(steps)), 5)), float(len(yn) > 1), math.log1p(len(_CONTRAST.findall(text))),
            new / total if total else 0.0, math.log1p(total)]


def _arith_counts(text: str) -> tuple[int, int]:
    """``(checked, wrong)``: the "a op b = c" equations of ``text`` whose three numbers parse and whose
    operation computes, and how many of them are wrong."""
    checked = wrong = 0
    for m in _ARITH.finditer(text):
        a, b, c = _num(m.group(1)), _num(m.group(3)), _num(m.group(4))
        if a is None or b is None or c is None:
            continue
        v = _arith(a, m.group(2), b)
        if v is None:
            continue
        checked += 1
        wrong += not _close(v, c)
    return checked, wrong


def _final_checks(question: str, text: str) -> tuple[float, float]:
    """``(final_vs_derived, unsupported)``, each 0.0 or 1.0: the last stated final value differs from the last
    "= X" result; the final value is no number of the question or of the text before it."""
    finals = [m.group(1).lower() for m in _FINAL.finditer(text)]
    final = finals[-1] if finals else None
    derived = [m.group(1) for m in _EQ_RESULT.finditer(text)]
    fv = _num(final) if final else None
    dv = _num(derived[-1]) if derived else None
    final_vs_derived = float(fv is not None and dv is not None and not _close(fv, dv))
    unsupported = 0.0
    if fv is not None:
        cut = text.lower().rfind(final)
        before = (question + "\n" + text[:max(0, cut)]).replace(",", "")
        unsupported = float(not any(_num(n) is not None and _close(_num(n), fv) for n in _NUM.findall(before)))
    return final_vs_derived, unsupported


def _quantity_conflicts(text: str) -> int:
    """How many two-word quantities ("N bricks per layer") ``text`` gives two or more values of."""
    qty: dict[str, set[float]] = {}
    for m in _QTY.finditer(text):
        v = _num(m.group(1))
        key = (m.group(2) + " " + (m.group(3) or "")).lower().strip()
        if v is not None:
            qty.setdefault(key, set()).add(v)
    return sum(len(v) > 1 for k, v in qty.items() if " " in k)


def _new_numbers(question: str, steps: Sequence[str]) -> tuple[int, int]:
    """``(new, total)``: the numbers of the steps, and those that are neither a result of their own step, nor
    close to a number of the question or of an earlier step, nor one of 0, 1, 2, 10, 100."""
    known = [_num(n) for n in _NUM.findall(question)]
    new = total = 0
    for s in steps:
        results = {_num(m.group(1)) for m in _EQ_RESULT.finditer(s)}
        for n in _NUM.findall(s):
            v = _num(n)
            if v is None:
                continue
            total += 1
            if v not in results and not any(k is not None and _close(k, v) for k in known) and abs(v) not in (0, 1, 2, 10, 100):
                new += 1
            known.append(v)
    return new, total


def pair_features(step_emb: np.ndarray, q_emb: np.ndarray | None, steps: Sequence[str]) -> list[float]:
    """:data:`PAIR_FEATURES` from L2-normalised step embeddings ``(s, d)`` and the question's ``(d,)`` (or None).
    One step: pair statistics are 0 (no pair), ``last_vs_rest_cos`` 1."""
    s = len(step_emb)
    out = [math.log1p(s)]
    if s >= 2:
        sim = step_emb @ step_emb.T
        iu = np.triu_indices(s, 1)
        pv = sim[iu]
        nxt = np.diag(sim, 1)
        rest = step_emb[:-1].mean(0)
        rest = rest / (np.linalg.norm(rest) + 1e-9)
        flips = [sim[i, j] for i, j in _flip_pairs(steps)]
        out += [float(pv.max()), float(pv.mean()), float(pv.min()), float(nxt.mean()), float(nxt.min()),
                float((pv > 0.85).mean()), float(step_emb[-1] @ rest)]
        fmax = float(max(flips)) if flips else 0.0
    else:
        out += [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        fmax = 0.0
    qc = float((step_emb @ q_emb).mean()) if q_emb is not None and s else 0.0
    return [*out, qc, fmax]


def step_features(question: str, steps: Sequence[str], step_emb: np.ndarray, q_emb: np.ndarray | None) -> list[float]:
    """:data:`STEP_FEATURES` of one response from its steps and their L2-normalised MiniLM embeddings
    ``(s, d)`` (``q_emb`` ``(d,)`` of the question, None when there is none: the question columns are 0).
    Floats >= 0 except cosines (in [-1, 1]); ``share_*`` in [0, 1]. One step: the redundancy columns are 0.

    >>> E = np.eye(3, dtype=np.float32)[[0, 0, 1]]
    >>> f = dict(zip(STEP_FEATURES, step_features("", ["Let me add 2 and 3.", "Let me add 2 and 3.", "So x = 5."], E, None)))
    >>> round(f["step_redundancy_max"], 3), round(f["share_planning_steps"], 3), round(f["share_no_new_number_steps"], 3)
    (1.0, 0.667, 0.333)
    """
    s = len(steps)
    out: list[float] = []
    if s >= 2:
        sim = step_emb @ step_emb.T
        prev = np.array([sim[i, :i].max() for i in range(1, s)])
        out += [float(prev.mean()), float(prev.max()), float((prev >= 0.85).mean())]
        neg = [bool(_NEG.search(x)) for x in steps]
        twins = sum(1 for i in range(s) for j in range(i + 1, s) if neg[i] != neg[j] and sim[i, j] >= 0.75)
    else:
        out += [0.0, 0.0, 0.0]
        twins = 0
    if q_emb is not None and s:
        qc = step_emb @ q_emb
        out += [float(qc.mean()), float(qc.max()), float(qc[0])]
    else:
        out += [0.0, 0.0, 0.0]
    known = {_num(n) for n in _NUM.findall(question)}
    no_new = 0
    for x in steps:
        nums = {_num(n) for n in _NUM.findall(x)} - {None}
        if not nums - known:
            no_new += 1
        known |= nums
    n = max(1, s)
    chars = sum(len(x) for x in steps)
    out += [math.log1p(twins), sum(bool(_PLAN.search(x)) for x in steps) / n, sum(not _MATH.search(x) for x in steps) / n,
            no_new / n, sum(bool(_NEG.search(x)) for x in steps) / n, math.log1p(s), math.log1p(chars) / 10.0,
            math.log1p(chars / n) / 10.0]
    return out


def count_features(step_feats: Sequence[float]) -> list[float]:
    """:data:`COUNT_FEATURES` from one response's :func:`step_features` output (shares times the step count, log1p).

    >>> sf = dict(zip(STEP_FEATURES, [0.0] * len(STEP_FEATURES)), log_step_count=math.log1p(4), share_planning_steps=0.5)
    >>> round(count_features([sf[k] for k in STEP_FEATURES])[0], 4) == round(math.log1p(2), 4)
    True
    """
    f = dict(zip(STEP_FEATURES, step_feats))
    s = math.expm1(f["log_step_count"])
    return [math.log1p(round(f[k] * s)) for k in ("share_planning_steps", "share_no_math_steps", "share_no_new_number_steps",
                                                  "share_negation_steps")] + [
        math.log1p(round(f["share_redundant_steps"] * max(0.0, s - 1))), f["log_step_count"], f["log_chars_total"]]


def progress_features(steps: Sequence[str]) -> list[float]:
    """:data:`PROGRESS_FEATURES` of one response's steps: ``log(1 + count)`` each (floats >= 0).

    >>> f = dict(zip(PROGRESS_FEATURES, progress_features(["This problem involves a cube.", "I recall the formula V = s^3.",
    ...                                                     "So V = 27."])))
    >>> round(math.expm1(f["n_remark_steps"])), round(math.expm1(f["n_first_person_steps"])), round(math.expm1(f["n_recalled_fact_steps"]))
    (2, 1, 1)
    """
    return [math.log1p(sum(bool(rx.search(x)) for x in steps)) for rx in (_REMARK, _FIRST_PERSON, _FACT, _TENTATIVE, _CHECK)]


def _block_names() -> dict[str, list[str]]:
    """Each block's column names, in :data:`BLOCKS` order: one table for :func:`feature_names` and
    :func:`block_columns`."""
    return {"lex": list(LEX_FEATURES), "consist": list(CONSIST_FEATURES), "pairs": list(PAIR_FEATURES),
            "doc": [f"doc_{i}" for i in range(DOC_DIM)], "steps": list(STEP_FEATURES),
            "verifier": list(VERIFIER_FEATURES), "counts": list(COUNT_FEATURES), "progress": list(PROGRESS_FEATURES)}


def feature_names(blocks: Sequence[str] = BLOCKS) -> list[str]:
    """Column names of :func:`featurize_v5` for ``blocks`` (in :data:`BLOCKS` order)."""
    names = _block_names()
    return [n for b in BLOCKS if b in blocks for n in names[b]]


def block_columns(blocks: Sequence[str]) -> np.ndarray:
    """Indices of ``blocks``' columns in the full :func:`featurize_v5` matrix (every block of :data:`BLOCKS`)."""
    names = _block_names()
    cols, at = [], 0
    for b in BLOCKS:
        if b in blocks:
            cols.extend(range(at, at + len(names[b])))
        at += len(names[b])
    return np.array(cols, dtype=int)


def featurize_v5(encoder: Any, items: Sequence[Mapping[str, Any]], blocks: Sequence[str] = BLOCKS) -> np.ndarray:
    """Features of ``items`` (``{"response", "question"?, "steps"?, "correct"?}``): ``(n, width(blocks))`` float32, blocks in
    :data:`BLOCKS` order. ``encoder`` (``encode(texts) -> (m, d)`` normalised) is needed for ``pairs``, ``doc`` and ``steps``
    (one ``encode`` call for all texts of the batch); None is allowed for ``lex``/``consist`` only.

    Raises:
        TypeError: a response is not a str.
        ValueError: an unknown block, or ``pairs``/``doc``/``steps`` asked for with no encoder.
    """

    need_enc = _check_featurize_args(encoder, items, blocks)
    plains = [plain_text(it["response"]) for it in items]
    steps = [split_steps(it["response"], it.get("steps")) or ["(empty)"] for it in items]
    qs = [str(it.get("question") or "") for it in items]
    emb_doc = emb_q = None
    emb_steps: list[np.ndarray] = []
    if need_enc:
        emb_doc, emb_q, emb_steps = _encode_batch(encoder, plains, qs, steps)
    rows = []
    for i in range(len(items)):
        row: list[float] = []
        if "lex" in blocks:
            row += lexical_features(plains[i])
        if "consist" in blocks:
            row += consistency_features(qs[i], plains[i], steps[i])
        if "pairs" in blocks:
            row += pair_features(emb_steps[i], emb_q[i] if qs[i] else None, steps[i])
        if "doc" in blocks:
            row += [float(x) for x in emb_doc[i]]
        sf = step_features(qs[i], steps[i], emb_steps[i], emb_q[i] if qs[i] else None) if (
            "steps" in blocks or "counts" in blocks) else []
        if "steps" in blocks:
            row += sf
        if "verifier" in blocks:
            c = items[i].get("correct")
            row.append(0.5 if c is None else float(bool(c)))
        if "counts" in blocks:
            row += count_features(sf)
        if "progress" in blocks:
            row += progress_features(steps[i])
        rows.append(row)
    width = len(block_columns(blocks))
    return np.array(rows, dtype=np.float32).reshape(len(items), width)


def _check_featurize_args(encoder: Any, items: Sequence[Mapping[str, Any]], blocks: Sequence[str]) -> bool:
    """Whether ``blocks`` need the encoder; raises :func:`featurize_v5`'s errors (unknown block, no encoder
    for ``pairs``/``doc``, a response that is not a str)."""
    bad = [b for b in blocks if b not in BLOCKS]
    if bad:
        raise ValueError(f"blocks {bad}: expected names from {BLOCKS}")
    need_enc = any(b in blocks for b in ("pairs", "doc", "steps", "counts"))
    if need_enc and encoder is None:
        raise ValueError("feature blocks 'pairs'/'doc'/'steps' need the sentence encoder (encoder=None given)")
    for i, it in enumerate(items):
        if not isinstance(it.get("response"), str):
            raise TypeError(f"items[{i}]['response'] must be str, got {type(it.get('response')).__name__}")
    return need_enc


def _encode_batch(encoder: Any, plains: list[str], qs: list[str], steps: list[list[str]]
                  ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """One ``encode`` call for the batch: ``(documents (n, d), questions (n, d), per item its steps (k_i, d))``;
    an empty document or question is encoded as "(empty)" / "(none)"."""
    texts = [p or "(empty)" for p in plains] + [q or "(none)" for q in qs] + [s for st in steps for s in st]
    E = encoder.encode(texts) if texts else np.zeros((0, DOC_DIM), dtype=np.float32)
    n = len(plains)
    emb_steps: list[np.ndarray] = []
    at = 2 * n
    for st in steps:
        emb_steps.append(E[at:at + len(st)])
        at += len(st)
    return E[:n], E[n:2 * n], emb_steps


def cot_rule(responses: Sequence[str]) -> np.ndarray:
    """``cot`` by the rule judge (``howeval.judges.rules.RuleJudge``: thinking tags, self-correction traces):
    no human label here has a ``cot`` positive to learn from. ``(n,)`` bool."""
    from howeval.judges.rules import RuleJudge

    v = RuleJudge().judge_batch([{"question": "", "response": r} for r in responses])
    return np.array([bool(x.labels and x.labels.get("cot")) for x in v], dtype=bool)
