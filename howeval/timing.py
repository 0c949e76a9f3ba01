"""Start-up marks (issue 43): where a run's time goes before its first request reaches the engine.

With ``$HOWEVAL_TIMINGS`` set to a file path, :func:`mark` appends one JSON line per event to it, from every
process of the run: the driver, and Ray's workers (a local Ray started by the driver passes its environment
on to them). Unset, :func:`mark` does nothing (one ``os.environ`` lookup). ``bench/peers_bench.py`` reads the
marks of one sweep and turns them into phases (:func:`startup_phases`): Ray start, driver preparation, actor
start with the model load left out, model load, first request, generation.
"""
from __future__ import annotations

import json
import os
import time

ENV = "HOWEVAL_TIMINGS"
"""Environment variable naming the marks file (JSON Lines, appended to)."""


def mark(event: str, **extra) -> None:
    """Append ``{"event", "t" (epoch seconds), "pid", **extra}`` to ``$HOWEVAL_TIMINGS`` when it is set."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps({"event": event, "t": time.time(), "pid": os.getpid(), **extra})
    with open(path, "a") as f:
        f.write(line + "\n")


def read_marks(path: str) -> list[dict]:
    """The marks in ``path``, in time order ([] when the file does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return sorted((json.loads(x) for x in f if x.strip()), key=lambda m: m["t"])


def _first(marks: list[dict], event: str, **match) -> float | None:
    ts = [m["t"] for m in marks if m["event"] == event and all(m.get(k) == v for k, v in match.items())]
    return min(ts) if ts else None


def _last(marks: list[dict], event: str) -> float | None:
    ts = [m["t"] for m in marks if m["event"] == event]
    return max(ts) if ts else None


def startup_phases(marks: list[dict], spawned: float, ended: float | None = None) -> dict[str, float | None]:
    """Seconds per phase of one sweep process started at epoch ``spawned`` (None where a mark is missing):

    - ``imports``: process start to the job's ``main`` (Python, howeval and library imports);
    - ``driver_preparation``: ``main`` to Ray's start, plus Ray's end to the pipelines' start (config, samples,
      preflight, provenance, planning);
    - ``ray_start``: ``ray.init``;
    - ``actor_start``: the pipelines' start to the first generate actor being ready, model load left out
      (Ray Data's executor, the worker process, its imports, the stage's other set-up); where that actor's
      ``actor_init_start`` mark carries its ``process_start`` (epoch), it splits into ``actor_process_wait``
      (the pipelines' start to the worker process's start: Ray Data's executor and the raylet; 0 for a worker
      started before), ``actor_process_boot`` (the later of the two to the stage's constructor: Python, Ray's
      worker, unpickling the stage) and ``actor_engine_import`` (the constructor to the model load: the
      engine's imports, e.g. ``import vllm``), None without it;
    - ``model_load``: the engine's constructor of that actor (``vllm.LLM``);
    - ``to_first_request``: process start to the engine's first request;
    - ``generation``: first request to last answer (every engine of the run);
    - ``to_report``: last answer to the report's start (the last judge batches, failures, provenance);
    - ``report``: the report (metrics, tables, plots, samples);
    - ``after_report``: the report's end to the process's exit (Ray's shutdown), when ``ended`` (epoch) is given.

    >>> m = [{"event": "main", "t": 2.0}, {"event": "ray_init_start", "t": 3.0}, {"event": "ray_init_end", "t": 5.0},
    ...      {"event": "pipelines_start", "t": 6.0}, {"event": "actor_init_start", "t": 7.0, "stage": "generate"},
    ...      {"event": "engine_load_start", "t": 9.0}, {"event": "engine_load_end", "t": 19.0},
    ...      {"event": "actor_ready", "t": 20.0, "stage": "generate"}, {"event": "first_request", "t": 20.5},
    ...      {"event": "answers", "t": 30.5}]
    >>> startup_phases(m, 0.0)["actor_start"], startup_phases(m, 0.0)["driver_preparation"]
    (4.0, 2.0)
    """
    main = _first(marks, "main")
    r0, r1 = _first(marks, "ray_init_start"), _first(marks, "ray_init_end")
    p0 = _first(marks, "pipelines_start")
    ready = _first(marks, "actor_ready", stage="generate")
    l0, l1 = _first(marks, "engine_load_start"), _first(marks, "engine_load_end")
    first, last = _first(marks, "first_request"), _last(marks, "answers")
    rep0, rep1 = _first(marks, "report_start"), _last(marks, "report_end")

    def span(a, b):
        return None if a is None or b is None else round(b - a, 3)

    load = span(l0, l1)
    actor = span(p0, ready)
    init = next((m for m in marks if m["event"] == "actor_init_start" and m.get("stage") == "generate"), None)
    born = None if init is None or init.get("process_start") is None or p0 is None else max(init["process_start"], p0)
    split = {"actor_process_wait": span(p0, born), "actor_process_boot": span(born, init["t"] if init else None),
             "actor_engine_import": span(init["t"] if init and born is not None else None, l0)}
    return {
        "imports": span(spawned, main),
        "driver_preparation": None if None in (main, r0, r1, p0) else round((r0 - main) + (p0 - r1), 3),
        "ray_start": span(r0, r1),
        "actor_start": None if actor is None or load is None else round(actor - load, 3),
        **split,
        "model_load": load,
        "to_first_request": span(spawned, first),
        "generation": span(first, last),
        "to_report": span(last, rep0),
        "report": span(rep0, rep1),
        "after_report": span(rep1, ended),
    }
