"""One reward row's figures as plain floats, for an RL framework's training log (OpenRLHF ``extra_logs``,
veRL ``reward_extra_info``): every key on every row, never null (issue 40).

OpenRLHF turns each ``extra_logs`` value into a tensor and logs its batch mean
(``openrlhf/trainer/ppo_utils/samples_generator.py`` at OpenRLHF/OpenRLHF commit
3c3be6234e0cb353e76bb8019947db9dfe99fca7); veRL's naive reward manager appends each key of a
``compute_score`` dict to a per-key list (``verl/workers/reward_manager/naive.py`` at volcengine/verl commit
b178a3cd56f58b2d502255daba591e92833930a7). A null breaks the first and a key missing on some rows the
second, so a figure a row does not have is 0.0 beside a 0/1 mask that says which rows have it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from howeval.records import LABELS

LOG_KEYS = ("s_ver", "degraded", "refused", "pattern_scored", "s_pat", *LABELS)
"""The keys of :func:`log_fields`, in order."""


def log_fields(result: Mapping[str, Any]) -> dict[str, float]:
    """A reward result row (``/v1/rewards`` answer row, or the pipeline's dict) as floats, keys :data:`LOG_KEYS`.

    ``s_ver`` in {0, 1}; ``degraded`` 1.0 where the row degraded (its ``error`` says why); ``refused`` 1.0 where
    an OpenRLHF row could not be told from its prompt (``verify_method: refused``); ``pattern_scored`` 1.0
    where PatternRM labelled the row (pattern kind, gate z = 1, PatternRM up); ``s_pat`` in [0, 1] and the
    four labels ``cot``, ``rep``, ``con``, ``pr`` (0.0 or 1.0) where ``pattern_scored``, else 0.0: the mean
    over the labelled rows is ``mean(s_pat) / mean(pattern_scored)``.

    >>> log_fields({"s_ver": 1.0, "labels": {"cot": True, "rep": False, "con": False, "pr": False}, "s_pat": 0.75})
    {'s_ver': 1.0, 'degraded': 0.0, 'refused': 0.0, 'pattern_scored': 1.0, 's_pat': 0.75, 'cot': 1.0, 'rep': 0.0, 'con': 0.0, 'pr': 0.0}
    >>> log_fields({"s_ver": 0.0, "labels": None, "s_pat": None, "degraded": True})["pattern_scored"]
    0.0
    """
    labels = result.get("labels")
    scored = labels is not None and result.get("s_pat") is not None
    out = {"s_ver": float(result["s_ver"]), "degraded": float(bool(result.get("degraded"))),
           "refused": float(result.get("verify_method") == "refused"), "pattern_scored": float(scored),
           "s_pat": float(result["s_pat"]) if scored else 0.0}
    for k in LABELS:
        out[k] = float(bool(labels.get(k))) if scored else 0.0
    return out


def log_columns(results: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """:func:`log_fields` of each row, as one list per key (OpenRLHF's ``extra_logs`` shape: ``{key: [float] * n}``).

    >>> log_columns([{"s_ver": 1.0}, {"s_ver": 0.0}])["s_ver"]
    [1.0, 0.0]
    """
    rows = [log_fields(r) for r in results]
    return {k: [r[k] for r in rows] for k in LOG_KEYS}
