"""Whether a GRPO run starts fresh or continues: the decision, from what the run's storage folder holds.

A training job on a cluster is re-submitted with the *same* command after a failure (KubeRay: delete and
re-apply the RayJob), so the default is automatic: a run folder that holds a registered checkpoint is
continued from it, an absent or checkpoint-less one is started. ``--resume`` / ``--no-resume`` force one
side and refuse the other (``howeval.ray_jobs.train_grpo``; docs/training.md, "Checkpoints and resume").

Pure: the caller reads the storage (``howeval.ray_jobs.train_grpo``) and passes what it found.
"""
from __future__ import annotations

import json
from typing import Literal

ResumeMode = Literal["auto", "resume", "fresh"]
"""auto = continue when a checkpoint exists, else start; resume = must continue; fresh = must start."""


def checkpoint_steps(snapshot_text: str | None) -> list[int]:
    """Steps of the checkpoints Ray Train has registered for a run, from the text of its
    ``checkpoint_manager_snapshot.json`` (``checkpoint_results[].checkpoint_dir_name`` =
    ``checkpoint_<step>``, as ``howeval.ray_jobs.train_grpo`` names them), sorted. ``None`` (no snapshot) or text that
    is not JSON yet (being rewritten) gives ``[]``.

    >>> checkpoint_steps('{"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_0000003"},'
    ...                  ' {"checkpoint_dir_name": "checkpoint_0000002"}]}')
    [2, 3]
    >>> checkpoint_steps(None)
    []
    """
    if not snapshot_text:
        return []
    try:
        snap = json.loads(snapshot_text)
    except json.JSONDecodeError:
        return []
    names = [c.get("checkpoint_dir_name", "") for c in snap.get("checkpoint_results", []) or []]
    return sorted(int(n.rsplit("_", 1)[1]) for n in names if n.rsplit("_", 1)[-1].isdigit())


def resume_mode(flag: bool | None) -> ResumeMode:
    """The mode of the command line's ``--resume`` (True) / ``--no-resume`` (False) / neither (None).

    >>> [resume_mode(f) for f in (None, True, False)]
    ['auto', 'resume', 'fresh']
    """
    return "auto" if flag is None else ("resume" if flag else "fresh")


def decide_resume(mode: ResumeMode, run: str, folder_exists: bool, steps: list[int]) -> int | None:
    """The step the run continues from, or None to start from step 0.

    Args:
        mode: see :data:`ResumeMode`.
        run: ``<storage>/<name>``, for the messages.
        folder_exists: the run folder exists and is not empty.
        steps: registered checkpoint steps (:func:`checkpoint_steps`).

    Raises:
        FileExistsError: ``fresh`` and the run folder is not empty (Ray Train would restore it anyway).
        FileNotFoundError: ``resume`` and there is no registered checkpoint to continue from.
    """
    if mode == "fresh" and folder_exists:
        have = f"checkpoints of steps {steps}" if steps else "no checkpoint, but Ray Train state"
        raise FileExistsError(f"--no-resume: run {run} exists ({have}). Fix: drop --no-resume to continue it, remove "
                              "the folder, or pick another storage.name / --storage-path")
    if mode == "resume" and not steps:
        raise FileNotFoundError(f"--resume: run {run} has no checkpoint to continue from"
                                f"{'' if folder_exists else ' (no such run folder)'}. Fix: drop --resume "
                                "(without it a run with no checkpoint starts from step 0), or check "
                                "--storage-path / storage.name")
    return steps[-1] if steps and mode != "fresh" else None
