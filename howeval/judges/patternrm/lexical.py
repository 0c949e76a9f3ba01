"""PatternRM's content features of one plain text (:data:`LEX_FEATURES`): repetition, answer statements,
self-correction and performative cues, arithmetic and number shares, length. Pure stdlib, no model; used by the
head (``howeval.judges.patternrm.head``, v4 ``content`` features) and by the v5 feature blocks
(``howeval.judges.patternrm.features``, block ``lex``)."""
from __future__ import annotations

import math
import re

__all__ = ["LEX_FEATURES", "N_LEX", "MAX_SENTENCES", "lexical_features"]

MAX_SENTENCES = 60
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(])|\n+")
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?")
_ANSWER = re.compile(r"answer is|final answer|\\boxed|^answer\b|\b(?:therefore|thus|hence|so),? the", re.IGNORECASE)
_VALUE = re.compile(r"\\boxed\{([^{}]*)\}|(?:answer is|answer:|is|are|equals?|=)\s*\$?\(?(-?\d+(?:\.\d+)?|[A-E]\b)", re.IGNORECASE)
_COT = re.compile(r"\b(?:wait|hmm+|actually|let me|re-?check|recount|recalculat\w*|mistake|reconsider|redo|redid|"
                  r"double-check|first (?:attempt|guess|count)|draft|i think|oh)\b|<think>|thinking:", re.IGNORECASE)
_PR = re.compile(r"\b(?:clearly|obviously|evident(?:ly)?|by analy[sz]ing|based on the pattern|careful(?:ly)? consider\w*|"
                 r"logical reasoning|by symmetry|well known|must be|follows (?:directly|immediately)|we can (?:conclude|determine|see)|"
                 r"pattern continues|implies|systematic analysis|as a whole|overall arrangement|it is clear)\b", re.IGNORECASE)
_CALC = re.compile(r"\d\s*[-+*/×x÷^]\s*\(?\d|=")

LEX_FEATURES = ("rep_max_jaccard", "rep_share_05", "dup_sentences", "log_answer_statements", "distinct_answer_values",
                "log_cot_cues", "log_pr_cues", "share_calc_sentences", "share_number_sentences", "digit_share",
                "log_sentences", "log_chars")
N_LEX = len(LEX_FEATURES)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s and s.strip()][:MAX_SENTENCES]


def lexical_features(plain: str) -> list[float]:
    """:data:`LEX_FEATURES` of one plain text (``layout.plain_text`` output): ``N_LEX`` floats, each >= 0.

    >>> f = dict(zip(LEX_FEATURES, lexical_features("The sum is 5.\\nThe sum is 5.\\nThe answer is 5.")))
    >>> f["rep_max_jaccard"], f["dup_sentences"], f["distinct_answer_values"]
    (1.0, 1.0, 1.0)
    """
    sents = _sentences(plain)
    grams = []
    for x in sents:
        w = _WORD.findall(x.lower())
        grams.append({tuple(w[i:i + 3]) for i in range(len(w) - 2)} if len(w) >= 4 else set())
    best, over, pairs = 0.0, 0, 0
    for i in range(len(grams)):
        for j in range(i + 1, len(grams)):
            a, b = grams[i], grams[j]
            if not a or not b:
                continue
            jac = len(a & b) / len(a | b)
            pairs += 1
            best = max(best, jac)
            over += jac > 0.5
    norm = [" ".join(_WORD.findall(x.lower())) for x in sents]
    dups = len(norm) - len(set(norm))
    answers = [x for x in sents if _ANSWER.search(x)]
    values = set()
    for x in answers:
        for m in _VALUE.finditer(x):
            v = (m.group(1) or m.group(2) or "").strip().rstrip(".").lower()
            if v:
                values.add(v)
    n = max(1, len(sents))
    return [best, over / max(1, pairs), float(dups), math.log1p(len(answers)), float(min(len(values), 3)),
            math.log1p(len(_COT.findall(plain))), math.log1p(len(_PR.findall(plain))),
            sum(bool(_CALC.search(x)) for x in sents) / n, sum(any(c.isdigit() for c in x) for x in sents) / n,
            sum(c.isdigit() for c in plain) / max(1, len(plain)), math.log1p(len(sents)), math.log1p(len(plain)) / 10.0]
