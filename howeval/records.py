"""Typed records that flow one way through the system: Sample -> Response -> Judgment (DESIGN.md).

Records travel through Ray Data as plain dict rows; these Arrow schemas fix their columns and types
so every Parquet file under an output URI has the same shape, and the key ``(sample_id, config, mode)``
lets every stage skip what is already written (resume, re-judging).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

MODES = ("NT", "T")
"""Inference modes of SPEC section 1: non-thinking (NT) and thinking (T)."""

FAMILIES = ("VG", "OS", "KR")
"""PatternEval task families: perception & grounding, OCR & structured images, knowledge reasoning."""

KEY = ("sample_id", "config", "mode")
"""The key of a response or judgment row."""

RESPONSE_KEY = (*KEY, "response_hash")
"""The key of one response text: judgments and step scores are cached by it (a new text, a new key)."""

LABELS = ("cot", "rep", "con", "pr")
"""The four response-pattern labels (SPEC section 1), in this order everywhere."""

SAMPLE_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("benchmark", pa.string()),
        ("source", pa.string()),
        ("family", pa.string()),
        ("category", pa.string()),
        ("question", pa.string()),
        ("images", pa.list_(pa.binary())),
        ("image_names", pa.list_(pa.string())),
        ("options", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("answer_type", pa.string()),
        ("reference_steps", pa.list_(pa.string())),
        ("evidence_boxes", pa.list_(pa.list_(pa.int64()))),
        ("key_steps", pa.list_(pa.string())),
        ("domain", pa.string()),
    ]
)

RESPONSE_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("config", pa.string()),
        ("mode", pa.string()),
        ("model", pa.string()),
        ("engine", pa.string()),
        ("benchmark", pa.string()),
        ("family", pa.string()),
        ("category", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("answer_type", pa.string()),
        ("options", pa.list_(pa.string())),
        ("reasoning", pa.string()),  # r_m, the reasoning channel (null when none)
        ("response", pa.string()),  # y_m, the only part that is judged
        ("finish_reason", pa.string()),
        ("truncated", pa.bool_()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("images_seen", pa.int64()),  # images the engine actually received (0 for text-only models)
        ("error", pa.string()),
        ("response_hash", pa.string()),
        ("prompt", pa.string()),  # the prompt as sent: JSON of messages (image ids, no bytes) + request settings
        ("raw_output", pa.string()),  # the generated text before the reasoning split (null when not kept)
        ("attempt", pa.int64()),  # 1 for the first try; a rerun retries error rows up to --max-attempts
    ]
)

JUDGMENT_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("config", pa.string()),
        ("mode", pa.string()),
        ("judge", pa.string()),  # pattern judge id, e.g. "rules@1"
        ("verifier", pa.string()),  # verifier id, e.g. "rules@1"
        ("response_hash", pa.string()),
        ("correct", pa.bool_()),  # null when unresolved / not judgeable
        ("extracted", pa.string()),
        ("verify_method", pa.string()),
        ("verify_reason", pa.string()),
        ("cot", pa.bool_()),
        ("rep", pa.bool_()),
        ("con", pa.bool_()),
        ("pr", pa.bool_()),
        ("evidence", pa.string()),  # JSON object label -> evidence span
        ("rationale", pa.string()),
        ("judge_error", pa.string()),  # null on success; the reason otherwise (labels are then null)
    ]
)


VERIFY_TYPE = pa.struct([("correct", pa.bool_()), ("extracted", pa.string()), ("method", pa.string()),
                         ("reason", pa.string())])
"""One verifier verdict as an Arrow struct (the fields of ``howeval.judges.verify.VerifyResult``)."""


# CRYSTAL step scores of one response (howeval.ray_jobs.crystal), keyed by STEP_KEY.
STEPS_SCHEMA = pa.schema([
    ("sample_id", pa.string()), ("config", pa.string()), ("mode", pa.string()), ("response_hash", pa.string()),
    ("embedder", pa.string()), ("tau", pa.float64()), ("alpha", pa.float64()), ("order", pa.string()),
    ("pred_steps", pa.list_(pa.string())), ("ref_steps", pa.list_(pa.string())),
    ("step_matched", pa.int64()), ("step_precision", pa.float64()), ("step_recall", pa.float64()),
    ("step_f1", pa.float64()), ("step_lis", pa.float64()), ("step_ordered_f1", pa.float64()),
])
STEP_KEY = ("sample_id", "config", "mode", "response_hash", "embedder", "tau", "alpha", "order")

# One AdaptMMBench episode (howeval.ray_jobs.adapt): an item in one mode (text | adaptive | oracle).
ADAPT_SCHEMA = pa.schema([
    ("sample_id", pa.string()), ("config", pa.string()), ("mode", pa.string()), ("domain", pa.string()),
    ("correct", pa.bool_()), ("verify_method", pa.string()), ("called", pa.bool_()), ("n_calls", pa.int64()),
    ("n_ineffective", pa.int64()), ("tokens", pa.int64()), ("steps", pa.int64()), ("n_turns", pa.int64()),
    ("final_text", pa.string()), ("calls", pa.string()), ("error", pa.string()),
    ("trajectory_steps", pa.list_(pa.string())), ("key_steps", pa.list_(pa.string())),
    ("key_step_coverage", pa.float64()),
    # issue 31: how coverage was decided ("embedding@<tau>" or "llm:<judge id>"), a judge failure, and the
    # tool calls the LLM process judge found effective out of those it judged (null without a process judge)
    ("coverage_method", pa.string()), ("coverage_error", pa.string()),
    ("n_calls_effective", pa.int64()), ("n_calls_judged", pa.int64()),
])


def response_hash(response: str | None, reasoning: str | None = None) -> str:
    """Stable id of a response text: sha256 over (y_m, r_m), hex, 16 chars. Judgments are cached by it."""
    h = hashlib.sha256(json.dumps([response, reasoning], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:16]


class MissingColumnsError(KeyError, ValueError):
    """Required columns (or item keys) are missing; the message lists missing and present ones.

    Both a KeyError (a missing key) and a ValueError (bad input), so either ``except`` catches it.
    """

    def __str__(self) -> str:  # KeyError would repr-quote the message
        return str(self.args[0]) if self.args else ""


def check_columns(present: Iterable[str], required: Mapping[str, str] | Sequence[str], where: str,
                  noun: str = "columns") -> None:
    """Raise :class:`MissingColumnsError` when ``present`` lacks any of ``required`` (STYLE rule 3).

    Args:
        present: the column names of a batch, or the keys of a row / item (a dict works).
        required: the required names, or name -> one-line description (shown for the missing ones).
        where: who checks (a stage or item name), first in the message.
        noun: what is missing, in the message (``"columns"``, ``"keys"``).

    >>> try:
    ...     check_columns({"sample_id": 1}, {"sample_id": "item id", "mode": "NT or T"}, "JudgeStage")
    ... except ValueError as e:
    ...     print(e)
    JudgeStage: missing columns ['mode'] (mode: NT or T); present: ['sample_id']
    """
    names = set(present)
    missing = [k for k in required if k not in names]
    if missing:
        what = f" ({'; '.join(f'{m}: {required[m]}' for m in missing)})" if isinstance(required, Mapping) else ""
        raise MissingColumnsError(f"{where}: missing {noun} {missing}{what}; present: {sorted(names)}")


def key_of(row: Mapping[str, object], columns: Sequence[str] = KEY) -> tuple[str, ...]:
    """The key of a row: ``(sample_id, config, mode)``, or the values of ``columns`` (e.g. :data:`RESPONSE_KEY`),
    as strings (a null becomes ``"None"`` on every side alike).

    Raises:
        MissingColumnsError (a KeyError): a key column is missing (named, with the present ones).

    >>> key_of({"sample_id": 7, "config": "c", "mode": "T", "response_hash": "ab", "response": "x"})
    ('7', 'c', 'T')
    >>> key_of({"sample_id": "7", "config": "c", "mode": "T", "response_hash": "ab"}, RESPONSE_KEY)
    ('7', 'c', 'T', 'ab')
    """
    check_columns(row, columns, "row key", "key columns")
    return tuple(str(row[c]) for c in columns)


def latest_attempts(responses: list[dict]) -> list[dict]:
    """One response per key (sample_id, config, mode): the highest ``attempt`` (a run killed after a retry
    may hold the old error row beside the new one until its next run tidies up)."""
    best: dict[tuple, dict] = {}
    for r in responses:
        k = key_of(r)
        if k not in best or (r.get("attempt") or 1) >= (best[k].get("attempt") or 1):
            best[k] = r
    return list(best.values())


def latest_responses(rows: list[dict]) -> dict[tuple, dict]:
    """One response per key ``(sample_id, config, mode)``: the highest ``attempt`` (null counts as 1)."""
    return {key_of(r): r for r in latest_attempts(rows)}


def conform(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Build a table with exactly ``schema``'s columns (missing ones null). Raises on a type mismatch."""
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)
