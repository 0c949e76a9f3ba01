"""Checks a job runs on its validated config before Ray starts, so that a typo costs seconds, not a cluster.

What is checked (each problem names the config key and the fix; all problems are reported at once):

- **Model paths** (``hf``/``vllm`` engines): a ``model`` that is a local path (absolute, or starting with
  ``.``/``~``) must exist; for ``hf`` with ``options.gguf_file`` the file must exist inside it. Hub ids
  (``org/name``) are not checked here (the engines load them from the local cache, offline).
- **Replay files** (``replay`` engine): a local ``options.path`` must exist.
- **Endpoint URLs** (``openai`` engine configs, LLM pattern judges, the verifier's LLM fallback):
  ``options.base_url`` (or the value of ``options.base_url_env``, which must be set) must parse as an
  ``http(s)://host[:port]/...`` URL.
- **API keys**: the variable named by ``options.api_key_env`` must be set and non-empty, unless the endpoint
  is on this machine (``localhost``, ``127.0.0.1``, ``::1``), where the engine sends a placeholder key.
- **Benchmark files**: must end in ``.jsonl`` or ``.parquet`` (the formats ``howeval.benchmarks.loaders``
  reads), and a local one must exist.

The functions are pure apart from reading ``env`` and testing paths with ``exists``; both are injectable.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from howeval.config.base import ConfigError
from howeval.config.sweep import BenchmarkConfig, JudgeEngineConfig, JudgesConfig, ModelConfig, SweepConfig

BENCHMARK_FORMATS = (".jsonl", ".parquet")
"""File endings ``howeval.benchmarks.loaders.load_benchmark`` reads (JSON lines; Parquet)."""

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
"""Endpoint hosts on this machine: the engine sends a placeholder key there, so no key variable is needed."""

Exists = Callable[[str], bool]


def _is_local_path(p: str) -> bool:
    return "://" not in p and p.startswith(("/", ".", "~"))


def _default_exists(p: str) -> bool:
    return Path(p).expanduser().exists()


def check_endpoint(opts: Mapping, key: str, who: str, env: Mapping[str, str]) -> list[str]:
    """Problems with an ``openai`` engine's ``options`` (a validated ``OpenAIOptions`` dumped, or the raw
    mapping): the base URL and the API key variable. ``key`` is the config path of ``options``."""
    problems = []
    base_url = opts.get("base_url")
    url_key = f"{key}.base_url"
    if base_url is None and opts.get("base_url_env"):
        var = opts["base_url_env"]
        url_key = f"{key}.base_url_env"
        base_url = env.get(var) or None
        if base_url is None:
            problems.append(f"{url_key}: environment variable {var} is not set ({who} reads its endpoint URL from it). "
                            f"Fix: export {var}=https://host/v1, or give {key}.base_url instead.")
    host = "api.openai.com"  # the client's default endpoint when no URL is given
    if base_url is not None:
        parts = urlsplit(base_url)
        try:
            parts.port  # noqa: B018 -- raises on a port that is not a number
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"{url_key}: endpoint URL {base_url!r} does not parse as http(s)://host[:port]/path "
                            f"({who}). Fix: give the server's full URL, e.g. http://127.0.0.1:8000/v1.")
            return problems
        host = parts.hostname
    var = opts.get("api_key_env", "OPENAI_API_KEY")
    if host not in LOCAL_HOSTS and not env.get(var):
        problems.append(f"{key}.api_key_env: environment variable {var} is not set ({who} calls {base_url or 'the OpenAI default endpoint'}). "
                        f"Fix: export {var}=<key> before starting the job (on a cluster: in the head's and workers' "
                        f"environment, e.g. a Kubernetes secretKeyRef), or set {key}.api_key_env to the variable "
                        f"that holds the key (for a server without auth, any value, e.g. {var}=EMPTY).")
    return problems


def check_model(m: ModelConfig, key: str, env: Mapping[str, str], exists: Exists = _default_exists) -> list[str]:
    """Problems with one model config (``key`` = its config path, e.g. ``models.3``)."""
    who = f"config {m.name!r}"
    opts = m.engine_options().model_dump()
    problems = []
    if m.engine in ("hf", "vllm") and m.model is not None and _is_local_path(m.model):
        if not exists(m.model):
            problems.append(f"{key}.model: model path {m.model!r} does not exist ({who}, engine {m.engine}). "
                            f"Fix: point it at the model folder (mounted on every node that runs the engine), "
                            f"or leave it unset for the embedded default (hf).")
        elif m.engine == "hf" and opts.get("gguf_file") and not exists(str(Path(m.model) / opts["gguf_file"])):
            problems.append(f"{key}.options.gguf_file: {opts['gguf_file']!r} is not in {m.model!r} ({who}). "
                            f"Fix: give the GGUF file's name inside the model folder, or drop gguf_file for a regular checkpoint.")
    if m.engine == "replay" and _is_local_path(opts["path"]) and not exists(opts["path"]):
        problems.append(f"{key}.options.path: replay file {opts['path']!r} does not exist ({who}). "
                        f"Fix: give the JSONL of recorded responses.")
    if m.engine == "openai":
        problems += check_endpoint(opts, f"{key}.options", who, env)
    return problems


def check_benchmark(b: BenchmarkConfig, key: str, exists: Exists = _default_exists) -> list[str]:
    """Problems with one benchmark file (``key`` = e.g. ``benchmarks.0``)."""
    p = b.path
    endings = BENCHMARK_FORMATS + ((".json",) if b.format != "manifest" else ())  # released JSON files (released.read_rows)
    if not p.lower().endswith(endings):
        return [f"{key}.path: {p!r} is not a benchmark file this project reads (formats read: "
                f"{', '.join(BENCHMARK_FORMATS)}: a manifest in JSON lines or Parquet). Fix: convert it, or give the "
                f"manifest.jsonl / .parquet file itself (not its folder)."]
    if _is_local_path(p) and not exists(p):
        return [f"{key}.path: benchmark file {p!r} does not exist. Fix: correct the path (relative paths in a "
                f"config resolve against the config file's folder; --data paths against the current directory)."]
    return []


def check_llm(llm: JudgeEngineConfig | None, key: str, who: str, env: Mapping[str, str]) -> list[str]:
    """Problems with an LLM judge's engine block (``None``: nothing to check)."""
    if llm is None:
        return []
    from howeval.config.engines import OpenAIOptions

    return check_endpoint(OpenAIOptions.model_validate(llm.options).model_dump(), f"{key}.options", who, env)


