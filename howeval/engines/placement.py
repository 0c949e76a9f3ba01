"""Where a tensor-/pipeline-parallel engine replica's GPUs come from: one placement group per replica, as
Ray Data LLM places vLLM (issue 32). Pure and Ray-free: the Ray side is ``howeval.runtime.placement``.

Ray Data LLM (``ray.llm._internal.batch.stages.vllm_engine_stage``, Ray 2.60) runs a vLLM engine with
``tensor_parallel_size x pipeline_parallel_size = W > 1`` as follows: the stage actor holds no GPU
(``num_gpus = 0``); each replica gets its own placement group of W bundles of one GPU each; the actor is
scheduled into it with ``placement_group_capture_child_tasks=True``; vLLM's Ray executor
(``distributed_executor_backend: ray``) then starts its W GPU workers inside that group, one per bundle.
A single-GPU engine (W = 1), or one on another executor backend (``mp``, ``uni``), keeps its GPUs on
the actor (``num_gpus = W``), no group.

Before this, a TP engine was one actor holding ``num_gpus = TP`` while vLLM started its workers beside it
outside any reservation of theirs. :func:`engine_placement` gives, for one model config, the bundles, the
strategy and the actor's own resources; ``howeval.runtime.placement`` turns them into the ``ray_remote_args_fn``
of ``map_batches``.

Choices that differ from Ray Data LLM, and why:

- **Strategy**: ``STRICT_PACK`` when only tensor parallelism is used (its all-reduce per layer wants the
  GPUs of one node; the preflight, ``howeval.config.preflight.replica_demand``, already requires one node
  to hold a replica), ``PACK`` with pipeline parallelism (stages may span nodes). Ray Data LLM uses
  ``PACK`` unless told otherwise.
- **CPUs**: the config's ``resources.num_cpus`` (CPUs per replica) is split evenly over the bundles, and
  the actor asks for one bundle's share, so a replica reserves exactly ``num_cpus`` CPUs as before (Ray
  Data LLM adds one CPU per bundle on top of the actor's own).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PACK, STRICT_PACK = "PACK", "STRICT_PACK"


@dataclass(frozen=True)
class EnginePlacement:
    """One replica's placement group and the stage actor's own resources.

    Attributes:
        bundles: one dict per GPU worker of the engine (``tensor_parallel_size x pipeline_parallel_size``
            of them), each ``{"GPU": 1.0, "CPU": num_cpus / W}`` plus ``{"accelerator_type:<T>": 0.001}``
            when the config names an accelerator type (Ray's node-label resource).
        strategy: ``"STRICT_PACK"`` (tensor parallel only: one node) or ``"PACK"`` (pipeline parallel).
        actor_num_cpus: CPUs of the stage actor itself (one bundle's CPU share: it runs in a bundle).
        actor_num_gpus: GPUs of the stage actor itself: 0, the engine's workers hold them in the bundles.
        engine_kwargs: vLLM engine arguments this placement needs (``distributed_executor_backend: ray``),
            applied by the engine where the config leaves them unset (:func:`vllm_parallel_defaults`).
    """

    bundles: tuple[dict[str, float], ...]
    strategy: str
    actor_num_cpus: float
    actor_num_gpus: float = 0.0
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def num_gpus(self) -> float:
        """GPUs the whole replica holds (the bundles' sum)."""
        return sum(b.get("GPU", 0.0) for b in self.bundles)


def _positive_int(kw: Mapping[str, Any], key: str) -> int:
    v = kw.get(key)
    if v is None:
        return 1
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"options.{key} must be an integer >= 1, got {v!r}; fix the model config's options.{key}")
    return v


def parallel_size(options: Mapping[str, Any]) -> tuple[int, int]:
    """``(tensor_parallel_size, pipeline_parallel_size)`` of vLLM engine arguments (unset = 1).

    >>> parallel_size({"tensor_parallel_size": 4}), parallel_size({})
    ((4, 1), (1, 1))

    Raises:
        ValueError: a size that is not an integer >= 1 (the message names ``options.<key>``).
    """
    return _positive_int(options, "tensor_parallel_size"), _positive_int(options, "pipeline_parallel_size")


def vllm_parallel_defaults(options: Mapping[str, Any], on_cpu: bool = False) -> dict[str, Any]:
    """Engine arguments a multi-GPU vLLM engine gets where the config leaves them unset: ``{}`` for one GPU,
    on a CPU platform, or with vLLM's own ``data_parallel_size`` > 1; ``{"distributed_executor_backend": "ray"}`` when ``W = TP x PP > 1`` on GPUs, so
    vLLM starts its workers as Ray actors inside the replica's placement group (what Ray Data LLM sets).

    >>> vllm_parallel_defaults({"tensor_parallel_size": 2}), vllm_parallel_defaults({"tensor_parallel_size": 2}, True)
    ({'distributed_executor_backend': 'ray'}, {})
    """
    tp, pp = parallel_size(options)
    if on_cpu or tp * pp == 1 or _positive_int(options, "data_parallel_size") > 1:
        return {}  # data_parallel_size > 1: no placement group (engine_placement), vLLM picks its own backend
    return {"distributed_executor_backend": "ray"}


def engine_placement(engine: str, options: Mapping[str, Any], num_cpus: float, num_gpus: float,
                     accelerator_type: str | None = None) -> EnginePlacement | None:
    """The placement group of one replica of a model config, or None when the actor holds its resources
    itself (as before): any engine but ``vllm``; ``num_gpus`` 0 (a CPU engine); one GPU (``W = 1``); vLLM's
    own ``data_parallel_size`` > 1; or an executor backend other than ``ray`` set in the options (vLLM's own
    processes then share the actor's GPUs, as in Ray Data LLM).

    Args:
        engine: the config's ``engine``.
        options: its vLLM engine arguments (``VLLMOptions.all_engine_kwargs()``: flat and ``engine_kwargs``
            merged).
        num_cpus: ``resources.num_cpus`` (CPUs per replica, > 0), split evenly over the bundles.
        num_gpus: ``resources.num_gpus`` (GPUs per replica). With ``W > 1`` the replica gets W one-GPU
            bundles; a smaller ``num_gpus`` (but > 0) still gets W, what the engine needs (the preflight
            counts W too).
        accelerator_type: ``resources.accelerator_type`` (e.g. ``H200``) or None.

    Returns:
        :class:`EnginePlacement` (W bundles), or None.

    Raises:
        ValueError: ``num_gpus`` > W (GPUs no worker would use; the message names
            ``resources.num_gpus`` and the fix), ``num_cpus`` <= 0, or a parallel size that is not an
            integer >= 1.

    >>> p = engine_placement("vllm", {"tensor_parallel_size": 2}, num_cpus=4, num_gpus=2)
    >>> p.bundles, p.strategy, p.actor_num_cpus, p.actor_num_gpus
    (({'GPU': 1.0, 'CPU': 2.0}, {'GPU': 1.0, 'CPU': 2.0}), 'STRICT_PACK', 2.0, 0.0)
    """
    if engine != "vllm" or not num_gpus:
        return None
    tp, pp = parallel_size(options)
    world = tp * pp
    dp = _positive_int(options, "data_parallel_size")
    if dp > 1:  # vLLM's own data parallelism inside one engine: its processes share the actor's GPUs, no group
        return None
    if num_gpus > world:
        raise ValueError(f"resources.num_gpus={num_gpus:g} but options.tensor_parallel_size x pipeline_parallel_size = "
                         f"{tp} x {pp} = {world}: one replica is one vLLM engine, which uses {world} GPU(s). Fix: set "
                         f"resources.num_gpus to {world} (and more engines with resources.replicas), or raise "
                         f"options.tensor_parallel_size")
    if world == 1:
        return None
    backend = options.get("distributed_executor_backend")
    if backend not in (None, "ray"):
        return None
    if not num_cpus or num_cpus <= 0:
        raise ValueError(f"resources.num_cpus must be > 0, got {num_cpus!r}")
    share = float(num_cpus) / world
    bundle: dict[str, float] = {"GPU": 1.0, "CPU": share}
    if accelerator_type:
        bundle[f"accelerator_type:{accelerator_type}"] = 0.001
    return EnginePlacement(bundles=tuple(dict(bundle) for _ in range(world)), strategy=STRICT_PACK if pp == 1 else PACK,
                           actor_num_cpus=share, actor_num_gpus=0.0,
                           engine_kwargs={"distributed_executor_backend": "ray"})


def model_placement(model: Any) -> EnginePlacement | None:
    """:func:`engine_placement` of a ``howeval.config.ModelConfig`` (its engine, its validated engine
    options, its ``resources``). Raises what :func:`engine_placement` raises, with the config's name."""
    if model.engine != "vllm":
        return None
    r = model.resources
    try:
        return engine_placement(model.engine, model.engine_options().all_engine_kwargs(), r.num_cpus, r.num_gpus,
                                r.accelerator_type)
    except ValueError as e:
        raise ValueError(f"config {model.name!r}: {e}") from None
