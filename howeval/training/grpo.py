"""GRPO training core: the training config, prompt rows from benchmark samples, the curriculum, rewards.

Pure of Ray (``ray_jobs/train_grpo.py`` holds all Ray Train wiring, STYLE rule 6). What lives here:

- :class:`TrainConfig`: one pydantic model per job (STYLE rule 1). GRPO hyperparameters are TRL's own
  ``GRPOConfig`` fields given under ``grpo:`` and passed through unchanged (checked by name against the
  installed TRL, never redefined).
- :func:`train_split` (a deterministic hash split of sample ids), :func:`build_rows` (TRL prompt rows
  from ``howeval.benchmarks.loaders`` samples, the same loader and question text as the sweep),
  :func:`difficulty` and :func:`curriculum_rows` (CPR-Curriculum ordering).
- :func:`score_items`: the in-process scorer: ``howeval.rewards.pipeline.score_batch``, the pipeline the
  reward server's ingress runs too, returning the server's result dicts.
- :class:`GRPOReward`: the TRL reward callable over either scorer (HTTP client or in-process); it picks the
  reward kind by the trainer's global step (curriculum), logs the reward parts through TRL's
  ``log_metric`` and can append every scored rollout to a JSONL file.

Worked row flow::

    sample {sample_id, question, options, answer, answer_type, reference_steps, ...}
      -> row {prompt: [system?, user: question_text(sample)], answer, answer_type, options,
              reference_steps, sample_id, difficulty}
      -> TRL GRPOTrainer: completions + the row's columns -> GRPOReward -> list[float]
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from howeval.config import RayConfig, StrictModel, load_yaml_config, resolve_path
from howeval.engines.prompts import question_text
from howeval.records import LABELS
from howeval.rewards.pipeline import KINDS, rollout_items
from howeval.config.rewards import CPRConfig, PatternConfig, PatternRMConfig

MANAGED_GRPO_KEYS = {
    "output_dir": "a worker-local folder; checkpoints go to storage.path through Ray Train",
    "use_cpu": "set from scaling.use_gpu",
    "resume_from_checkpoint": "use --resume (Ray Train gives the latest checkpoint back)",
    "report_to": "metrics are reported to Ray Train and printed per step",
}
"""``GRPOConfig`` fields the job sets itself; giving them under ``grpo:`` is an error."""


class DataSpec(StrictModel):
    """Where the prompts come from: a benchmark manifest read by ``howeval.benchmarks.loaders.load_benchmark``."""

    path: str = Field("../../datasets/demo/manifest.jsonl", description="Manifest (JSONL/Parquet, local or fsspec URL); a relative path resolves against the config file's folder.")
    split: Literal["train", "heldout", "all"] = Field("train", description="Which side of the hash split to train on (heldout = the rest, for evaluation).")
    train_fraction: float = Field(0.8, gt=0, le=1, description="Share of sample ids in the train split (sha256 of split_seed:sample_id < fraction).")
    split_seed: int = Field(0, description="Seed of the hash split; change it to draw another split.")
    limit: int | None = Field(None, ge=1, description="Keep at most this many training prompts (after the split).")
    system_prompt: str | None = Field(None, description="System message before each question; None = none.")
    images: bool = Field(False, description="Give each prompt its images (pixels) for a VLM policy: an `images` column "
                         "for TRL's multimodal GRPO path (the processor's chat template puts them before the question). "
                         "Needs a model with a processor (e.g. embedded:tiny-vlm, Qwen3-VL).")
    skip_bad_rows: bool = Field(False, description="Skip unusable manifest rows instead of stopping.")


class RewardSpec(StrictModel):
    """Which reward and where it is computed."""

    source: Literal["server", "inprocess"] = Field("server", description="server = the reward server over HTTP (howeval.rewards.client); inprocess = the same functions in each training worker.")
    kind: Literal["base", "pattern", "cpr"] = Field(..., description="base = verifier only (BaseRL); pattern = verifier x PatternRM with the Bernoulli gate (PatternRL); cpr = CRYSTAL CPR.")
    url_env: str = Field("REWARD_SERVER_URL", description="Env var holding the reward server's URL (server source).")
    url: str | None = Field(None, description="Fallback URL when url_env is unset (e.g. http://127.0.0.1:8000).")
    token_env: str = Field("HOWEVAL_REWARD_TOKEN", description="Env var with the server's bearer token; forwarded to the workers.")
    timeout_s: float = Field(60.0, gt=0, description="Per-attempt HTTP timeout.")
    max_retries: int = Field(3, ge=0, description="HTTP retries after the first attempt (then the step fails loudly).")
    pattern: PatternConfig = Field(default_factory=PatternConfig, description="Gate p, seed, s_pat mode (inprocess; a server uses its own args).")
    cpr: CPRConfig = Field(default_factory=CPRConfig, description="CPR weights and step matching (inprocess).")
    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig, description="PatternRM used in-process (default: the embedded trained PatternRM; rules = the rule judge).")
    rollout_log_dir: str | None = Field(None, description="Local folder: each worker appends every scored rollout (prompt, completion, kind, reward, parts, step) to rollouts.rank<k>.jsonl. Debug/tests.")


class CurriculumSpec(StrictModel):
    """CPR-Curriculum: phase 1 answer-only reward, phase 2 CPR on prompts of increasing difficulty."""

    switch_step: int = Field(..., ge=1, description="First global step of phase 2 (steps 0..switch_step-1 use phase1_kind).")
    phase1_kind: Literal["base"] = Field("base", description="Phase-1 reward (answer-only = the verifier).")


class ScalingSpec(StrictModel):
    """Ray Train ``ScalingConfig`` (elastic when min_workers/max_workers are given)."""

    num_workers: int = Field(1, ge=1, description="Training workers (one process each; one GPU each with use_gpu).")
    min_workers: int | None = Field(None, ge=1, description="Elastic lower bound; with max_workers Ray Train 2.60 gets num_workers=(min, max).")
    max_workers: int | None = Field(None, ge=1, description="Elastic upper bound.")
    use_gpu: bool = Field(False, description="One GPU per worker; False = CPU training (GRPOConfig use_cpu=True).")
    resources_per_worker: dict[str, float] | None = Field(None, description="Ray resources per worker, e.g. {CPU: 8, GPU: 1}.")
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = Field("PACK", description="Placement group strategy.")
    accelerator_type: str | None = Field(None, description="Ray accelerator type, e.g. H200.")
    max_failures: int = Field(0, ge=-1, description="Ray Train FailureConfig.max_failures: worker-group restarts from the latest checkpoint after a worker error (-1 = unlimited).")
    max_preemption_failures: int = Field(-1, ge=-1, description="Ray Train FailureConfig.max_preemption_failures: restarts after a node preemption (drained spot node), counted apart from max_failures (-1 = unlimited).")
    elastic_resize_monitor_interval_s: float = Field(60.0, ge=0, description="Elastic runs: how often (s) a healthy worker group checks whether more workers fit (grow back after capacity returns).")

    @model_validator(mode="after")
    def _elastic_bounds(self) -> "ScalingSpec":
        if (self.min_workers is None) != (self.max_workers is None):
            raise ValueError(f"scaling: give both min_workers and max_workers or neither (got min={self.min_workers}, max={self.max_workers})")
        if self.min_workers is not None and self.min_workers > self.max_workers:
            raise ValueError(f"scaling: min_workers={self.min_workers} must be <= max_workers={self.max_workers}")
        return self

    @property
    def elastic(self) -> bool:
        return self.min_workers is not None

    def ray_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``ray.train.ScalingConfig``."""
        kw: dict[str, Any] = {
            "num_workers": (self.min_workers, self.max_workers) if self.elastic else self.num_workers,
            "use_gpu": self.use_gpu, "placement_strategy": self.placement_strategy,
        }
        if self.resources_per_worker is not None:
            kw["resources_per_worker"] = dict(self.resources_per_worker)
        if self.accelerator_type is not None:
            kw["accelerator_type"] = self.accelerator_type
        if self.elastic:
            kw["elastic_resize_monitor_interval_s"] = self.elastic_resize_monitor_interval_s
        return kw

    def failure_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``ray.train.FailureConfig`` (Ray Train 2.60)."""
        return {"max_failures": self.max_failures, "max_preemption_failures": self.max_preemption_failures}


class StorageSpec(StrictModel):
    """Ray Train ``RunConfig(storage_path, name)`` and ``CheckpointConfig``."""

    path: str = Field("runs/train", description="Local folder or fsspec URL (s3://, gs://, ...); a relative local path resolves against the current directory.")
    name: str | None = Field(None, description="Run name (the folder under path); None = the config's name.")
    num_to_keep: int | None = Field(2, ge=1, description="Checkpoints kept in storage (latest ones).")


class TrainConfig(StrictModel):
    """One GRPO run (``python -m ray_jobs.train_grpo --config configs/train/<recipe>.yaml``)."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.\-]+$", description="Recipe/run name.")
    model: str | None = Field(None, description="Policy: a transformers folder or hub id; None = the embedded SmolLM2-135M-Instruct (its fp32 copy); "
                              "embedded:tiny-vlm / embedded:tiny-lm = the offline test vehicles (howeval.engines.tiny_vlm).")
    data: DataSpec = Field(default_factory=DataSpec)
    reward: RewardSpec
    curriculum: CurriculumSpec | None = Field(None, description="CPR-Curriculum phases; needs reward.kind=cpr.")
    scaling: ScalingSpec = Field(default_factory=ScalingSpec)
    storage: StorageSpec = Field(default_factory=StorageSpec)
    ray: RayConfig = Field(default_factory=RayConfig)
    grpo: dict[str, Any] = Field(default_factory=dict, description="TRL GRPOConfig fields, passed through unchanged (e.g. num_generations, beta, use_vllm, vllm_mode, deepspeed).")

    @model_validator(mode="after")
    def _cross_checks(self) -> "TrainConfig":
        known = grpo_field_names()
        unknown = sorted(set(self.grpo) - known)
        if unknown:
            raise ValueError(f"grpo: unknown GRPOConfig field(s) {unknown} (TRL's GRPOConfig has no such field)")
        managed = sorted(set(self.grpo) & set(MANAGED_GRPO_KEYS))
        if managed:
            raise ValueError(f"grpo: {managed} are set by the job ({', '.join(MANAGED_GRPO_KEYS[k] for k in managed)})")
        if self.curriculum is not None:
            if self.reward.kind != "cpr":
                raise ValueError(f"curriculum needs reward.kind='cpr' (phase 2 is CPR), got {self.reward.kind!r}")
            if self.grpo.get("shuffle_dataset", False):
                raise ValueError("curriculum orders prompts by difficulty: grpo.shuffle_dataset must be false or unset")
            max_steps = int(self.grpo.get("max_steps", -1))
            if 0 < max_steps <= self.curriculum.switch_step:
                raise ValueError(f"curriculum.switch_step={self.curriculum.switch_step} must be < grpo.max_steps={max_steps} (else phase 2 never runs)")
        if self.grpo.get("use_vllm") and not self.scaling.use_gpu:
            raise ValueError("grpo.use_vllm=true needs scaling.use_gpu=true (vLLM rollouts are a GPU feature here)")
        if self.grpo.get("vllm_mode") == "server" and not self.grpo.get("use_vllm"):
            raise ValueError("grpo.vllm_mode='server' is set but grpo.use_vllm is not true")
        if self.data.images and self.model is None:
            raise ValueError("data.images=true needs a VLM policy (model: embedded:tiny-vlm or a VLM folder); "
                             "the embedded default SmolLM2 is text-only")
        ng = int(self.grpo.get("num_generations", 8))
        if ng < 2:
            raise ValueError(f"grpo.num_generations={ng} must be >= 2 (GRPO normalizes rewards within a group)")
        return self

    @property
    def run_name(self) -> str:
        return self.storage.name or self.name

    def grpo_kwargs(self) -> dict[str, Any]:
        """``GRPOConfig`` keyword arguments (without ``output_dir``): the ``grpo:`` block plus ``use_cpu``."""
        kw = dict(self.grpo)
        kw["use_cpu"] = not self.scaling.use_gpu
        kw["report_to"] = "none"
        if self.curriculum is not None:
            kw["shuffle_dataset"] = False
        return kw

    def prompts_per_step(self, world_size: int) -> int:
        """Distinct prompts one optimizer step consumes: per_device x world x grad_accum / num_generations."""
        per_dev = int(self.grpo.get("per_device_train_batch_size", 8))
        ga = int(self.grpo.get("gradient_accumulation_steps", 1))
        ng = int(self.grpo.get("num_generations", 8))
        return max(1, per_dev * world_size * ga // ng)


def grpo_field_names() -> frozenset[str]:
    """Field names of the installed TRL ``GRPOConfig`` (imported lazily; cached)."""
    global _GRPO_FIELDS
    if _GRPO_FIELDS is None:
        import dataclasses

        from trl import GRPOConfig

        _GRPO_FIELDS = frozenset(f.name for f in dataclasses.fields(GRPOConfig))
    return _GRPO_FIELDS


_GRPO_FIELDS: frozenset[str] | None = None


def load_train_config(path: str, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """Read a training YAML once, resolve ``data.path`` against the file's folder, validate.

    ``overrides`` are merged into the top-level mapping (one level deep for dict values) before validation.
    Raises:
        ConfigError (a ValueError): names each key path, the rule and the value.
    """
    def resolve_data(raw: dict, folder) -> None:
        data = dict(raw.get("data") or {})
        p = data.get("path", DataSpec.model_fields["path"].default)
        if isinstance(p, str):
            data["path"] = os.path.normpath(resolve_path(p, folder.resolve()))
        raw["data"] = data

    return load_yaml_config(path, TrainConfig, overrides, prepare=resolve_data)


# ------------------------------------------------------------------------------------------ prompts


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
        ValueError: ``kind="cpr"`` and a sample has no reference steps (CPR needs them; names the ids);
            ``images=True`` and a sample has no image (names the ids).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {list(KINDS)}")
    if kind == "cpr":
        missing = [s["sample_id"] for s in samples if not s.get("reference_steps")]
        if missing:
            raise ValueError(f"kind 'cpr' needs reference_steps; {len(missing)} sample(s) lack them: {missing[:5]}")
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


# ------------------------------------------------------------------------------------------ rewards


def message_text(x: Any, role: str | None = None) -> str:
    """Text of a prompt or completion (string or chat list); the reward client's own helper."""
    from howeval.engines.messages import message_text as _mt

    return _mt(x, role)


def score_items(items: Sequence[Mapping[str, Any]], pattern: PatternConfig, cpr: CPRConfig,
                label_batch: Callable[[list[dict]], list[dict]] | None = None,
                step_f1: Callable[[list[dict]], list[float]] | None = None) -> list[dict]:
    """In-process rewards: ``howeval.rewards.pipeline.score_batch`` (the reward server's own pipeline).

    Args:
        label_batch: PatternRM ``[{question, response}] -> [{labels, error}]`` (needed for kind pattern).
        step_f1: ``[{pred, ref}] -> [F1]`` (needed for kind cpr).
    """
    from howeval.rewards.pipeline import score_batch

    return score_batch(items, pattern, cpr, label_batch, step_f1)


def reward_parts(results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Batch means of the reward's parts, for logging (keys absent when no row has that part).

    ``accuracy`` = mean s_ver; ``trigger`` = share of PatternRM-labelled rollouts with any pattern
    (Trigger, SPEC section 1); ``pattern/<label>`` = that label's rate; ``s_pat``, ``z``, ``step_f1``,
    ``degraded`` = their means.

    >>> reward_parts([{"reward": 1.0, "s_ver": 1.0, "labels": {"cot": True, "rep": False, "con": False, "pr": False},
    ...                "s_pat": 0.75, "z": 1}, {"reward": 0.0, "s_ver": 0.0, "z": 0}])["trigger"]
    1.0
    """
    if not results:
        return {}
    n = len(results)
    out = {"reward": sum(float(r["reward"]) for r in results) / n, "accuracy": sum(float(r["s_ver"]) for r in results) / n}
    for key in ("s_pat", "z", "step_f1"):
        vals = [float(r[key]) for r in results if r.get(key) is not None]
        if vals:
            out[key] = sum(vals) / len(vals)
    out["degraded"] = sum(bool(r.get("degraded")) for r in results) / n
    labelled = [r["labels"] for r in results if r.get("labels")]
    if labelled:
        out["trigger"] = sum(any(bool(lab[k]) for k in LABELS) for lab in labelled) / len(labelled)
        for k in LABELS:
            out[f"pattern/{k}"] = sum(bool(lab[k]) for lab in labelled) / len(labelled)
    return out


class GRPOReward:
    """TRL reward function ``(prompts, completions, answer, answer_type, ..., **kwargs) -> list[float]``.

    Builds one scoring item per completion (prompt text = the last user message, response = the last
    assistant message, as ``RewardClient.as_trl_reward`` does) and hands them to ``scorer`` (the HTTP
    client's ``score`` or :func:`score_items`), so the reward a rollout receives is the scorer's
    ``reward`` for that text, unchanged. With a curriculum the kind is ``phase1_kind`` before
    ``switch_step`` (TRL passes ``trainer_state``) and ``kind`` from then on. Never returns None.

    Args:
        scorer: ``list[item] -> list[result dict]`` (``reward, s_ver, labels, s_pat, z, step_f1, degraded``).
        kind: the reward kind (phase 2 kind under a curriculum).
        curriculum: the phase switch, or None.
        rollout_log: a JSONL path to append every scored rollout to, or None.
    """

    def __init__(self, scorer: Callable[[list[dict]], list[Mapping[str, Any]]], kind: str,
                 curriculum: CurriculumSpec | None = None, rollout_log: str | None = None):
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {list(KINDS)}")
        self.scorer, self.kind, self.curriculum, self.rollout_log = scorer, kind, curriculum, rollout_log
        self.__name__ = f"{kind}_curriculum" if curriculum else kind  # TRL logs rewards/<__name__>/mean

    def kind_at(self, step: int) -> str:
        """The reward kind at global step ``step`` (phase 1 before ``switch_step``)."""
        if self.curriculum is not None and step < self.curriculum.switch_step:
            return self.curriculum.phase1_kind
        return self.kind

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], answer: Sequence[str],
                 answer_type: Sequence[str], reference_steps: Sequence[Sequence[str]] | None = None,
                 options: Sequence[Sequence[str]] | None = None, trainer_state: Any = None,
                 log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float]:
        n = len(completions)
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        kind = self.kind_at(step)
        items = rollout_items(prompts, completions, answer, answer_type, kind, reference_steps, options)
        results = list(self.scorer(items))
        if len(results) != n:
            raise ValueError(f"scorer returned {len(results)} results for {n} items")
        rewards = [float(r["reward"]) for r in results]
        if log_metric is not None:
            for k, v in reward_parts(results).items():
                log_metric(f"reward_parts/{k}", v)
            log_metric("reward_parts/phase", 1.0 if kind != self.kind else 2.0)
        if self.rollout_log:
            Path(self.rollout_log).parent.mkdir(parents=True, exist_ok=True)
            with open(self.rollout_log, "a", encoding="utf-8") as f:
                for it, r in zip(items, results):
                    f.write(json.dumps({"step": step, **it, "result": dict(r)}) + "\n")
        return rewards


class InProcessScorer:
    """``score_items`` with its PatternRM (``howeval.judges.patternrm.model.PatternRM``) and step embedder made lazily."""

    def __init__(self, spec: RewardSpec):
        self.spec = spec
        self._rm = None
        self._emb = None

    def _label_batch(self, items: list[dict]) -> list[dict]:
        if self._rm is None:
            from howeval.judges.patternrm.model import PatternRM

            self._rm = PatternRM(**self.spec.patternrm.model_dump())
        return self._rm.label_batch(items)

    def _step_f1(self, pairs: list[dict]) -> list[float]:
        from howeval.rewards.pipeline import step_f1_batch

        if self._emb is None:
            from howeval.embed import StepEmbedder

            self._emb = StepEmbedder(self.spec.cpr.embedder_path)
        return step_f1_batch(self._emb, pairs, self.spec.cpr)

    def __call__(self, items: list[dict]) -> list[dict]:
        return score_items(items, self.spec.pattern, self.spec.cpr, self._label_batch, self._step_f1)