def check_judges(j: JudgesConfig, key: str = "judges", env: Mapping[str, str] | None = None,
                 only: Iterable[str] | None = None) -> list[str]:
    """Problems with the judges: every LLM pattern judge (those named in ``only``, when given) and the
    verifier's LLM fallback."""
    env = os.environ if env is None else env
    only = None if only is None else set(only)
    problems = check_llm(j.verifier.llm_fallback, f"{key}.verifier.llm_fallback", "the verifier's LLM fallback", env)
    for i, pj in enumerate(j.pattern):
        if pj.kind == "llm" and (only is None or pj.name in only):
            problems += check_llm(pj.llm, f"{key}.pattern.{i}.llm", f"pattern judge {pj.name!r}", env)
    return problems


def preflight(cfg: SweepConfig, env: Mapping[str, str] | None = None, exists: Exists = _default_exists) -> list[str]:
    """Every problem of a sweep config that would fail only after Ray started; ``[]`` when none."""
    env = os.environ if env is None else env
    problems: list[str] = []
    for i, b in enumerate(cfg.benchmarks):
        problems += check_benchmark(b, f"benchmarks.{i}", exists)
    for i, m in enumerate(cfg.models):
        problems += check_model(m, f"models.{i}", env, exists)
    problems += check_judges(cfg.judges, "judges", env)
    return problems


def builder_preflight(cfg, env: Mapping[str, str] | None = None, exists: Exists = _default_exists) -> list[str]:
    """:func:`preflight` for a builder job's config (``BuildRefsConfig``, ``BuildKeyStepsConfig``): each benchmark,
    the ``writer`` or ``writers`` and the ``checker`` (a local model path that is missing, an endpoint without its
    API key). One line per problem, naming the config key and the fix; ``[]`` when none."""
    env = os.environ if env is None else env
    problems = [p for i, b in enumerate(cfg.benchmarks) for p in check_benchmark(b, f"benchmarks.{i}", exists)]
    models = [("writer", cfg.writer)] if getattr(cfg, "writer", None) is not None else []
    models += [(f"writers.{i}", m) for i, m in enumerate(getattr(cfg, "writers", None) or [])]
    if getattr(cfg, "checker", None) is not None:
        models.append(("checker", cfg.checker))
    return problems + [p for key, m in models for p in check_model(m, key, env, exists)]


def raise_problems(problems: Iterable[str], source: str) -> None:
    """Raise :class:`ConfigError` listing ``problems`` under ``source``; return when there are none."""
    problems = list(problems)
    if problems:
        raise ConfigError(f"{source}: {len(problems)} problem(s) found before starting:\n"
                          + "\n".join(f"  {p}" for p in problems))


def require_ready(cfg: SweepConfig | JudgesConfig, source: str = "config", env: Mapping[str, str] | None = None,
                  only: Iterable[str] | None = None) -> SweepConfig | JudgesConfig:
    """The one-line hook of a job's ``main`` before ``init_ray``. A sweep config gets every check above and
    then the stale-resume guard (``howeval.config.resume.refuse_stale_resume``); a re-judging job passes
    its :class:`JudgesConfig` and gets the judge checks only (``only``: the judge names it will run).

    Returns the config to run: ``cfg``, or for a resumed sweep ``cfg`` with the stored run's names on the
    benchmarks found under a new path (``refuse_stale_resume``).

    Raises:
        ConfigError: one line per problem, each naming the config key and the fix; or the stale-resume refusal.
    """
    if isinstance(cfg, JudgesConfig):
        raise_problems(check_judges(cfg, "judges", env, only), source)
        return cfg
    raise_problems(preflight(cfg, env), source)
    from howeval.config.resume import refuse_stale_resume

    return refuse_stale_resume(cfg)


