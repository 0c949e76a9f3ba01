"""GRPO training config: one pydantic model per job (STYLE rule 1), with TRL's own ``GRPOConfig`` built at load.

:class:`TrainConfig` is the whole ``configs/train/<recipe>.yaml``. GRPO hyperparameters are TRL's own
``GRPOConfig`` fields given under ``grpo:``; only the keys given are kept, so TRL's defaults are TRL's,
never copies. When the YAML is loaded (at submit, before Ray starts) each value is checked against the
type of its ``GRPOConfig`` field (``grpo.beta: Input should be a valid number``) and TRL's ``GRPOConfig``
is built from the block, so its own cross-field checks (``__post_init__``) run there, naming the keys.
The run's values (``num_generations``, ``max_steps``, ...) are then read from that built object
(:meth:`TrainConfig.grpo_args`), defaults included.

What cannot be checked at load is checked again where it can: on a CPU-only driver the block is
checked for the CPU device and one process (a worker builds ``GRPOConfig`` again with its real world
size and device), and ``deepspeed`` (it needs the DeepSpeed package and the GPUs) is checked by the
workers' build.
"""
from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from howeval.config import RayConfig, StrictModel, load_yaml_config, resolve_path
from howeval.config.rewards import CPRConfig, PatternConfig, PatternRMConfig
from howeval.config.sweep import JudgeEngineConfig, llm_verifier_block

if typing.TYPE_CHECKING:
    from trl import GRPOConfig

