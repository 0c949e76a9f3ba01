"""PatternRM head v5 features: what a CPU can compute that can see a contradiction (issue 29).

Four blocks, each a fixed-width float vector per response (``featurize_v5`` stacks the ones asked for):

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

__all__ = ["CONSIST_FEATURES", "PAIR_FEATURES", "BLOCKS", "MAX_STEPS", "split_steps", "cot_rule", "consistency_features",
           "pair_features", "featurize_v5", "block_columns", "feature_names"]

MAX_STEPS = 24
CONSIST_FEATURES = ("log_wrong_arith", "share_wrong_arith", "final_vs_derived", "final_unsupported", "quantity_conflicts",
                    "polarity_flip_pairs", "yes_no_conflict", "log_contrast_cues", "share_new_numbers", "log_numbers")
PAIR_FEATURES = ("log_steps", "pair_cos_max", "pair_cos_mean", "pair_cos_min", "next_cos_mean", "next_cos_min",
                 "share_pairs_over_085", "last_vs_rest_cos", "question_cos_mean", "flip_pair_cos_max")
BLOCKS = ("lex", "consist", "pairs", "doc")
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


def feature_names(blocks: Sequence[str] = BLOCKS) -> list[str]:
    """Column names of :func:`featurize_v5` for ``blocks`` (in :data:`BLOCKS` order)."""

    names = {"lex": list(LEX_FEATURES), "consist": list(CONSIST_FEATURES), "pairs": list(PAIR_FEATURES),
             "doc": [f"doc_{i}" for i in range(DOC_DIM)]}
    return [n for b in BLOCKS if b in blocks for n in names[b]]


def block_columns(blocks: Sequence[str]) -> np.ndarray:
    """Indices of ``blocks``' columns in the full :func:`featurize_v5` matrix (all four blocks)."""
    sizes = {"lex": 12, "consist": len(CONSIST_FEATURES), "pairs": len(PAIR_FEATURES), "doc": DOC_DIM}
    cols, at = [], 0
    for b in BLOCKS:
        if b in blocks:
            cols.extend(range(at, at + sizes[b]))
        at += sizes[b]
    return np.array(cols, dtype=int)


def featurize_v5(encoder: Any, items: Sequence[Mapping[str, Any]], blocks: Sequence[str] = BLOCKS) -> np.ndarray:
    """Features of ``items`` (``{"response", "question"?, "steps"?}``): ``(n, width(blocks))`` float32, blocks in
    :data:`BLOCKS` order. ``encoder`` (``encode(texts) -> (m, d)`` normalised) is needed for ``pairs`` and ``doc``
    (one ``encode`` call for all texts of the batch); None is allowed for ``lex``/``consist`` only.

    Raises:
        TypeError: a response is not a str.
        ValueError: an unknown block, or ``pairs``/``doc`` asked for with no encoder.
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
        rows.append(row)
    width = len(block_columns(blocks))
    return np.array(rows, dtype=np.float32).reshape(len(items), width)


def _check_featurize_args(encoder: Any, items: Sequence[Mapping[str, Any]], blocks: Sequence[str]) -> bool:
    """Whether ``blocks`` need the encoder; raises :func:`featurize_v5`'s errors (unknown block, no encoder
    for ``pairs``/``doc``, a response that is not a str)."""
    bad = [b for b in blocks if b not in BLOCKS]
    if bad:
        raise ValueError(f"blocks {bad}: expected names from {BLOCKS}")
    need_enc = any(b in blocks for b in ("pairs", "doc"))
    if need_enc and encoder is None:
        raise ValueError("feature blocks 'pairs'/'doc' need the sentence encoder (encoder=None given)")
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
