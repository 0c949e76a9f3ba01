"""GRPO training job: TRL's GRPOTrainer inside Ray Train's TorchTrainer, checkpointed to a storage path.

    python -m howeval.ray_jobs.train_grpo --config configs/train/patternrl.yaml [--storage-path URI] [--max-steps N]
        [--data MANIFEST] [--max-workers N] [--resume | --no-resume] [key.path=value ...] [--set key.path=value]

All Ray Train wiring lives here (STYLE rule 6): ``ScalingConfig`` from ``scaling:`` (elastic
``num_workers=(min, max)`` when given), ``RunConfig(storage_path, name)``, ``CheckpointConfig``, and a TRL
callback that hands each TRL checkpoint to ``ray.train.report``. Resume: Ray Train 2.60 restores a run's
checkpoint manager from ``<storage_path>/<name>`` when the same run is started again; the worker then
gets the latest checkpoint from ``ray.train.get_checkpoint()`` and passes its TRL folder to
``trainer.train(resume_from_checkpoint=...)`` (weights, optimizer, scheduler, RNG, global step).
Resume is automatic (``howeval.training.resume``): the same command run again continues from the run's
latest registered checkpoint, or starts from step 0 when there is none, so a re-submitted RayJob needs no flag
changed. ``--resume`` insists on a checkpoint (error without one), ``--no-resume`` on a fresh run (error when
the run folder exists).

Any config value can be overridden on the command line as in ``howeval.ray_jobs.sweep`` (dot-list, values read as
YAML, validated with the file): ``data.path=/data/train/manifest.jsonl grpo.report_to=tensorboard
scaling.max_workers=7``; ``--data`` and ``--max-workers`` are short forms the KubeRay overlays fill from
their ``hardware.yaml``.

Rewards: ``reward.source: server`` scores through ``howeval.rewards.client.RewardClient`` (URL from the env
var ``reward.url_env``, token from ``reward.token_env``; both forwarded to the workers), ``inprocess``
with ``howeval.training.rewards.InProcessScorer`` (the same ``howeval.rewards.functions`` functions as the server).

Per-step metrics (printed as one JSON line per log step by rank 0, kept in every checkpoint's
``trainer_state.json`` and written to ``<run>/metrics.jsonl`` at the end): TRL's ``reward``,
``rewards/<kind>/mean``, ``kl`` (beta > 0), ``completions/mean_length``, and ours under
``reward_parts/``: ``accuracy``, ``trigger``, ``pattern/<label>``, ``s_pat``, ``z``, ``step_f1``,
``degraded``, ``phase``. With ``pcgrad: true`` (``howeval.training.pcgrad``) TRL logs one
``rewards/<kind>_<component>/mean`` per component and the step line carries ``pcgrad/conflicts``,
``pcgrad/cos_before`` and ``pcgrad/cos_after``.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from howeval.config import ConfigError, with_changes
from howeval.ray_jobs.common import add_override_args
from howeval.training.config import TrainConfig, load_train_config

log = logging.getLogger("howeval.train_grpo")



# -------------------------------------------------------------------------------------------- worker


def _make_callback():
    from transformers import TrainerCallback

    class RayTrainCheckpointCallback(TrainerCallback):
        """Reports each TRL checkpoint (``checkpoint-<step>``) to Ray Train with the latest metrics.

        Every worker reports its own folder (RNG state files are per process; DeepSpeed shards too); Ray
        Train merges them into one checkpoint in storage. Rank 0 prints each log line as JSON.
        """

        def __init__(self, rank: int, world_size: int, resumed_from: int | None, saved_world_size: int | None = None):
            self.rank, self.world_size, self.resumed_from, self.latest = rank, world_size, resumed_from, {}
            self.saved_world_size = saved_world_size  # DeepSpeed ranks that saved the checkpoint resumed from

        def on_log(self, args, state, control, logs=None, **kw):
            if logs:
                self.latest.update(logs)
                if self.rank == 0:
                    line = {"step": state.global_step, "world_size": self.world_size, **logs}
                    print("[train_grpo] " + json.dumps(line, default=float), flush=True)

        def on_save(self, args, state, control, **kw):
            import ray.train

            src = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            if not os.path.isdir(src):
                raise FileNotFoundError(f"TRL saved no checkpoint folder at {src}")
            metrics = {k: v for k, v in self.latest.items() if isinstance(v, (int, float))}
            metrics.update(step=state.global_step, world_size=self.world_size,
                           resumed_from_step=-1 if self.resumed_from is None else self.resumed_from,
                           resumed_from_world_size=-1 if self.saved_world_size is None else self.saved_world_size)
            # the TRL folder is the Ray checkpoint (no extra local copy: these are GBs for real policies)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(src),
                             checkpoint_dir_name=f"checkpoint_{state.global_step:07d}")
            shutil.rmtree(src, ignore_errors=True)  # persisted to storage by report(): keep no local copy

    return RayTrainCheckpointCallback


def _scorer(cfg: TrainConfig, url: str | None):
    if cfg.reward.source == "inprocess":
        from howeval.training.rewards import InProcessScorer

        return InProcessScorer(cfg.reward)
    from howeval.rewards.client import RewardClient

    if not url:
        raise ValueError(f"reward.source=server but no URL: set ${cfg.reward.url_env} or reward.url")
    return RewardClient(url, token_env=cfg.reward.token_env, timeout_s=cfg.reward.timeout_s,
                        max_retries=cfg.reward.max_retries).score


def scratch_dir(run_name: str, rank: int, parent: str | None = None) -> str:
    """A new local folder for one worker's TRL output: ``<tmp>/howeval-grpo-<run_name>/rank<r>-pid<pid>``.

    First removes the run's folders whose process is gone (``os.kill(pid, 0)`` fails): what a killed worker
    left (GBs per checkpoint for a real policy). Folders of live processes are kept. ``parent`` defaults to
    ``tempfile.gettempdir()`` (``$TMPDIR``).
    """
    root = Path(parent or tempfile.gettempdir()) / f"howeval-grpo-{run_name}"
    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob("rank*-pid*"):
        try:
            os.kill(int(old.name.rsplit("-pid", 1)[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except (ValueError, PermissionError):  # not ours to judge: keep it
            continue
    out = root / f"rank{rank}-pid{os.getpid()}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    return str(out)


def train_loop_per_worker(loop_config: dict) -> None:
    """One Ray Train worker: build the dataset and GRPOTrainer, resume from Ray's checkpoint, train."""
    import ray.train
    from trl import GRPOTrainer

    from howeval.training.prompts import curriculum_rows, images_dataset
    from howeval.training.rewards import GRPOReward

    cfg: TrainConfig = loop_config["cfg"]
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    rows = loop_config["rows"]
    if cfg.curriculum is not None:
        rows = curriculum_rows(rows, cfg.curriculum.switch_step, cfg.prompts_per_step(world), cfg.data.split_seed)
    dataset = images_dataset(rows)  # prompt + images (PIL) for a VLM policy: TRL's multimodal GRPO path

    out_dir = scratch_dir(cfg.run_name, rank)
    # TRL's local folders (a full model + optimizer per checkpoint, GBs for real policies) are removed at
    # the end: Ray Train has persisted every reported checkpoint to storage by then. A worker killed before
    # that (a lost node, a preemption) leaves its folder; the next worker of the run on that node removes it.
    try:
        args = cfg.grpo_args(out_dir)  # built again here: this worker's world size and device
        rollout_log = None
        if cfg.reward.rollout_log_dir:
            rollout_log = os.path.join(cfg.reward.rollout_log_dir, f"rollouts.rank{rank}.jsonl")
        reward = GRPOReward(_scorer(cfg, loop_config.get("url")), cfg.reward.kind, cfg.curriculum, rollout_log)

        resume_dir, resumed_from, saved_world = None, None, None
        ckpt = ray.train.get_checkpoint()
        if ckpt is not None:
            local = ckpt.to_directory(os.path.join(out_dir, "_restored"))
            resume_dir = local  # a Ray checkpoint is one TRL checkpoint-<step> folder
            with open(os.path.join(resume_dir, "trainer_state.json"), encoding="utf-8") as f:
                resumed_from = int(json.load(f)["global_step"])
            if rank == 0:
                print(f"[train_grpo] resuming from {ckpt.path} (global step {resumed_from})", flush=True)
            # an elastic resize with DeepSpeed ZeRO: the checkpoint's optimizer shards are per saving rank
            from howeval.training.deepspeed_resize import prepare_resume, saved_dp_world_size

            saved_world = saved_dp_world_size(resume_dir)
            ds_cfg, note = prepare_resume(resume_dir, world, cfg.grpo.get("deepspeed"))
            if note:
                cfg = with_changes(cfg, "resize", grpo={**cfg.grpo, "deepspeed": ds_cfg})
                args = cfg.grpo_args(out_dir)
                if rank == 0:
                    print(f"[train_grpo] {note}", flush=True)
        if rank == 0:  # one machine-readable line per worker-group start (howeval.ray_jobs.train_elastic reads it)
            print("[train_grpo] start " + json.dumps({"world_size": world, "resumed_from": resumed_from,
                                                       "time": time.time()}), flush=True)

        if resumed_from is not None and 0 < args.max_steps <= resumed_from:
            # a group (re)started after the last step's checkpoint, e.g. an elastic resize at the very end:
            # TRL would run one step past max_steps from there, so there is nothing left to train
            if rank == 0:
                print(f"[train_grpo] checkpoint at step {resumed_from} >= max_steps {args.max_steps}: done", flush=True)
            return
        trainer_cls, reward_funcs = GRPOTrainer, [reward]
        if cfg.pcgrad:  # one reward function per component, PCGrad over their policy gradients
            from howeval.training.pcgrad import pcgrad_trainer_class
            from howeval.training.rewards import ComponentRewards

            trainer_cls, reward_funcs = pcgrad_trainer_class(), ComponentRewards(reward).functions
        trainer = trainer_cls(model=loop_config["model"], reward_funcs=reward_funcs, args=args, train_dataset=dataset,
                              callbacks=[_make_callback()(rank, world, resumed_from, saved_world)])
        trainer.train(resume_from_checkpoint=resume_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


# -------------------------------------------------------------------------------------------- driver


def run_state(storage_path: str, name: str) -> tuple[bool, list[int]]:
    """``(run folder exists and is not empty, registered checkpoint steps)`` of ``<storage_path>/<name>``
    (local or fsspec URL): the steps from Ray Train's ``checkpoint_manager_snapshot.json``
    (:func:`howeval.training.resume.checkpoint_steps`)."""
    from howeval.store import fs_and_path
    from howeval.training.resume import checkpoint_steps

    fs, path = fs_and_path(storage_path.rstrip("/") + "/" + name)
    if not (fs.exists(path) and fs.ls(path)):
        return False, []
    snap = path.rstrip("/") + "/checkpoint_manager_snapshot.json"
    text = fs.cat_file(snap).decode("utf-8") if fs.exists(snap) else None
    return True, checkpoint_steps(text)


def _abs_storage(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def build_rows_for(cfg: TrainConfig) -> list[dict]:
    """Training prompt rows: the benchmark loader, the hash split, ``build_rows``, ``limit``."""
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.training.prompts import build_rows, train_split

    p = cfg.data.path
    if "://" not in p and not os.path.exists(p):
        raise FileNotFoundError(f"data.path: training manifest {p!r} does not exist. Fix: put your manifest there (on "
                                "a cluster: the howeval-data PVC, mounted at /data), or point --data / data.path at "
                                "it (KubeRay overlays: train.data in hardware.yaml)")
    res = load_benchmark(p, skip_bad_rows=cfg.data.skip_bad_rows)
    samples = train_split(res.samples, cfg.data.train_fraction, cfg.data.split_seed, cfg.data.split)
    if cfg.reward.kind in ("cpr", "composite"):
        samples = [s for s in samples if s.get("reference_steps")] or samples  # build_rows names any left without
    if cfg.data.limit is not None:
        samples = samples[: cfg.data.limit]
    if not samples:
        raise ValueError(f"no training prompts: {cfg.data.path} split={cfg.data.split} fraction={cfg.data.train_fraction}")
    return build_rows(samples, cfg.data.system_prompt, cfg.reward.kind, images=cfg.data.images)


def tensorboard_env(cfg: TrainConfig, storage: str) -> dict[str, str]:
    """Worker env for TensorBoard (``grpo.report_to`` names ``tensorboard``): ``TENSORBOARD_LOGGING_DIR``, which
    transformers' TensorBoard callback (rank 0) writes its event files to. ``$TENSORBOARD_LOGGING_DIR`` of the
    driver if set, else ``<storage>/<run>/tensorboard``: not the workers' scratch folders, which are removed.
    {} when TensorBoard is off.

    Raises:
        ValueError: TensorBoard is on, storage is a URL and ``$TENSORBOARD_LOGGING_DIR`` is unset (the
            writer needs a folder every rank-0 node can reach).
    """
    if "tensorboard" not in cfg.report_to:
        return {}
    if os.environ.get("TENSORBOARD_LOGGING_DIR"):
        return {"TENSORBOARD_LOGGING_DIR": os.environ["TENSORBOARD_LOGGING_DIR"]}
    if "://" in storage:
        raise ValueError(f"grpo.report_to=tensorboard with storage {storage}: set $TENSORBOARD_LOGGING_DIR to a "
                         "folder the workers share (the event files are written locally)")
    return {"TENSORBOARD_LOGGING_DIR": os.path.join(storage, cfg.run_name, "tensorboard")}


def run(cfg: TrainConfig, storage_path: str | None = None, max_steps: int | None = None, resume: bool | None = None):
    """Start the run, or continue it from its latest checkpoint; returns Ray Train's ``Result``.

    ``resume``: None = automatic (continue when ``<storage>/<run>`` holds a registered checkpoint, else start
    from step 0: the same command re-submitted after a failure goes on); True = must continue; False = must
    start fresh (:func:`howeval.training.resume.decide_resume`).

    Raises:
        FileExistsError: ``resume`` is False and the run folder exists.
        FileNotFoundError: ``resume`` is True and there is no checkpoint to continue from.
    """
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from howeval.runtime.cluster import init_ray
    from howeval.training.resume import decide_resume, resume_mode

    if max_steps is not None:
        cfg = with_changes(cfg, "--max-steps", grpo={**cfg.grpo, "max_steps": max_steps})
    ds = cfg.grpo.get("deepspeed")
    if isinstance(ds, str):  # read here: workers may not share the driver's working folder
        if not os.path.exists(ds):
            raise FileNotFoundError(f"grpo.deepspeed={ds!r}: no such file (paths are relative to the current folder)")
        with open(ds, encoding="utf-8") as f:
            cfg = with_changes(cfg, f"grpo.deepspeed={ds}", grpo={**cfg.grpo, "deepspeed": json.load(f)})
    storage = _abs_storage(storage_path or cfg.storage.path)
    exists, steps = run_state(storage, cfg.run_name)
    start = decide_resume(resume_mode(resume), f"{storage}/{cfg.run_name}", exists, steps)
    if start is None:
        print(f"[train_grpo] run {storage}/{cfg.run_name}: no checkpoint, starting from step 0", flush=True)
    else:
        print(f"[train_grpo] run {storage}/{cfg.run_name}: continuing from its checkpoint of step {start}", flush=True)

    from howeval.config.engines import HFOptions
    from howeval.engines.hf import resolve_model_path

    model = resolve_model_path(cfg.model, HFOptions())  # an embedded model is made once here, not raced by workers
    url = None
    env_vars = {"TOKENIZERS_PARALLELISM": "false"}
    if cfg.reward.source == "server":
        url = os.environ.get(cfg.reward.url_env) or cfg.reward.url
        if not url:
            raise ValueError(f"reward.source=server: set ${cfg.reward.url_env} (or reward.url)")
        if os.environ.get(cfg.reward.token_env):
            env_vars[cfg.reward.token_env] = os.environ[cfg.reward.token_env]
    env_vars |= tensorboard_env(cfg, storage)
    rows = build_rows_for(cfg)
    log.info("%d training prompts from %s (%s split)", len(rows), cfg.data.path, cfg.data.split)

    init_ray(cfg.ray)
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"cfg": cfg, "rows": rows, "model": model, "url": url},
        scaling_config=ScalingConfig(**cfg.scaling.ray_kwargs()),
        run_config=RunConfig(
            name=cfg.run_name, storage_path=storage,
            checkpoint_config=CheckpointConfig(num_to_keep=cfg.storage.num_to_keep),
            failure_config=FailureConfig(**cfg.scaling.failure_kwargs()),
            worker_runtime_env={"env_vars": env_vars},
        ),
    )
    result = trainer.fit()
    _write_metrics(result, storage, cfg.run_name)
    return result


