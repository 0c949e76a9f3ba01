"""PatternRM's text format and corpus logic: prompt, label output, parser, SFT records, consensus corpus.

Pure functions, no I/O (SPEC section 2, "PatternRM and PatternRL"):

- PatternRM is text-only: it sees the question and the user-facing response y_m, never an image.
- **Direct** target (the variant served as a reward model): one line ``LABELS: cot=0 rep=1 con=0 pr=0``.
- **Thinking** target: a short judgment (one line per label, with the judges' evidence) inside
  ``<analysis>...</analysis>``, then the same ``LABELS:`` line. Both targets end with that line, so one
  parser reads both.
- :func:`parse_label_output` is strict: a missing, duplicated or non-0/1 label is a
  :class:`PatternRMParseError`, never a guessed clean label.
- Corpus: :func:`unanimous_rows` keeps responses on which all required judges produced labels and agree on
  the whole 4-label vector; :func:`oversample` duplicates positives of rare labels for balance
  (deterministic: the copies are chosen by a hash of the row key, not by a random draw).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from howeval.judges.verdict import LABELS

__all__ = [
    "PATTERNRM_VERSION",
    "SYSTEM_PROMPT",
    "TARGETS",
    "PatternRMParseError",
    "format_labels",
    "parse_label_output",
    "patternrm_messages",
    "direct_target",
    "thinking_target",
    "mixture_targets",
    "PAPER_MIX",
    "THINKING_PROMPT",
    "sft_record",
    "group_judgments",
    "unanimous_rows",
    "label_counts",
    "oversample",
    "rollout_key",
]

PATTERNRM_VERSION = "patternrm-format-1"
"""Name of this prompt + output format; a checkpoint trained on one format is read with the same one."""

SYSTEM_PROMPT = (
    "You label response patterns in an assistant's final answer. Labels: cot = leaked reasoning or "
    "self-correction traces; rep = unnecessary repetition; con = unresolved contradiction; pr = "
    "performative reasoning (unsupported reasoning wrapper). Reply with one line: "
    "LABELS: cot=<0|1> rep=<0|1> con=<0|1> pr=<0|1>"
)
THINKING_PROMPT = SYSTEM_PROMPT.replace(
    "Reply with one line:", "First judge each label in one line inside <analysis>...</analysis>, then reply with one line:")
"""The system prompt of the thinking form (the paper's PatternRM is trained on both forms; the prompt says which)."""
USER_TEMPLATE = "QUESTION:\n{question}\n\nRESPONSE:\n{response}"
TARGETS = ("direct", "thinking")
PAPER_MIX = (34547, 23031)
"""The paper's PatternRM SFT mixture: thinking-format and direct targets (its Table 4 compares the two forms)."""

_LINE_RE = re.compile(r"LABELS\s*:\s*(?P<body>[^\n]*)", re.IGNORECASE)
_PAIR_RE = re.compile(r"\b(?P<k>[a-z]+)\s*=\s*(?P<v>\S+)")


class PatternRMParseError(ValueError):
    """PatternRM's output does not hold one well-formed ``LABELS:`` line; the message says why."""


def format_labels(labels: Mapping[str, bool]) -> str:
    """The direct target line.

    >>> format_labels({"cot": True, "rep": False, "con": False, "pr": True})
    'LABELS: cot=1 rep=0 con=0 pr=1'
    """
    keys = set(labels)
    if keys != set(LABELS):
        raise ValueError(f"labels must have exactly {list(LABELS)}; got {sorted(keys)}")
    return "LABELS: " + " ".join(f"{k}={int(bool(labels[k]))}" for k in LABELS)


def parse_label_output(text: str) -> dict[str, bool]:
    """Read the four labels from PatternRM's output (direct or thinking): the LAST ``LABELS:`` line.

    The line must name each of ``cot rep con pr`` exactly once with value ``0`` or ``1`` (a trailing
    ``.`` or ``,`` is tolerated) and nothing else.

    Raises:
        PatternRMParseError: no ``LABELS:`` line, a label missing / repeated / unknown, a value not 0/1.

    >>> parse_label_output("<analysis>...</analysis>\\nLABELS: cot=1 rep=0 con=0 pr=0")
    {'cot': True, 'rep': False, 'con': False, 'pr': False}
    >>> parse_label_output("cot: yes")
    Traceback (most recent call last):
    ...
    howeval.judges.patternrm.format.PatternRMParseError: no 'LABELS:' line in output 'cot: yes'
    """
    if not isinstance(text, str):
        raise PatternRMParseError(f"output must be str, got {type(text).__name__}")
    lines = _LINE_RE.findall(text)
    if not lines:
        raise PatternRMParseError(f"no 'LABELS:' line in output {text[:120]!r}")
    body = lines[-1].strip()
    out: dict[str, bool] = {}
    for m in _PAIR_RE.finditer(body):
        k, v = m.group("k").lower(), m.group("v").rstrip(".,;")
        if k not in LABELS:
            raise PatternRMParseError(f"unknown label {k!r} in {body!r}; expected {list(LABELS)}")
        if k in out:
            raise PatternRMParseError(f"label {k!r} repeated in {body!r}")
        if v not in ("0", "1"):
            raise PatternRMParseError(f"label {k}={v!r} must be 0 or 1 in {body!r}")
        out[k] = v == "1"
    missing = [k for k in LABELS if k not in out]
    if missing:
        raise PatternRMParseError(f"labels {missing} missing in {body!r}")
    leftover = _PAIR_RE.sub("", body).strip(" ,;.")
    if leftover:
        raise PatternRMParseError(f"unexpected text {leftover[:60]!r} in labels line {body!r}")
    return {k: out[k] for k in LABELS}


def patternrm_messages(question: str, response: str, max_chars: int | None = None, form: str = "direct") -> list[dict[str, str]]:
    """Chat messages PatternRM is trained on and served with (text-only: no image part).

    Args:
        question: the prompt q.
        response: the user-facing response y_m.
        max_chars: keep at most this many characters of the response (head and tail, marked), or None.
        form: ``"direct"`` (:data:`SYSTEM_PROMPT`: the labels line only) or ``"thinking"``
            (:data:`THINKING_PROMPT`: an ``<analysis>`` block first).

    Raises:
        ValueError: ``form`` is not one of :data:`TARGETS`.
    """
    if form not in TARGETS:
        raise ValueError(f"form={form!r} is not one of {list(TARGETS)}")
    if not isinstance(question, str) or not isinstance(response, str):
        raise TypeError(f"question and response must be str, got {type(question).__name__}, {type(response).__name__}")
    if max_chars is not None and len(response) > max_chars:
        half = max_chars // 2
        response = response[:half] + "\n[...]\n" + response[-half:]
    return [
        {"role": "system", "content": SYSTEM_PROMPT if form == "direct" else THINKING_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(question=question, response=response)},
    ]


def mixture_targets(keys: Sequence[str], mix: tuple[int, int] = PAPER_MIX) -> list[str]:
    """Which target each SFT record gets, ``"thinking"`` or ``"direct"``, in the ratio ``mix`` = (thinking,
    direct) (default the paper's 34,547 : 23,031): the records sorted by SHA-256 of their key, the first
    ``round(n * thinking / (thinking + direct))`` thinking. Deterministic, independent of input order.

    Raises:
        ValueError: a negative count or both zero.

    >>> mixture_targets([str(i) for i in range(10)]).count("thinking")
    6
    """
    t, d = (int(x) for x in mix)
    if t < 0 or d < 0 or t + d == 0:
        raise ValueError(f"mix={mix!r}: expected two counts >= 0, not both 0 (thinking, direct)")
    n_think = round(len(keys) * t / (t + d))
    order = sorted(range(len(keys)), key=lambda i: hashlib.sha256(str(keys[i]).encode()).hexdigest())
    out = ["direct"] * len(keys)
    for i in order[:n_think]:
        out[i] = "thinking"
    return out


def direct_target(labels: Mapping[str, bool]) -> str:
    """The direct target: the labels line only."""
    return format_labels(labels)


def thinking_target(labels: Mapping[str, bool], evidence: Mapping[str, str | None] | None = None) -> str:
    """The thinking target: a one-line judgment per label (quoting evidence when a judge gave one), then labels.

    >>> print(thinking_target({"cot": True, "rep": False, "con": False, "pr": False}, {"cot": "Wait,"}))
    <analysis>
    cot: present, e.g. "Wait,".
    rep: absent.
    con: absent.
    pr: absent.
    </analysis>
    LABELS: cot=1 rep=0 con=0 pr=0
    """
    evidence = evidence or {}
    lines = []
    for k in LABELS:
        if labels[k]:
            ev = evidence.get(k)
            lines.append(f'{k}: present, e.g. "{ev.strip()[:160]}".' if ev else f"{k}: present.")
        else:
            lines.append(f"{k}: absent.")
    return "<analysis>\n" + "\n".join(lines) + "\n</analysis>\n" + format_labels(labels)


def sft_record(
    question: str,
    response: str,
    labels: Mapping[str, bool],
    target: str = "direct",
    evidence: Mapping[str, str | None] | None = None,
    max_chars: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One SFT instance in TRL's conversational format: ``{"messages": [system, user, assistant], ...}``.

    Extra keys: ``target`` and ``labels`` (and ``meta``'s keys), which SFTTrainer ignores.
    """
    if target not in TARGETS:
        raise ValueError(f"target={target!r} is not one of {list(TARGETS)}")
    content = direct_target(labels) if target == "direct" else thinking_target(labels, evidence)
    rec = {
        "messages": [*patternrm_messages(question, response, max_chars, form=target), {"role": "assistant", "content": content}],
        "target": target,
        "labels": {k: bool(labels[k]) for k in LABELS},
    }
    rec.update(meta or {})
    return rec


# ---------------------------------------------------------------------------------------------- corpus

ROW_KEY = ("sample_id", "config", "mode", "response_hash")
"""A judged response: the judgment key plus the response hash (a regenerated response is another row)."""


def group_judgments(judgments: Iterable[Mapping[str, Any]]) -> dict[tuple, dict[str, Mapping[str, Any]]]:
    """Judgment rows grouped by response (:data:`ROW_KEY`), then by judge id.

    A judge that judged the same response twice keeps its last row without ``judge_error`` (else the last).
    """
    out: dict[tuple, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for j in judgments:
        missing = [c for c in (*ROW_KEY, "judge") if c not in j]
        if missing:
            raise KeyError(f"judgment row lacks {missing}; present: {sorted(j)}")
        key = tuple(j[c] for c in ROW_KEY)
        prev = out[key].get(j["judge"])
        if prev is None or not j.get("judge_error") or prev.get("judge_error"):
            out[key][j["judge"]] = j
    return dict(out)


def unanimous_rows(
    judgments: Iterable[Mapping[str, Any]], judges: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Responses whose whole 4-label vector all ``judges`` agree on (SPEC section 2, "Corpus").

    Args:
        judgments: Judgment rows (columns of ``records.JUDGMENT_SCHEMA``).
        judges: the judge ids (``name@version``) that must all have labelled a response.

    Returns:
        ``(rows, counts)``: one row per kept response ``{sample_id, config, mode, response_hash, labels,
        evidence, correct}`` (evidence: per label, the first judge's span among those that gave one), and
        counts ``{responses, missing_judge, judge_error, disagree, unanimous}``.
    """
    judges = list(judges)
    if len(set(judges)) != len(judges) or not judges:
        raise ValueError(f"judges must be distinct and non-empty, got {judges}")
    counts = {"responses": 0, "missing_judge": 0, "judge_error": 0, "disagree": 0, "unanimous": 0}
    kept = []
    for key, by_judge in sorted(group_judgments(judgments).items()):
        counts["responses"] += 1
        if any(j not in by_judge for j in judges):
            counts["missing_judge"] += 1
            continue
        rows = [by_judge[j] for j in judges]
        if any(r.get("judge_error") or any(r.get(k) is None for k in LABELS) for r in rows):
            counts["judge_error"] += 1
            continue
        vectors = {tuple(bool(r[k]) for k in LABELS) for r in rows}
        if len(vectors) != 1:
            counts["disagree"] += 1
            continue
        counts["unanimous"] += 1
        labels = dict(zip(LABELS, vectors.pop()))
        evidence: dict[str, str | None] = {k: None for k in LABELS}
        for r in rows:
            ev = r.get("evidence")
            ev = json.loads(ev) if isinstance(ev, str) and ev else (ev or {})
            for k in LABELS:
                if labels[k] and evidence[k] is None and isinstance(ev.get(k), str) and ev[k].strip():
                    evidence[k] = ev[k]
        kept.append({**dict(zip(ROW_KEY, key)), "labels": labels, "evidence": evidence,
                     "correct": rows[0].get("correct")})
    return kept, counts


def label_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{"n": rows, "clean": rows with no label, <label>: rows with that label}``."""
    c = {"n": 0, "clean": 0, **{k: 0 for k in LABELS}}
    for r in rows:
        c["n"] += 1
        lab = r["labels"]
        c["clean"] += not any(lab[k] for k in LABELS)
        for k in LABELS:
            c[k] += bool(lab[k])
    return c


def _stable_hash(row: Mapping[str, Any], salt: str) -> str:
    key = json.dumps([row.get(c) for c in ROW_KEY], default=str)
    return hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()


def oversample(
    rows: Sequence[Mapping[str, Any]], min_rate: float = 0.1, max_copies: int = 3, seed: int = 0
) -> list[dict[str, Any]]:
    """Duplicate positive instances of rare labels until each label's rate reaches ``min_rate`` (balance).

    Labels are handled rarest first. For a label below ``min_rate``, its positive rows are cycled in a
    stable hash order (salted by ``seed``) and appended until the rate reaches ``min_rate`` or every
    positive row has ``max_copies`` extra copies. Deterministic: same rows, same output. Copies carry
    ``copy`` (1, 2, ...); originals have ``copy = 0``. (The paper's 52,344 -> 57,578 is a ~10% increase;
    its selection rule is not in the text: this one is ours.)

    >>> rows = [{"sample_id": str(i), "labels": {"cot": i == 0, "rep": False, "con": False, "pr": False}} for i in range(10)]
    >>> out = oversample(rows, min_rate=0.25, max_copies=3)
    >>> len(out), sum(r["labels"]["cot"] for r in out)
    (12, 3)
    """
    if not 0.0 <= min_rate < 1.0:
        raise ValueError(f"min_rate={min_rate!r} must lie in [0, 1)")
    if max_copies < 0:
        raise ValueError(f"max_copies={max_copies!r} must be >= 0")
    out = [{**r, "copy": 0} for r in rows]
    copies: dict[int, int] = defaultdict(int)  # index into rows -> extra copies made
    counts = label_counts(out)
    for k in sorted(LABELS, key=lambda k: (counts[k], LABELS.index(k))):
        pos = sorted((i for i, r in enumerate(rows) if r["labels"][k]), key=lambda i: _stable_hash(rows[i], f"{seed}:{k}"))
        if not pos:
            continue
        n, n_pos = len(out), sum(bool(r["labels"][k]) for r in out)
        j = 0
        while n_pos / n < min_rate:
            cand = [i for i in pos if copies[i] < max_copies]
            if not cand:
                break
            i = cand[j % len(cand)]
            copies[i] += 1
            out.append({**rows[i], "copy": copies[i]})
            n, n_pos, j = n + 1, n_pos + 1, j + 1
    return out


def rollout_key(prompt: str, response: str) -> str:
    """The key of a rollout for the Bernoulli gate: sha256 hex of ``prompt + "\\x00" + response``.

    The reward server gates with ``bernoulli_gate(rollout_key(prompt, response), p, seed)``; a trainer
    that scores in-process gets the same z by calling the same two functions.

    >>> rollout_key("q", "a")[:12]
    '0d317b0da1b1'
    """
    if not isinstance(prompt, str) or not isinstance(response, str):
        raise TypeError(f"prompt and response must be str, got {type(prompt).__name__}, {type(response).__name__}")
    return hashlib.sha256(f"{prompt}\x00{response}".encode()).hexdigest()