MANAGED_GRPO_KEYS = {
    "output_dir": "a worker-local folder; checkpoints go to storage.path through Ray Train",
    "use_cpu": "set from scaling.use_gpu",
    "resume_from_checkpoint": "resume is automatic: the run's latest checkpoint in storage (--resume / --no-resume force a side)",
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
    kind: Literal["base", "pattern", "cpr", "composite"] = Field(..., description="base = verifier only (BaseRL); pattern = verifier x PatternRM with the Bernoulli gate (PatternRL); cpr = CRYSTAL CPR; composite = CRYSTAL's additive ablation a_w·1[correct] + s_w·F1 (needs reference_steps like cpr).")
    url_env: str = Field("REWARD_SERVER_URL", description="Env var holding the reward server's URL (server source).")
    url: str | None = Field(None, description="Fallback URL when url_env is unset (e.g. http://127.0.0.1:8000).")
    token_env: str = Field("HOWEVAL_REWARD_TOKEN", description="Env var with the server's bearer token; forwarded to the workers.")
    timeout_s: float = Field(60.0, gt=0, description="Per-attempt HTTP timeout.")
    max_retries: int = Field(3, ge=0, description="HTTP retries after the first attempt (then the step fails loudly).")
    pattern: PatternConfig = Field(default_factory=PatternConfig, description="Gate p, seed, s_pat mode (inprocess; a server uses its own args).")
    cpr: CPRConfig = Field(default_factory=CPRConfig, description="CPR weights and step matching (inprocess).")
    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig, description="PatternRM used in-process (default: the embedded trained PatternRM; rules = the rule judge).")
    on_unresolved: Literal["zero", "llm"] = Field("zero", description="inprocess: answers the verifier's rules cannot decide get s_ver 0 (zero) or go to llm_verifier (llm; PatternRL's fallback, SPEC section 2). A server uses its own on_unresolved.")
    llm_verifier: JudgeEngineConfig | None = Field(None, description="inprocess, on_unresolved=llm: the LLM verifier, the same block as the sweep's judges.verifier.llm_fallback and the reward server's llm_verifier ({model, options: {base_url, ...}, max_tokens}, or the flat {base_url, model}).")
    rollout_log_dir: str | None = Field(None, description="Local folder: each worker appends every scored rollout (prompt, completion, kind, reward, parts, step) to rollouts.rank<k>.jsonl. Debug/tests.")


    @field_validator("llm_verifier", mode="before")
    @classmethod
    def _one_verifier_shape(cls, v: Any) -> Any:
        return llm_verifier_block(v)

    @model_validator(mode="after")
    def _llm_verifier_inprocess(self) -> RewardSpec:
        if self.on_unresolved == "llm" and self.llm_verifier is None:
            raise ValueError("reward.on_unresolved='llm' needs reward.llm_verifier: {model, options: {base_url}}")
        if self.source == "server" and (self.on_unresolved != "zero" or self.llm_verifier is not None):
            raise ValueError("reward.on_unresolved / reward.llm_verifier apply to source=inprocess; the reward server "
                             "takes them in its own args (on_unresolved, llm_verifier: the same block)")
        return self


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
    def _elastic_bounds(self) -> ScalingSpec:
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
    """One GRPO run (``python -m howeval.ray_jobs.train_grpo --config configs/train/<recipe>.yaml``)."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.\-]+$", description="Recipe/run name.")
    model: str | None = Field(None, description="Policy: a transformers folder or hub id; None = the embedded SmolLM2-135M-Instruct (its fp32 copy); "
                              "embedded:tiny-vlm / embedded:tiny-lm = the offline test vehicles (howeval.engines.tiny_vlm).")
    data: DataSpec = Field(default_factory=DataSpec)
    reward: RewardSpec
    curriculum: CurriculumSpec | None = Field(None, description="CPR-Curriculum phases; needs reward.kind=cpr.")
    pcgrad: bool = Field(False, description="PCGrad (CRYSTAL; Yu et al. 2020) over the reward's components as tasks: accuracy + reasoning (cpr, composite) or accuracy + pattern (pattern); each gets its own GRPO advantage and policy gradient, a gradient conflicting with another (negative dot product) is projected onto its normal plane, and the projected gradients are summed (howeval.training.pcgrad). With several workers (DDP) each component gradient is averaged over them before the projection; not with grpo.deepspeed or grpo.fsdp.")
    scaling: ScalingSpec = Field(default_factory=ScalingSpec)
    storage: StorageSpec = Field(default_factory=StorageSpec)
    ray: RayConfig = Field(default_factory=RayConfig)
    grpo: dict[str, Any] = Field(default_factory=dict, description=(
        "TRL GRPOConfig fields, passed through unchanged (e.g. num_generations, beta, use_vllm, vllm_mode, deepspeed, "
        "report_to); each value is checked against its GRPOConfig field's type and GRPOConfig is built from them at "
        "load (TRL's own checks and defaults). report_to: unset = none (metrics go to Ray Train, stdout and "
        "metrics.jsonl); tensorboard writes event files under <storage>/<run>/tensorboard (or "
        "$TENSORBOARD_LOGGING_DIR), offline."))

    @field_validator("grpo")
    @classmethod
    def _grpo_keys_and_types(cls, v: dict[str, Any]) -> dict[str, Any]:
        types = grpo_field_types()
        unknown = sorted(set(v) - set(types))
        if unknown:
            raise ValueError(f"grpo: unknown GRPOConfig field(s) {unknown} (TRL's GRPOConfig has no such field)")
        managed = sorted(set(v) & set(MANAGED_GRPO_KEYS))
        if managed:
            raise ValueError(f"grpo: {managed} are set by the job ({', '.join(MANAGED_GRPO_KEYS[k] for k in managed)})")
        out = {}
        for key, value in v.items():
            try:  # lax: YAML's 1e-5 (a string) becomes the float TRL expects
                out[key] = types[key].validate_python(value)
            except ValidationError as e:
                raise ValueError(f"grpo.{key}: {e.errors()[0]['msg']} (got {value!r:.80}; "
                                 f"GRPOConfig field type {types[key]._type!r})") from None
        return out

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainConfig:
        args = self.grpo_args()  # TRL's own checks; raises naming the grpo keys
        if self.curriculum is not None:
            if self.reward.kind != "cpr":
                raise ValueError(f"curriculum needs reward.kind='cpr' (phase 2 is CPR), got {self.reward.kind!r}")
            if self.grpo.get("shuffle_dataset", False):
                raise ValueError("curriculum orders prompts by difficulty: grpo.shuffle_dataset must be false or unset")
            if 0 < args.max_steps <= self.curriculum.switch_step:
                raise ValueError(f"curriculum.switch_step={self.curriculum.switch_step} must be < grpo.max_steps={args.max_steps} (else phase 2 never runs)")
        if self.pcgrad:
            from howeval.rewards.functions import COMPONENTS

            if len(COMPONENTS[self.reward.kind]) < 2:
                raise ValueError(f"pcgrad: true needs a reward with two or more components (cpr, composite, pattern); "
                                 f"reward.kind={self.reward.kind!r} has only {list(COMPONENTS[self.reward.kind])}")
            # several workers are DDP: howeval.training.pcgrad averages each component's gradient over them
            # before the projection. DeepSpeed ZeRO and FSDP shard the parameters and reduce the gradients
            # inside their engine (accelerate's no_sync does nothing under ZeRO-2/3), so no process holds a
            # component's full gradient to average and project
            if self.grpo.get("deepspeed"):  # null / "" = off, as TRL reads it
                raise ValueError("pcgrad: true does not run with grpo.deepspeed: DeepSpeed ZeRO shards the parameters "
                                 "and reduces the gradients inside its engine, so the per-component gradients PCGrad "
                                 "projects cannot be taken whole. Fix: remove grpo.deepspeed (on the command line: "
                                 "~grpo.deepspeed; patternrl.yaml and cpr.yaml set it) so several workers train with "
                                 "DDP (scaling.num_workers), or set pcgrad: false")
            if self.grpo.get("fsdp"):
                raise ValueError("pcgrad: true does not run with grpo.fsdp: FSDP shards the parameters and reduces "
                                 "the gradients itself, so the per-component gradients PCGrad projects cannot be "
                                 "taken whole. Fix: remove grpo.fsdp (several workers then train with DDP) or set "
                                 "pcgrad: false")
            if self.grpo.get("reward_weights") is not None:
                raise ValueError("pcgrad: true gives TRL one reward function per component with weight 1: remove grpo.reward_weights")
        if args.use_vllm and not self.scaling.use_gpu:
            raise ValueError("grpo.use_vllm=true needs scaling.use_gpu=true (vLLM rollouts are a GPU feature here)")
        if "vllm_mode" in self.grpo and self.grpo["vllm_mode"] == "server" and not args.use_vllm:
            raise ValueError("grpo.vllm_mode='server' is set but grpo.use_vllm is not true")
        if self.data.images and self.model is None:
            raise ValueError("data.images=true needs a VLM policy (model: embedded:tiny-vlm or a VLM folder); "
                             "the embedded default SmolLM2 is text-only")
        return self

    @property
    def run_name(self) -> str:
        return self.storage.name or self.name

    @property
    def report_to(self) -> list[str]:
        """The reporting integrations of the run (TRL's ``report_to`` resolved; [] = none)."""
        return list(self.grpo_args().report_to or [])

    def grpo_kwargs(self) -> dict[str, Any]:
        """``GRPOConfig`` keyword arguments (without ``output_dir``): the ``grpo:`` block plus ``use_cpu``, and
        ``report_to="none"`` unless the block sets it (per-step metrics go to Ray Train, stdout and
        ``metrics.jsonl`` already; no integration logs unasked)."""
        kw = dict(self.grpo)
        kw["use_cpu"] = not self.scaling.use_gpu
        kw.setdefault("report_to", "none")
        if self.curriculum is not None:
            kw["shuffle_dataset"] = False
        return kw

    def grpo_args(self, output_dir: str | None = None) -> GRPOConfig:
        """TRL's ``GRPOConfig`` of this run: :meth:`grpo_kwargs` with TRL's defaults for every other field.

        Args:
            output_dir: the trainer's output folder (a worker's scratch folder); None = a load-time check
                (the config is then built for the CPU device and one process, without ``deepspeed``: see
                the module docstring).

        Raises:
            ValueError: TRL's ``GRPOConfig`` refuses the block; the message gives the ``grpo:`` keys and
                TRL's reason.
        """
        kw = self.grpo_kwargs()
        if output_dir is None:
            kw = {k: v for k, v in kw.items() if k != "deepspeed"} | {"use_cpu": True}
        return build_grpo_args(kw, output_dir or LOAD_CHECK_DIR)

    def prompts_per_step(self, world_size: int) -> int:
        """Distinct prompts one optimizer step consumes: per_device x world x grad_accum / num_generations
        (TRL's values, defaults included)."""
        a = self.grpo_args()
        return max(1, a.per_device_train_batch_size * world_size * a.gradient_accumulation_steps // a.num_generations)


LOAD_CHECK_DIR = "unused-grpo-load-check"
"""``output_dir`` of the ``GRPOConfig`` built at load (nothing is written there: building writes no file)."""


@cache
def grpo_field_types() -> dict[str, TypeAdapter]:
    """Field name -> a pydantic ``TypeAdapter`` of its annotated type, for the installed TRL ``GRPOConfig``
    (imported lazily; cached)."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    lax = ConfigDict(arbitrary_types_allowed=True)
    return {f.name: TypeAdapter(hints[f.name], config=lax) for f in dataclasses.fields(GRPOConfig)}


def grpo_field_names() -> frozenset[str]:
    """Field names of the installed TRL ``GRPOConfig``."""
    return frozenset(grpo_field_types())


def build_grpo_args(kwargs: Mapping[str, Any], output_dir: str) -> GRPOConfig:
    """``trl.GRPOConfig(output_dir=output_dir, **kwargs)`` with TRL's errors naming the ``grpo:`` keys given.

    Raises:
        ValueError: TRL refused the values (``grpo (k=v, ...): <TRL's message>``) or ``report_to`` names an
            integration transformers does not know or cannot load.
    """
    import warnings

    from transformers.integrations import (
        get_reporting_integration_callbacks,
        is_tensorboard_available,
    )
    from trl import GRPOConfig

    given = ", ".join(f"{k}={v!r:.60}" for k, v in kwargs.items() if k != "use_cpu" and (k, v) != ("report_to", "none"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # transformers' renamed-argument notices
            args = GRPOConfig(output_dir=output_dir, **kwargs)
        get_reporting_integration_callbacks(args.report_to)
    except (ValueError, TypeError) as e:
        raise ValueError(f"grpo ({given}): TRL's GRPOConfig refused it: {e}") from None
    if "tensorboard" in (args.report_to or []) and not is_tensorboard_available():
        raise ValueError("grpo.report_to: tensorboard needs the tensorboard (or tensorboardX) package")
    return args


def load_train_config(path: str, overrides: Mapping[str, Any] | None = None, dotlist: Iterable[str] = ()) -> TrainConfig:
    """Read a training YAML once, resolve ``data.path`` against the file's folder, validate (TRL's
    ``GRPOConfig`` included: a bad ``grpo:`` value fails here, before Ray starts).

    ``overrides`` are merged into the top-level mapping (one level deep for dict values) before validation;
    ``dotlist`` are command-line overrides (``data.path=/data/x.jsonl``, ``grpo.report_to=none``;
    ``howeval.config.base.apply_dotlist``), applied after them, a relative ``data.path`` among them resolved
    against the current folder.
    Raises:
        ConfigError (a ValueError): names each key path, the rule and the value.
    """
    def resolve_data(raw: dict, folder) -> None:
        data = dict(raw.get("data") or {})
        p = data.get("path", DataSpec.model_fields["path"].default)
        if isinstance(p, str):
            data["path"] = os.path.normpath(resolve_path(p, folder.resolve()))
        raw["data"] = data

    return load_yaml_config(path, TrainConfig, overrides, prepare=resolve_data, dotlist=dotlist)