def _write_metrics(result, storage: str, name: str) -> None:
    """``<run>/metrics.jsonl``: the per-step log history of the final checkpoint's trainer state."""
    if result.checkpoint is None:
        return
    from howeval.store import fs_and_path

    with result.checkpoint.as_directory() as d:
        with open(os.path.join(d, "trainer_state.json"), encoding="utf-8") as f:
            history = json.load(f).get("log_history", [])
    fs, path = fs_and_path(storage.rstrip("/") + "/" + name + "/metrics.jsonl")
    with fs.open(path, "w") as f:
        for entry in history:
            f.write(json.dumps(entry, default=float) + "\n")


def cli_overrides(model: str | None, accelerator_type: str | None) -> dict[str, Any] | None:
    """Config overrides from the command line: ``model`` replaces ``model``; ``accelerator_type`` replaces
    ``scaling.accelerator_type`` (``"any"`` -> None, no constraint). None when neither is given.

    >>> cli_overrides(None, "any")
    {'scaling': {'accelerator_type': None}}
    >>> cli_overrides("embedded:tiny-lm", "H100")
    {'model': 'embedded:tiny-lm', 'scaling': {'accelerator_type': 'H100'}}
    """
    out: dict[str, Any] = {}
    if model:
        out["model"] = model
    if accelerator_type:
        out["scaling"] = {"accelerator_type": None if accelerator_type == "any" else accelerator_type}
    return out or None


