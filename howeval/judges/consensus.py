"""Agreement of several pattern judges on one response: majority labels, agreement counts, consensus.

Used to split responses into consensus samples (all judges agree on the whole vector) and disputed ones
(the calibration set of SPEC section 1), and to keep only consensus responses for the PatternRM corpus
(SPEC section 2). Judges that failed (``error`` set) are excluded from the vote and reported.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from howeval.judges.verdict import LABELS, PatternVerdict


@dataclass(frozen=True)
class ConsensusResult:
    """Votes of the judges that produced labels.

    Attributes:
        labels: per label, the majority (True/False), or None on a tie or when no judge produced labels.
        votes_true: per label, how many judges said True.
        agreement: per label, how many judges agree with the majority (the larger side on a tie).
        n_judges: judges that produced labels (errors excluded).
        judges: names of those judges, sorted.
        unanimous: every judge labelled the response (none failed) and all gave the same whole vector.
            A response that only some judges labelled is never unanimous: the others' silence is not
            agreement.
        disputed_labels: labels on which the labelling judges disagree, in LABELS order.
        errors: judge name -> error, for judges that produced no labels.
    """

    labels: dict[str, bool | None]
    votes_true: dict[str, int]
    agreement: dict[str, int]
    n_judges: int
    judges: tuple[str, ...]
    unanimous: bool
    disputed_labels: tuple[str, ...]
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """No judge failed."""
        return not self.errors

    @property
    def is_consensus_sample(self) -> bool:
        """All judges (none failed) agree on the whole vector: a PatternRM corpus / consensus sample."""
        return self.unanimous and self.complete

    def as_vector(self) -> tuple[bool | None, ...]:
        """Majority labels in LABELS order (None where tied or unknown)."""
        return tuple(self.labels[k] for k in LABELS)

    @property
    def trigger(self) -> bool | None:
        """Any majority label True (reconstructed trigger); None when a label is undecided and none is True."""
        vals = [self.labels[k] for k in LABELS]
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False


def consensus(verdicts_by_judge: Mapping[str, PatternVerdict]) -> ConsensusResult:
    """Combine one response's verdicts from several judges.

    Args:
        verdicts_by_judge: judge name -> verdict (failed verdicts allowed; they are excluded and listed).

    Returns:
        A :class:`ConsensusResult`.

    >>> from howeval.judges.verdict import make_verdict
    >>> v = lambda *b: make_verdict(dict(zip(LABELS, b)), None, "j", "0")
    >>> r = consensus({"a": v(True, False, False, False), "b": v(True, True, False, False), "c": v(True, False, False, False)})
    >>> r.as_vector(), r.agreement["rep"], r.unanimous, r.disputed_labels
    ((True, False, False, False), 2, False, ('rep',))
    """
    if not verdicts_by_judge:
        raise ValueError("consensus needs at least one judge's verdict, got none")
    ok = {n: v for n, v in verdicts_by_judge.items() if v.error is None}
    errors = {n: str(v.error) for n, v in verdicts_by_judge.items() if v.error is not None}
    n = len(ok)
    votes = {k: sum(v.labels[k] for v in ok.values()) for k in LABELS}
    labels: dict[str, bool | None] = {}
    agreement: dict[str, int] = {}
    for k in LABELS:
        t, f = votes[k], n - votes[k]
        labels[k] = None if n == 0 or t == f else t > f
        agreement[k] = max(t, f)
    disputed = tuple(k for k in LABELS if 0 < votes[k] < n)
    return ConsensusResult(
        labels=labels,
        votes_true=votes,
        agreement=agreement,
        n_judges=n,
        judges=tuple(sorted(ok)),
        unanimous=n > 0 and not errors and not disputed,
        disputed_labels=disputed,
        errors=errors,
    )


def consensus_table(rows: Iterable[ConsensusResult | Mapping[str, PatternVerdict]]) -> dict:
    """Summarize agreement over many responses.

    Args:
        rows: one :class:`ConsensusResult` (or a judge -> verdict mapping) per response.

    Returns:
        ``{"n", "n_unanimous", "n_consensus_samples", "n_with_errors", "n_no_labels",
        "unanimous_rate", "per_label": {label: {"agreement_counts": {k: responses where k judges agree
        with the majority}, "n_disputed", "majority_true", "ties"}}}``.
    """
    results = [r if isinstance(r, ConsensusResult) else consensus(r) for r in rows]
    n = len(results)
    per_label: dict[str, dict] = {}
    for k in LABELS:
        counts: dict[int, int] = {}
        for r in results:
            if r.n_judges:
                counts[r.agreement[k]] = counts.get(r.agreement[k], 0) + 1
        per_label[k] = {
            "agreement_counts": dict(sorted(counts.items(), reverse=True)),
            "n_disputed": sum(k in r.disputed_labels for r in results),
            "majority_true": sum(r.labels[k] is True for r in results),
            "ties": sum(r.n_judges > 0 and r.labels[k] is None for r in results),
        }
    n_unan = sum(r.unanimous for r in results)
    return {
        "n": n,
        "n_unanimous": n_unan,
        "n_consensus_samples": sum(r.is_consensus_sample for r in results),
        "n_with_errors": sum(not r.complete for r in results),
        "n_no_labels": sum(r.n_judges == 0 for r in results),
        "unanimous_rate": (n_unan / n) if n else None,
        "per_label": per_label,
    }


__all__ = ["ConsensusResult", "consensus", "consensus_table"]
