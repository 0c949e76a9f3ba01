"""Ray wiring shared by the jobs: cluster start/join, Ray Data context, Parquet writes, record reads."""
from __future__ import annotations

import logging
import os

import pyarrow as pa

from howeval.config import RayConfig
from howeval.store import fs_and_path

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
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = os.environ.get("HOWEVAL_PROGRESS", "0") == "1"
    ctx.execution_options.verbose_progress = False


def cluster_summary() -> dict | None:
    """The Ray cluster this driver is connected to, for the run's provenance: alive nodes, CPUs, GPUs and
    accelerator types (``accelerator_type:H100`` resources); None when Ray is not initialised."""
    import ray

    if not ray.is_initialized():
        return None
    res = ray.cluster_resources()
    return {"nodes": sum(1 for n in ray.nodes() if n.get("Alive")), "CPU": res.get("CPU", 0), "GPU": res.get("GPU", 0),
            "accelerators": sorted(k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:"))}


def blocks(table: pa.Table, rows_per_block: int) -> list[pa.Table]:
    """Split a table into blocks of ``rows_per_block`` rows (one Ray Data block each: the resume unit)."""
    return [table.slice(i, rows_per_block) for i in range(0, table.num_rows, rows_per_block)]


def write_parquet(ds, uri: str, num_cpus: float = 0.25) -> None:
    """``Dataset.write_parquet`` (append) to a local folder or any fsspec URL (wrapped for pyarrow).

    Ray writes one file per block as blocks finish, so a killed job keeps what it finished.
    """
    fs, path = fs_and_path(uri)
    fs.makedirs(path, exist_ok=True)
    kwargs = {}
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    if "file" not in protocols and "local" not in protocols:
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        kwargs["filesystem"] = PyFileSystem(FSSpecHandler(fs))
    ds.write_parquet(path, ray_remote_args={"num_cpus": num_cpus}, **kwargs)