# ------------------------------------------------------------------ the cluster's shape ------------------

NodeShape = Mapping[str, float]
"""What one node (or one node type the autoscaler can start) offers: Ray resource name -> amount, e.g.
``{"CPU": 44, "GPU": 4, "memory": 4.1e11, "accelerator_type:H100": 1}`` (``ray.nodes()[i]["Resources"]``)."""


def replica_demand(m: ModelConfig) -> dict[str, float]:
    """Ray resources one replica of a model config needs *on one node* (an actor is never split):
    ``CPU`` = ``resources.num_cpus``; ``GPU`` = ``resources.num_gpus``, and for a ``vllm`` engine on GPUs at
    least ``tensor_parallel_size x pipeline_parallel_size`` (one engine's workers share the actor's node);
    ``accelerator_type:<T>`` when ``resources.accelerator_type`` is set (Ray's node label resource).

    >>> from howeval.config.sweep import ModelConfig
    >>> replica_demand(ModelConfig(name="big", engine="vllm", model="/m", modes={"NT": {}},
    ...                            options={"tensor_parallel_size": 8}, resources={"num_gpus": 8, "num_cpus": 16}))
    {'CPU': 16.0, 'GPU': 8.0}
    """
    r = m.resources
    gpus = float(r.num_gpus)
    if m.engine == "vllm" and gpus > 0:
        kw = m.engine_options().all_engine_kwargs()
        gpus = max(gpus, float((kw.get("tensor_parallel_size") or 1) * (kw.get("pipeline_parallel_size") or 1)))
    out = {"CPU": float(r.num_cpus), "GPU": gpus}
    if r.accelerator_type:
        out[f"accelerator_type:{r.accelerator_type}"] = 0.001  # Ray's label resource: any amount > 0 on the node
    return {k: v for k, v in out.items() if v > 0 or k == "CPU"}


def _fmt(shape: Mapping[str, float]) -> str:
    parts = []
    for k in ("GPU", "CPU"):
        if shape.get(k):
            parts.append(f"{shape[k]:g} {k}s")
    parts += sorted(k.split(":", 1)[1] for k in shape if k.startswith("accelerator_type:"))
    return ", ".join(parts) or "no CPUs or GPUs"


def fits(demand: Mapping[str, float], node: NodeShape) -> bool:
    """Whether one node offers every resource of ``demand`` (amounts compared with a 1e-9 tolerance).

    >>> fits({"CPU": 16, "GPU": 8}, {"CPU": 44, "GPU": 4})
    False
    """
    return all(node.get(k, 0.0) + 1e-9 >= v for k, v in demand.items())


def check_cluster_fit(cfg: SweepConfig, nodes: Iterable[NodeShape], where: str = "this cluster") -> list[str]:
    """One problem per model config whose replica fits no node of the cluster: Ray would keep its actors
    pending forever (a RayJob until its ``activeDeadlineSeconds``). Each names the config, what one replica
    needs, the largest node, and the fixes. ``nodes``: every alive node and every node type the autoscaler
    may still start (the caller reads them from Ray); an empty list checks nothing (shape unknown).

    A config fits when *some* node offers all of its demand at once; the largest node named is the one with
    the most GPUs (then CPUs).
    """
    nodes = [dict(n) for n in nodes]
    if not nodes:
        return []
    largest = max(nodes, key=lambda n: (n.get("GPU", 0.0), n.get("CPU", 0.0)))
    problems = []
    unfit = []
    for i, m in enumerate(cfg.models):
        need = replica_demand(m)
        if any(fits(need, n) for n in nodes):
            continue
        unfit.append(i)
        fixes = []
        if need.get("GPU", 0) > largest.get("GPU", 0):
            g = int(largest.get("GPU", 0))
            fixes.append(f"lower models.{i}.resources.num_gpus (and options.tensor_parallel_size) to <= {g}" if g
                         else "run it on a cluster with GPU nodes")
            fixes.append("run it on a cluster whose node has enough GPUs (k8s/overlays/1x8)")
        if need.get("CPU", 0) > largest.get("CPU", 0):
            fixes.append(f"lower models.{i}.resources.num_cpus to <= {largest.get('CPU', 0):g}")
        if any(k.startswith("accelerator_type:") for k in need):
            fixes.append(f"set models.{i}.resources.accelerator_type to one the cluster has, or null")
        if not fixes:  # each resource is somewhere, never all on one node
            fixes.append(f"lower models.{i}.resources so one node holds them all (nodes: "
                         f"{'; '.join(sorted({_fmt(n) for n in nodes}))})")
        problems.append(f"models.{i} (config {m.name!r}): one replica needs {_fmt(need)} on one node, but the largest "
                        f"node of {where} offers {_fmt(largest)}: its actors would stay pending forever. "
                        f"Fix: {'; or '.join(fixes)}")
    if unfit:
        drop = " ".join(f"~models.{i}" for i in sorted(unfit, reverse=True))
        problems.append(f"to run the other configs without these, add the overrides {drop} (highest index first)")
    return problems
