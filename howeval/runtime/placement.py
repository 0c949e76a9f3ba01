"""The Ray side of ``howeval.engines.placement``: a placement group per engine replica, created when Ray Data
starts the replica's actor (``map_batches(..., ray_remote_args_fn=...)``), as Ray Data LLM does (issue 32).

:func:`stage_remote_args` is the hook ``howeval.runtime.execute.dataset`` calls for each actor stage: for a stage
built from a model config (its ``kwargs["model_config"]``: the generate and AdaptMMBench stages) whose
engine runs tensor-/pipeline-parallel on GPUs, it returns ``num_cpus`` / ``num_gpus`` for the actor itself
and a :class:`PlacementGroups` as ``ray_remote_args_fn``; for every other stage, ``{}`` (nothing changes).

Ray Data calls ``ray_remote_args_fn`` each time it starts an actor of the pool, so each replica gets its own
group (W one-GPU bundles; never more groups than replicas, see :class:`PlacementGroups`); the actor is
scheduled into it with ``placement_group_capture_child_tasks``, so vLLM's Ray executor starts its GPU
workers there. A restarted actor is restarted by Ray with the same scheduling strategy, in its group. The groups live until
:func:`release` removes them: ``howeval.runtime.execute.run_pipelines`` calls it when a pipeline's Dataset ends
(done or failed), so a finished config's GPUs go back to the cluster at once instead of staying reserved
until the driver exits (Ray Data LLM leaves that to the job's end).
"""
from __future__ import annotations

import threading
import uuid
from typing import Any

from howeval.engines.placement import EnginePlacement, model_placement

_LOCK = threading.Lock()
_GROUPS: dict[int, list[Any]] = {}  # id(pipeline) -> placement groups created for its actors


class PlacementGroups:
    """``ray_remote_args_fn`` for one stage: the first ``replicas`` calls each create one placement group of
    ``placement.bundles`` (strategy ``placement.strategy``); every call returns the scheduling strategy into
    one group.

    Args:
        placement: the replica's bundles and strategy (:func:`howeval.engines.placement.engine_placement`).
        pipeline: the ``howeval.plugins.pipeline.Pipeline`` (its name names the groups; :func:`release` with the same
            object removes them: two pipelines of one name, e.g. a config's generation and its AdaptMMBench
            run, never free each other's groups).
        replicas: the stage's actor-pool size (>= 1): at most this many groups are made.

    Why at most ``replicas``: Ray Data 2.60 calls ``ray_remote_args_fn`` once per actor it starts, and once
    more, after the pool's actors are started, from its high-memory issue detector, which only reads the
    ``memory`` key (``HighMemoryIssueDetector`` -> ``MapOperator._get_dynamic_ray_remote_args``). A group made
    on that call would hold TP GPUs that no actor uses until the pipeline ends (on a node whose GPUs one
    replica fills, a second config's replica could wait for them). Calls after the first ``replicas`` get
    the existing groups in turn (the detector's call gets the first group back); the test
    ``tests/cpu/ray_jobs/test_runtime_placement.py`` checks that every actor still has a group of its own.

    Each group is named ``howeval:<pipeline>:<8 hex>`` (``ray list placement-groups`` shows whose it is).
    Callable with no arguments (what Ray Data expects): returns ``{"scheduling_strategy":
    PlacementGroupSchedulingStrategy(group, placement_group_capture_child_tasks=True)}``. The group is not
    waited for: the actor stays pending until the group is placed, as any actor waits for its resources.

    Raises:
        ValueError: ``replicas`` < 1.
    """

    def __init__(self, placement: EnginePlacement, pipeline: Any, replicas: int = 1):
        if replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {replicas}")
        self.placement, self.name, self.key, self.replicas = placement, str(getattr(pipeline, "name", pipeline)), id(pipeline), replicas
        self.made: list[Any] = []
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        import ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        with _LOCK:
            if len(self.made) < self.replicas:
                pg = ray.util.placement_group([dict(b) for b in self.placement.bundles], strategy=self.placement.strategy,
                                              name=f"howeval:{self.name}:{uuid.uuid4().hex[:8]}")  # names are cluster-wide
                self.made.append(pg)
                _GROUPS.setdefault(self.key, []).append(pg)
            else:
                pg = self.made[(self.calls - self.replicas) % self.replicas]
            self.calls += 1
        return {"scheduling_strategy": PlacementGroupSchedulingStrategy(pg, placement_group_capture_child_tasks=True)}


def stage_remote_args(stage: Any, pipeline: Any) -> dict[str, Any]:
    """``map_batches`` keyword arguments that place one actor stage's replicas in placement groups, or ``{}``.

    ``stage`` is a ``howeval.plugins.pipeline.Stage``; it is placed when ``stage.kwargs["model_config"]`` is a model
    config for which :func:`howeval.engines.placement.model_placement` gives a placement (a ``vllm`` engine
    with ``tensor_parallel_size x pipeline_parallel_size > 1`` and ``resources.num_gpus`` > 0). The result
    replaces the stage's ``num_cpus`` / ``num_gpus`` (the actor's share: one bundle's CPUs, no GPU) and adds
    ``ray_remote_args_fn``. ``pipeline`` is the ``howeval.plugins.pipeline.Pipeline`` the stage belongs to (pass the
    same object to :func:`release`).

    Raises:
        ValueError: the model config's resources contradict its parallel sizes (the message names the field).
    """
    model = (getattr(stage, "kwargs", None) or {}).get("model_config")
    if model is None or getattr(stage, "replicas", 1) == 0:
        return {}
    p = model_placement(model)
    if p is None:
        return {}
    return {"num_cpus": p.actor_num_cpus, "num_gpus": p.actor_num_gpus,
            "ray_remote_args_fn": PlacementGroups(p, pipeline, stage.replicas)}


def release(pipeline: Any) -> int:
    """Remove every placement group created for the actors of ``pipeline`` (the object given to
    :func:`stage_remote_args`; their actors, if any are still alive, are killed with them). Returns how
    many were removed; 0 when there were none. Safe to call twice."""
    with _LOCK:
        groups = _GROUPS.pop(id(pipeline), [])
    if not groups:
        return 0
    import ray

    for pg in groups:
        try:
            ray.util.remove_placement_group(pg)
        except Exception:  # noqa: BLE001 - already removed, or Ray is shutting down: nothing left to free
            pass
    return len(groups)
