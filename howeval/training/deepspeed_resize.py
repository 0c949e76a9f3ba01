"""Continue a DeepSpeed ZeRO-1/2 run at another data-parallel world size: the universal checkpoint.

A ZeRO-2 checkpoint holds the optimizer state partitioned over the ranks that saved it (one
``*zero_pp_rank_<r>_mp_rank_00_optim_states.pt`` per data-parallel rank). DeepSpeed 0.19.8 refuses to load it
at another world size (``engine._load_zero_checkpoint``: "Automatic adjustment of ZeRO's optimizer state
partitioning with a new world size is not currently supported"), which is what an elastic resize is. Its
answer is the *universal checkpoint*: ``deepspeed.checkpoint.ds_to_universal`` merges the shards into one
file per parameter (fp32 weights, Adam's ``exp_avg`` / ``exp_avg_sq``) and writes ``latest_universal``;
an engine whose config has ``checkpoint: {load_universal: true}`` loads it at any world size, re-partitioning
the optimizer state (``engine.load_checkpoint``, ``stage_1_and_2.load_universal_checkpoint``).

:func:`prepare_resume` does that to a restored checkpoint folder when the world size changed: the optimizer
state is carried over (not a weights-only restart), and the returned note says so for the log. Same world
size or no DeepSpeed files: nothing changes. ZeRO-3 checkpoints are left to DeepSpeed (its own conversion
path differs and is not exercised here).

No Ray: the training worker (``howeval.ray_jobs.train_grpo``) calls it on its local copy of the checkpoint.
"""
from __future__ import annotations

import argparse
import copy
import glob
import os
from collections.abc import Mapping
from typing import Any


def deepspeed_tag(ckpt_dir: str) -> str | None:
    """The DeepSpeed tag (``global_step<N>``) of a TRL checkpoint folder: the content of its ``latest`` file,
    or None when the folder holds no DeepSpeed checkpoint."""
    latest = os.path.join(ckpt_dir, "latest")
    if not os.path.isfile(latest):
        return None
    with open(latest, encoding="utf-8") as f:
        return f.read().strip() or None


def saved_dp_world_size(ckpt_dir: str) -> int | None:
    """Data-parallel world size a DeepSpeed ZeRO checkpoint was saved at: the number of ZeRO optimizer shard
    files (``*zero_pp_rank_<r>_mp_rank_00_optim_states.pt``) under its tag; None when there is no DeepSpeed
    checkpoint or no shard (optimizer not ZeRO-partitioned)."""
    tag = deepspeed_tag(ckpt_dir)
    if tag is None:
        return None
    shards = glob.glob(os.path.join(ckpt_dir, tag, "*zero_pp_rank_*_mp_rank_00_optim_states.pt"))
    return len(shards) or None


def zero_stage(ds_config: Mapping[str, Any]) -> int:
    """``zero_optimization.stage`` of a DeepSpeed config dict (0 when absent; "auto" counts as 0)."""
    stage = (ds_config.get("zero_optimization") or {}).get("stage", 0)
    return stage if isinstance(stage, int) else 0


def to_universal(ckpt_dir: str, tag: str) -> str:
    """Convert ``<ckpt_dir>/<tag>`` with DeepSpeed's ``ds_to_universal`` into ``<ckpt_dir>/<tag>_universal``
    and point ``<ckpt_dir>/latest_universal`` at it; returns the new tag. One process (no worker pool);
    ``inject_missing_state``: a transformers model's checkpoint has no ``universal_checkpoint_info``.

    Raises:
        ImportError: deepspeed is not installed (the ``gpu`` extra).
    """
    from deepspeed.checkpoint import ds_to_universal

    out_tag = f"{tag}_universal"
    args = argparse.Namespace(input_folder=os.path.join(ckpt_dir, tag), output_folder=os.path.join(ckpt_dir, out_tag),
                              num_extract_workers=1, num_merge_workers=1, keep_temp_folder=False, strict=True,
                              inject_missing_state=True)
    ds_to_universal.main(args)
    return out_tag


def prepare_resume(ckpt_dir: str, world_size: int, ds_config: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str | None]:
    """Make a restored DeepSpeed checkpoint loadable at ``world_size``.

    Returns ``(ds_config, note)``: the config to build the trainer with (a copy with
    ``checkpoint.load_universal = true`` when the checkpoint was converted, else ``ds_config`` itself) and one
    line for the log (None when nothing was needed: same world size, no DeepSpeed checkpoint or config).

    Raises:
        ValueError: the checkpoint is ZeRO-3 at another world size (not handled here).
    """
    if not ds_config:
        return ds_config, None
    saved = saved_dp_world_size(ckpt_dir)
    if saved is None or saved == world_size:
        return ds_config, None
    tag = deepspeed_tag(ckpt_dir)
    if zero_stage(ds_config) >= 3:
        raise ValueError(f"DeepSpeed ZeRO-3 checkpoint {ckpt_dir}/{tag} was saved by {saved} ranks, resuming with "
                         f"{world_size}: only ZeRO-1/2 resizes are converted here. Fix: keep the worker count "
                         "(scaling.min_workers = max_workers) or use configs/deepspeed/zero2.json")
    new_tag = to_universal(ckpt_dir, tag)
    out = copy.deepcopy(dict(ds_config))
    out["checkpoint"] = {**(out.get("checkpoint") or {}), "load_universal": True}
    note = (f"DeepSpeed checkpoint {tag} was saved by {saved} data-parallel ranks, resuming with {world_size}: "
            f"converted to a universal checkpoint ({new_tag}, ds_to_universal) and loaded with "
            "load_universal: weights and ZeRO optimizer state re-partitioned, not a fresh optimizer")
    return out, note
