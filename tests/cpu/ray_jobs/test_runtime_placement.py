"""howeval.runtime.placement on a local Ray with 8 logical GPUs (no GPU needed): a TP engine's replica is a placement group
of one-GPU bundles, its actor holds one bundle's CPUs and no GPU, the engine's workers (started from the actor, as
vLLM's Ray executor does) land in the group with one GPU each, and release() gives the GPUs back (issue 32)."""
from __future__ import annotations

import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from howeval.config import ModelConfig
from howeval.engines.placement import engine_placement


@pytest.fixture(scope="module")
def ray_8_gpus():
    import ray

    if ray.is_initialized():  # another module's cluster (no GPUs): this module needs its own
        ray.shutdown()
    ray.init(num_cpus=4, num_gpus=8, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def _free_gpus(ray, want: float, timeout: float = 10.0) -> float:
    end = time.time() + timeout
    while True:
        got = ray.available_resources().get("GPU", 0.0)
        if got == want or time.time() > end:
            return got
        time.sleep(0.1)


class EngineActor:
    """What a stage actor does at start: look at its own resources, then start TP workers needing a GPU each."""

    def resources(self, workers: int):
        import ray

        @ray.remote(num_cpus=0, num_gpus=1)
        class Worker:  # an actor, as vLLM's Ray workers are: it holds its GPU while it lives
            def where(self):
                pg = ray.util.get_current_placement_group()
                return ray.get_gpu_ids(), pg.id.hex() if pg else None

        pg = ray.util.get_current_placement_group()
        alive = [Worker.remote() for _ in range(workers)]  # all at once: distinct GPUs, whatever the timing
        out = ray.get([w.where.remote() for w in alive])
        for w in alive:
            ray.kill(w)
        return ray.get_runtime_context().get_assigned_resources(), pg.id.hex() if pg else None, out


@pytest.mark.ray
@pytest.mark.parametrize("tp", [2, 8])
def test_an_actor_placed_by_the_strategy_holds_one_bundle_and_its_workers_one_gpu_each(ray_8_gpus, tp):
    from howeval.runtime.placement import PlacementGroups, release

    ray = ray_8_gpus
    p = engine_placement("vllm", {"tensor_parallel_size": tp}, num_cpus=2, num_gpus=tp)
    key = object()  # stands for the Pipeline
    args = PlacementGroups(p, key)()
    pg = args["scheduling_strategy"].placement_group
    assert args["scheduling_strategy"].placement_group_capture_child_tasks is True
    actor = ray.remote(EngineActor).options(num_cpus=p.actor_num_cpus, num_gpus=p.actor_num_gpus, **args).remote()
    assigned, actor_pg, workers = ray.get(actor.resources.remote(tp), timeout=60)

    assert assigned == {"CPU": 2 / tp}  # one bundle's CPU share, no GPU
    assert actor_pg == pg.id.hex()
    assert all(w_pg == pg.id.hex() for _, w_pg in workers)  # captured: every worker in the replica's group
    assert sorted(len(ids) for ids, _ in workers) == [1] * tp and len({ids[0] for ids, _ in workers}) == tp
    table = ray.util.placement_group_table(pg)
    assert table["strategy"] == "STRICT_PACK" and table["state"] == "CREATED"
    assert table["bundles"] == {i: {"GPU": 1.0, "CPU": 2 / tp} for i in range(tp)}
    assert _free_gpus(ray, 8.0 - tp) == 8.0 - tp  # the group holds TP GPUs while it lives
    assert release(key) == 1 and release(key) == 0
    assert _free_gpus(ray, 8.0) == 8.0  # released: the GPUs are back
    ray.kill(actor)


class WhereAmI:
    """A stage class (``cls(**kwargs)(batch)``): one row per batch with its actor's resources and group."""

    def __init__(self, model_config):
        self.model = model_config

    def __call__(self, batch: pa.Table) -> pa.Table:
        import ray

        pg = ray.util.get_current_placement_group()
        ctx = ray.get_runtime_context()
        res = ctx.get_assigned_resources()
        return pa.table({"cpu": [res.get("CPU", 0.0)], "gpu": [res.get("GPU", 0.0)],
                         "pg": [pg.id.hex() if pg else ""], "actor": [ctx.get_actor_id()]})


@pytest.mark.ray
def test_the_sweeps_pipelines_place_each_tp_replica_in_its_own_group_and_free_them_at_the_end(ray_8_gpus, tmp_path,
                                                                                               monkeypatch):
    """Through howeval.runtime.execute.run_pipelines: a 2-replica TP 2 config gets two groups (one per actor, no third
    for Ray Data's extra call), its actors one bundle's CPUs each and no GPU; a TP 1 config beside it keeps
    num_gpus 1 on its actor and no group; every group is removed when its pipeline ends."""
    import howeval.runtime.execute as execute
    from howeval.plugins.pipeline import Pipeline, Stage
    from howeval.runtime.placement import release

    ray = ray_8_gpus
    released: dict[str, int] = {}
    monkeypatch.setattr(execute, "release", lambda p: released.setdefault(p.name, release(p)))
    # Ray Data hands batches to the pool's actors as they become ready (wait_for_min_actors_s -1): on a loaded
    # machine the first actor can take all 8 batches before the second exists, and the check that each actor
    # has a group of its own would see one actor. Waiting for the pool's actors makes both take batches.
    from ray.data import DataContext

    monkeypatch.setattr(DataContext.get_current(), "wait_for_min_actors_s", 120)

    def pipe(name, tp, replicas):
        m = ModelConfig(name=name, engine="vllm", model="/m", modes={"NT": {}}, options={"tensor_parallel_size": tp},
                        resources={"num_gpus": tp, "num_cpus": 1, "replicas": replicas})
        stage = Stage("generate", WhereAmI, {"model_config": m}, batch_size=1, replicas=replicas, num_cpus=1, num_gpus=tp,
                      out_uri=str(tmp_path / name))  # one file per batch: what each batch's actor saw
        return Pipeline(name, pa.table({"sample_id": [f"s{i}" for i in range(8)]}), [stage])

    assert execute.run_pipelines([pipe("tp2", 2, 2), pipe("tp1", 1, 1)]) == {}
    tp2, tp1 = (pq.read_table(tmp_path / n).to_pylist() for n in ("tp2", "tp1"))
    assert len(tp2) == 8 and {(r["cpu"], r["gpu"]) for r in tp2} == {(0.5, 0.0)}
    group_of = {r["actor"]: r["pg"] for r in tp2}
    assert len(group_of) == 2 and len(set(group_of.values())) == 2  # two actors, each in a group of its own
    assert all(group_of[r["actor"]] == r["pg"] for r in tp2)  # an actor's batches all ran in its group
    assert {(r["cpu"], r["gpu"], r["pg"]) for r in tp1} == {(1.0, 1.0, "")}  # TP 1: as before, no group
    assert released == {"tp2": 2, "tp1": 0}
    assert _free_gpus(ray, 8.0) == 8.0
