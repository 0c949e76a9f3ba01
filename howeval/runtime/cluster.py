"""Cluster set-up for every job: start or join Ray, the Ray Data context, the cluster's summary and node shapes
(provenance, preflight), and Ray's error lines condensed to one line each."""
from __future__ import annotations

import logging
import os

from howeval.config import RayConfig

log = logging.getLogger("howeval")


def init_ray(cfg: RayConfig, verbose: bool = True) -> None:
    """Join ``cfg.address`` (or ``RAY_ADDRESS``, as under ``ray job submit``) or start a local cluster.

    ``verbose=False`` keeps Ray's start-up lines and the workers' output (transformers, vLLM) off the
    driver's terminal; they stay in the Ray session's log folder.
    """
    import ray

    if ray.is_initialized():
        return
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    kw = {"include_dashboard": False, "log_to_driver": verbose}
    if not verbose:
        kw["logging_level"] = logging.ERROR
    if address:
        ray.init(address=address, **kw)
    else:
        ray.init(num_cpus=cfg.num_cpus, **kw)
    if not verbose:
        condense_raylet_errors()
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = os.environ.get("HOWEVAL_PROGRESS", "0") == "1"
    ctx.execution_options.verbose_progress = False


_seen_raylet_lines: set[str] = set()


def condense_raylet_errors() -> None:
    """Print each error Ray sends the driver (``(raylet) Task ... failed ... Traceback ...``: a failed
    actor's whole traceback, once per retry) as one line, its innermost ``SomeError: message``, and each
    such line once; the full text stays in the session's logs. Without this, an engine that fails to start
    buries its one-line reason under hundreds of traceback lines.

    Ray prints these from its error-listener thread through ``ray._private.worker.print_to_stdstream``
    whatever ``log_to_driver`` says; this wraps that function (idempotent).
    """
    from ray._private import worker

    if getattr(worker.print_to_stdstream, "_howeval_condensed", False):
        return
    original = worker.print_to_stdstream

    def condensed(data, ignore_prefix: bool):
        if data.get("pid") != "raylet" or not data.get("lines"):
            return original(data, ignore_prefix)
        from howeval.runtime.execute import one_line

        lines = []
        for text in data["lines"]:
            line = one_line(text)
            if line not in _seen_raylet_lines:
                _seen_raylet_lines.add(line)
                lines.append(line)
        if lines:
            original({**data, "lines": lines}, ignore_prefix)

    condensed._howeval_condensed = True
    worker.print_to_stdstream = condensed


def cluster_summary() -> dict | None:
    """The Ray cluster this driver is connected to, for the run's provenance: alive nodes, CPUs, GPUs and
    accelerator types (``accelerator_type:H100`` resources); None when Ray is not initialised."""
    import ray

    if not ray.is_initialized():
        return None
    res = ray.cluster_resources()
    return {"nodes": sum(1 for n in ray.nodes() if n.get("Alive")), "CPU": res.get("CPU", 0), "GPU": res.get("GPU", 0),
            "accelerators": sorted(k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:"))}


def cluster_node_shapes() -> list[dict[str, float]]:
    """What each node of the connected cluster offers, for ``howeval.config.preflight.check_cluster_fit``: the
    total resources of every alive node (``ray.nodes()``), plus those of every node group the autoscaler may
    still start (its cluster config in the GCS, which KubeRay's autoscaler v2 reports: a worker group at
    ``replicas: 0`` has no node yet). [] when Ray is not initialised."""
    import ray
    from ray._private.state import state

    if not ray.is_initialized():
        return []
    shapes = [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]
    config = state.get_cluster_config()  # None without an autoscaler (a fixed cluster: its nodes are all there)
    if config is not None:
        shapes += [{k: float(v) for k, v in g.resources.items()} for g in config.node_group_configs if g.max_count != 0]
    return shapes