def flag_dotlist(data: str | None, max_workers: int | None) -> list[str]:
    """The dot-list items the short flags stand for: ``--data`` -> ``data.path=...``, ``--max-workers`` ->
    ``scaling.max_workers=N`` (elastic configs) applied after the positional ones.

    >>> flag_dotlist("/data/train.jsonl", 7)
    ['data.path=/data/train.jsonl', 'scaling.max_workers=7']
    """
    out = []
    if data:
        out.append(f"data.path={data}")
    if max_workers is not None:
        out.append(f"scaling.max_workers={max_workers}")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.train_grpo", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="configs/train/<recipe>.yaml")
    p.add_argument("--storage-path", help="override storage.path (local folder or fsspec URL)")
    p.add_argument("--max-steps", type=int, help="override grpo.max_steps")
    p.add_argument("--model", help="override model: a transformers folder, or embedded:tiny-lm / embedded:tiny-vlm")
    p.add_argument("--data", help="override data.path: the training manifest (JSONL/Parquet, local path relative to "
                   "the current folder, or fsspec URL)")
    p.add_argument("--max-workers", type=int, help="override scaling.max_workers (elastic upper bound); the KubeRay "
                   "overlays pass the GPUs left for training")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=None,
                   help="default: continue from the run's latest checkpoint if it has one, else start from step 0. "
                        "--resume: fail unless there is a checkpoint; --no-resume: fail if the run folder exists")
    p.add_argument("--accelerator-type", help="override scaling.accelerator_type (Ray's name: H200, H100, A100-80G, ...); "
                   "'any' = no constraint. The KubeRay overlays pass their hardware.yaml value here")
    add_override_args(p, "data.path=/data/x.jsonl grpo.report_to=none")
    a = p.parse_intermixed_args(argv)
    a.dotlist = [*a.overrides, *a.set_items, *flag_dotlist(a.data, a.max_workers)]
    return a


def config_from_args(a: argparse.Namespace) -> TrainConfig:
    """The training config of a parsed command line: the file, ``--model`` / ``--accelerator-type``
    (:func:`cli_overrides`), then the dot-list (positional, ``--set``, ``--data``, ``--max-workers``), all
    validated together (a misspelt key is named with the closest accepted one).

    Raises:
        ConfigError: a bad override or value.
    """
    return load_train_config(a.config, overrides=cli_overrides(a.model, a.accelerator_type), dotlist=a.dotlist)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        cfg = config_from_args(a)
    except (ConfigError, FileNotFoundError, ValueError) as e:  # bad input: one line, before Ray starts
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = run(cfg, a.storage_path, a.max_steps, a.resume)
    ck = result.checkpoint
    print(json.dumps({"run": cfg.run_name, "checkpoint": ck.path if ck else None,
                      "step": (result.metrics or {}).get("step")}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
