"""The verdict of one pattern judge on one response: four labels, their evidence, or an error (SPEC section 1).

b = J_pat(x, y_m) in {0,1}^4 for (CoT leakage, Repetition, Contradiction, Performative reasoning).
A verdict either carries all four labels or an ``error``; a failed judge never yields default labels.
"""
from __future__ import annotations

from dataclasses import dataclass

from howeval.records import LABELS  # the four pattern labels, defined once


class JudgeParseError(ValueError):
    """A judge's output could not be read as the four-label JSON object; the message says why."""


@dataclass
class PatternVerdict:
    """One judge's labels for one user-facing response y_m.

    Attributes:
        labels: ``{"cot": bool, "rep": bool, "con": bool, "pr": bool}``; empty when ``error`` is set.
        evidence: per label, the span that triggered it (None when the label is False or the judge gave
            none); empty when ``error`` is set.
        judge: the judge's name (``"rules"``, an LLM judge's configured name, ...).
        judge_version: the judge's version string (rule set or prompt version, model id).
        error: None on success, else why the judge produced no labels (``"judge_error: ..."``).
        raw: the judge's raw output (kept for audits, always kept on errors when there was output).

    Invariant: with ``error`` set the verdict has no labels (``labels == {}``); without it, ``labels``
    has exactly the four keys of :data:`LABELS` with bool values.
    """

    labels: dict[str, bool]
    evidence: dict[str, str | None]
    judge: str
    judge_version: str
    error: str | None = None
    raw: str | None = None

    def __post_init__(self) -> None:
        if self.error is not None:
            if self.labels:
                raise ValueError(
                    f"a verdict with error={self.error!r} must carry no labels, got labels={self.labels!r}"
                )
            return
        keys = set(self.labels)
        if keys != set(LABELS):
            raise ValueError(
                f"labels must have exactly the keys {list(LABELS)}; missing {sorted(set(LABELS) - keys)}, "
                f"unexpected {sorted(keys - set(LABELS))}"
            )
        bad = {k: v for k, v in self.labels.items() if not isinstance(v, bool)}
        if bad:
            raise TypeError(f"label values must be bool, got {bad!r}")
        unknown = set(self.evidence) - set(LABELS)
        if unknown:
            raise ValueError(f"evidence keys must be among {list(LABELS)}, got unexpected {sorted(unknown)}")
        for k in LABELS:
            self.evidence.setdefault(k, None)

    @classmethod
    def failed(cls, judge: str, judge_version: str, error: str, raw: str | None = None) -> PatternVerdict:
        """A verdict with no labels: the judge failed on this response (``error`` says why)."""
        if not error:
            raise ValueError("a failed verdict needs a non-empty error reason")
        return cls(labels={}, evidence={}, judge=judge, judge_version=judge_version, error=error, raw=raw)

    @property
    def ok(self) -> bool:
        """True when the verdict carries labels (no error)."""
        return self.error is None

    @property
    def trigger(self) -> bool | None:
        """t = 1[b_CoT + b_Rep + b_Con + b_PR > 0] **(reconstructed: any label)**; None on error."""
        if self.error is not None:
            return None
        return any(self.labels[k] for k in LABELS)

    def as_vector(self) -> tuple[bool, ...] | None:
        """The labels in :data:`LABELS` order, e.g. ``(True, False, False, False)``; None on error."""
        if self.error is not None:
            return None
        return tuple(self.labels[k] for k in LABELS)

    def to_dict(self) -> dict:
        """A plain dict (for records and JSON): labels, evidence, judge, judge_version, error, raw."""
        return {
            "labels": dict(self.labels),
            "evidence": dict(self.evidence),
            "judge": self.judge,
            "judge_version": self.judge_version,
            "error": self.error,
            "raw": self.raw,
            "trigger": self.trigger,
        }


def make_verdict(
    labels: dict[str, bool],
    evidence: dict[str, str | None] | None,
    judge: str,
    judge_version: str,
    raw: str | None = None,
) -> PatternVerdict:
    """A successful verdict; evidence for a False label is dropped (set to None)."""
    ev = dict(evidence or {})
    ev = {k: (ev.get(k) if labels.get(k) else None) for k in LABELS}
    return PatternVerdict(labels=dict(labels), evidence=ev, judge=judge, judge_version=judge_version, raw=raw)


__all__ = ["LABELS", "JudgeParseError", "PatternVerdict", "make_verdict"]
