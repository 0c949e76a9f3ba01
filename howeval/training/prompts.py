"""GRPO prompt rows: the deterministic hash split, TRL prompt rows from benchmark samples, the curriculum order.

:func:`train_split` (a deterministic hash split of sample ids), :func:`build_rows` (TRL prompt rows from
``howeval.benchmarks.loaders`` samples, the same loader and question text as the sweep), :func:`difficulty`
and :func:`curriculum_rows` (CPR-Curriculum ordering), :func:`images_dataset` (the multimodal dataset).

Worked row flow::

    sample {sample_id, question, options, answer, answer_type, reference_steps, ...}
      -> row {prompt: [system?, user: question_text(sample)], answer, answer_type, options,
              reference_steps, sample_id, difficulty}
      -> TRL GRPOTrainer: completions + the row's columns -> howeval.training.rewards.GRPOReward -> list[float]
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from howeval.engines.prompts import question_text
from howeval.rewards.pipeline import KINDS, STEP_KINDS


def split_score(sample_id: str, seed: int = 0) -> float:
    """u in [0, 1) from sha256 of ``f"{seed}:{sample_id}"`` (first 8 bytes): the split and phase-1 order key.

    >>> split_score("demo:a") == split_score("demo:a")
    True
    """
    digest = hashlib.sha256(f"{seed}:{sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def train_split(samples: Sequence[dict], fraction: float = 0.8, seed: int = 0,
                side: Literal["train", "heldout", "all"] = "train") -> list[dict]:
    """Samples on one side of the deterministic hash split (train: split_score(id) < fraction).

    The same id always lands on the same side, whatever the file order or the other samples.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction!r} must lie in (0, 1]")
    if side == "all":
        return list(samples)
    if side not in ("train", "heldout"):
        raise ValueError(f"side={side!r} must be train, heldout or all")
    want = side == "train"
    return [s for s in samples if (split_score(s["sample_id"], seed) < fraction) == want]


def difficulty(sample: Mapping[str, Any]) -> tuple[int, int, str]:
    """Curriculum difficulty key (ascending = easier first).

    The number of reference steps (a longer reasoning chain is harder, CRYSTAL's notion of step-level
    difficulty), then the question's length, then the id (a total, deterministic order).
    """
    return (len(sample.get("reference_steps") or []), len(sample.get("question") or ""), str(sample.get("sample_id", "")))


def build_rows(samples: Sequence[dict], system_prompt: str | None = None, kind: str = "base",
               images: bool = False) -> list[dict]:
    """TRL prompt rows (conversational) from benchmark samples; the prompt text is ``question_text``.

    Columns: ``prompt`` (chat messages), ``answer``, ``answer_type``, ``options`` (list, [] when none),
    ``reference_steps`` (list, [] when none), ``sample_id``, ``difficulty`` (the reference-step count);
    with ``images=True`` also ``images``: the sample's image bytes (PNG/JPEG), which
    :func:`images_dataset` turns into the PIL images TRL's multimodal GRPO path puts before the first
    user message (``trl.data_utils.prepare_multimodal_messages``).

    Raises:
        ValueError: ``kind="cpr"`` (or ``composite``) and a sample has no reference steps (CPR needs them; names the ids);
            ``images=True`` and a sample has no image (names the ids).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {list(KINDS)}")
    if kind in STEP_KINDS:
        missing = [s["sample_id"] for s in samples if not s.get("reference_steps")]
        if missing:
            raise ValueError(f"kind {kind!r} needs reference_steps; {len(missing)} sample(s) lack them: {missing[:5]}")
    if images:
        missing = [s["sample_id"] for s in samples if not s.get("images")]
        if missing:
            raise ValueError(f"images=True: {len(missing)} sample(s) have no image: {missing[:5]}")
    rows = []
    for s in samples:
        msgs = [{"role": "system", "content": system_prompt}] if system_prompt else []
        msgs.append({"role": "user", "content": question_text(s)})
        row = {
            "prompt": msgs, "answer": str(s["answer"]), "answer_type": s["answer_type"],
            "options": list(s.get("options") or []), "reference_steps": list(s.get("reference_steps") or []),
            "sample_id": s["sample_id"], "difficulty": difficulty(s)[0],
        }
        if images:
            row["images"] = [bytes(b) for b in s["images"]]
        rows.append(row)
    return rows


def images_dataset(rows: Sequence[dict]):
    """A ``datasets.Dataset`` of prompt rows; an ``images`` column of bytes becomes a list of ``Image``
    features, so TRL's trainer reads PIL images (its multimodal GRPO dataset format: ``prompt`` +
    ``images``)."""
    from datasets import Dataset, Image, List

    if not rows or "images" not in rows[0]:
        return Dataset.from_list(list(rows))
    enc = [{**r, "images": [{"bytes": b, "path": None} for b in r["images"]]} for r in rows]
    ds = Dataset.from_list(enc)
    return ds.cast_column("images", List(Image()))


def curriculum_rows(rows: Sequence[dict], switch_step: int, prompts_per_step: int, seed: int = 0) -> list[dict]:
    """Rows in CPR-Curriculum order, for a trainer that reads them in order (``shuffle_dataset=False``).

    Phase 1 (steps ``0..switch_step-1``): ``switch_step * prompts_per_step`` prompts in hash order
    (cycling through the rows if there are fewer). Phase 2: every row once, by ascending
    :func:`difficulty`. The reward kind itself switches on the trainer's global step (:class:`GRPOReward`).
    """
    if switch_step < 1 or prompts_per_step < 1:
        raise ValueError(f"switch_step={switch_step} and prompts_per_step={prompts_per_step} must be >= 1")
    if not rows:
        raise ValueError("no rows to order")
    shuffled = sorted(rows, key=lambda r: split_score(r["sample_id"], seed + 1))
    n1 = switch_step * prompts_per_step
    phase1 = [shuffled[i % len(shuffled)] for i in range(n1)]
    phase2 = sorted(rows, key=difficulty)
    return phase1 + phase2
