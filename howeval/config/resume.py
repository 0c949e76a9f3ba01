"""Stale-resume guard: a rerun into an output that holds answers made with other settings is refused.

A sweep resumes by skipping the keys ``(sample_id, config, mode)`` already written. That is only right
when the stored answers were made with the settings of the new run; otherwise the run would mix old
answers with new settings while ``run_config.json`` claims the new ones. :func:`stale_fields` compares
the stored ``run_config.json`` with the new config, field by field, on what changes a response:

Counted (a difference refuses the resume), per model config present in both and already written:
    ``engine``, ``model``, ``vision``, ``sampling.*`` (max_tokens, temperature, top_p, seed),
    ``modes.<M>.*`` for each mode in both (system_prompt, chat_template_kwargs, reasoning_effort,
    extra_body, max_tokens: the prompt template and mode switch), and every engine option except the
    ones in :data:`NON_RESPONSE_OPTIONS`.
    Data: a benchmark of the stored run whose rows the new config no longer lists (the report would keep
    its answers beside the new ones), or the same rows under another explicit benchmark ``name``. A
    benchmark is identified by its content, never its path: the sweep records per benchmark the digest of
    the rows it read (``benchmarks.N.content``: the first ``rows`` rows of the file, bad ones included;
    ``howeval.store.RowsDigest``), and a stored benchmark is found again in the new config when the first
    ``rows`` rows of one of its files have that digest. So a manifest moved to another folder, re-uploaded,
    unpacked by a Ray runtime env under a new ``session_*/_ray_pkg_<hash>/`` folder, re-exported to Parquet,
    or grown by rows appended after the ones used (or by a larger ``limit``) resumes; a manifest with one of
    those rows changed, removed or reordered is refused, the stored and the new digest printed. A matched
    benchmark without an explicit ``name`` keeps the stored run's name (a name drawn from a new folder
    would split the report).
    A ``run_config.json`` written before benchmark contents were recorded (no ``content``): the stored path
    is the identity where it can be: the same path in the new config matches (as before); a stored file that
    still exists matches a new file with the same rows (whole files compared); a stored file that is gone
    (a Ray session folder of a lost cluster) matches the new benchmark with the same name and file name,
    with a note on stderr that its content could not be checked (the new run_config.json then records it).
    AdaptMMBench episodes (``adapt.*`` except ``modes`` and ``process_judge_cache``), whose rows are keyed the same way.

Not counted (free to change on a resume):
    ``judges`` (judgments are keyed by judge ``name@version``), ``ray``, ``resources``, ``name``, ``overrides``
    (the record of the command line; what it changed is compared in the fields above),
    ``skip_bad_rows``, ``crystal`` (step rows are keyed by tau/alpha/order/embedder), ``benchmarks.*.task`` (Table 6 score rows are
    keyed by criterion), ``benchmarks.*.limit``
    (a larger limit adds rows made with the same settings), models, modes or benchmarks *added*
    (new keys), models or modes *removed*, and the options in :data:`NON_RESPONSE_OPTIONS`: throughput,
    concurrency, timeouts and where the same model is reached (``base_url``, ``base_url_env``,
    ``api_key_env``: moving a server keeps its model; a different model must change ``model``).

Not detectable from the config: a model file or an image changed in place under the same path, or a
change in the project's own prompt code; use a new output URI after such changes.
"""
from __future__ import annotations

import json
import posixpath
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from howeval.config.base import ConfigError, validate
from howeval.config.sweep import BenchmarkConfig, BenchmarkContent, ModelConfig, SweepConfig, benchmark_name
from howeval.store import RowsDigest, fs_and_path, iter_rows

NON_RESPONSE_OPTIONS: dict[str, frozenset[str]] = {
    "hf": frozenset({"batch_size", "torch_threads", "device", "device_map", "max_memory", "offload_folder",
                     "offload_buffers", "cache_dir", "local_files_only", "force_download", "token", "proxies"}),
    "openai": frozenset({"base_url", "base_url_env", "api_key_env", "max_concurrency", "qps", "timeout_s", "max_retries"}),
    "vllm": frozenset({"tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "enforce_eager",
                       "max_num_seqs", "max_num_batched_tokens", "enable_expert_parallel", "enable_prefix_caching",
                       "enable_chunked_prefill", "swap_space", "disable_log_stats", "distributed_executor_backend"}),
    "replay": frozenset({"delay_s"}),
}
"""Engine options that change throughput or where a model is reached, not what it answers."""


def _flat(prefix: str, d: dict) -> dict[str, Any]:
    return {f"{prefix}.{k}": v for k, v in d.items()}


def response_settings(m: ModelConfig, modes: set[str] | None = None) -> dict[str, Any]:
    """The settings of ``m`` that change a response, flattened to config key paths (``sampling.top_p``,
    ``modes.T.max_tokens``, ``options.dtype``, ...); ``modes`` restricts the mode blocks compared."""
    out: dict[str, Any] = {"engine": m.engine, "model": m.model, "vision": m.vision}
    out |= _flat("sampling", m.sampling.model_dump())
    skip = NON_RESPONSE_OPTIONS.get(m.engine, frozenset())
    opts = m.engine_options()
    # vllm: EngineArgs given flat or under engine_kwargs, compared as one set of arguments
    opts = opts.all_engine_kwargs() if hasattr(opts, "all_engine_kwargs") else opts.model_dump()
    out |= {k: v for k, v in _flat("options", opts).items() if k.split(".", 1)[1] not in skip}
    for mode, mc in sorted(m.modes.items()):
        if modes is None or mode in modes:
            out |= _flat(f"modes.{mode}", mc.model_dump())
    return out


ContentOf = Callable[[BenchmarkConfig, "int | None"], BenchmarkContent]
"""``(benchmark, rows) -> the content of its first rows rows`` (None = every row): :func:`rows_content`."""


def rows_content(b: BenchmarkConfig, rows: int | None = None) -> BenchmarkContent:
    """The digest of the first ``rows`` rows of ``b``'s file as read (None: all), as the loader records it
    (``howeval.benchmarks.loaders.LoadResult.content``); fewer rows when the file has fewer.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    d = RowsDigest()
    if rows != 0:
        for _, row in iter_rows(b.path, json_array=b.format != "manifest" and b.path.endswith(".json")):
            d.update(row)
            if rows is not None and d.rows >= rows:
                break
    return BenchmarkContent(rows=d.rows, sha256=d.hexdigest())


def _describe(b: BenchmarkConfig, c: BenchmarkContent | None) -> str:
    what = f"first {c.rows} rows sha256:{c.sha256[:12]}" if c is not None else "content not recorded"
    return f"{benchmark_name(b.path, b.name)}: {what} ({b.path})"


def _exists(path: str) -> bool:
    fs, p = fs_and_path(path)
    try:
        return fs.exists(p)
    except OSError:
        return False


@dataclass
class BenchmarkMatch:
    """How the stored run's benchmarks are found in the new config: ``diffs`` as in :func:`stale_fields`,
    ``names`` (new index -> the stored name, for a matched benchmark without an explicit name whose drawn
    name differs) and ``notes`` (stored entries matched without their content being checked)."""

    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def match_benchmarks(old: SweepConfig, new: SweepConfig, content_of: ContentOf = rows_content) -> BenchmarkMatch:
    """Find each stored benchmark of ``old`` in ``new`` by its content (the module docstring's rules).

    Returns a :class:`BenchmarkMatch`; an unmatched stored benchmark is the diff
    ``("benchmarks (stored benchmarks.J)", "<name>: first R rows sha256:<12 hex> (<stored path>)", <now>)``
    where ``<now>`` describes the new benchmark of the same name over the same rows, or says that none is listed.
    """
    cache: dict[tuple[str, int | None], BenchmarkContent] = {}

    def content(b: BenchmarkConfig, rows: int | None) -> BenchmarkContent:
        if (b.path, rows) not in cache:
            cache[(b.path, rows)] = content_of(b, rows)
        return cache[(b.path, rows)]

    out = BenchmarkMatch()
    for j, ob in enumerate(old.benchmarks):
        oname = benchmark_name(ob.path, ob.name)
        same_name = [k for k, nb in enumerate(new.benchmarks) if benchmark_name(nb.path, nb.name) == oname]
        if ob.content is not None:
            found = next((k for k, nb in enumerate(new.benchmarks) if content(nb, ob.content.rows) == ob.content), None)
            now = (_describe(new.benchmarks[same_name[0]], content(new.benchmarks[same_name[0]], ob.content.rows))
                   if same_name else None)
        else:  # written before contents were recorded: the path where it can be (module docstring)
            found = next((k for k, nb in enumerate(new.benchmarks) if nb.path == ob.path), None)
            if found is None and _exists(ob.path):
                whole = content(ob, None)
                found = next((k for k, nb in enumerate(new.benchmarks) if content(nb, None) == whole), None)
            elif found is None:
                found = next((k for k in same_name
                              if posixpath.basename(new.benchmarks[k].path) == posixpath.basename(ob.path)), None)
                if found is not None:
                    out.notes.append(
                        f"stored benchmarks.{j} ({oname}: {ob.path}) is gone and was stored without its content "
                        f"(an older run_config.json): resumed as benchmarks.{found} ({new.benchmarks[found].path}) by "
                        "its name and file name, rows not compared; this run records their digest")
            now = _describe(new.benchmarks[same_name[0]], None) if same_name else None
        if found is None:
            listed = ", ".join(benchmark_name(nb.path, nb.name) for nb in new.benchmarks)
            out.diffs.append((f"benchmarks (stored benchmarks.{j})", _describe(ob, ob.content),
                              now or f"no benchmark of these rows listed (the new config lists: {listed})"))
            continue
        nb = new.benchmarks[found]
        nname = benchmark_name(nb.path, nb.name)
        if nname != oname:
            if nb.name is None:
                out.names[found] = oname
            else:
                out.diffs.append((f"benchmarks.{found}.name", oname, nname))
    return out


def stale_fields(old: SweepConfig, new: SweepConfig, written: set[str] | None = None,
                 content_of: ContentOf = rows_content) -> list[tuple[str, Any, Any]]:
    """``(key path, stored value, new value)`` for every response-changing difference (see the module
    docstring), key paths as in the new config (``models.2.sampling.temperature``); ``[]`` = safe to resume.

    Args:
        written: names of the model configs that have stored responses; None = every config of ``old``.
        content_of: reads a new benchmark's content (:func:`rows_content`; a test may pass a stub).

    Raises:
        FileNotFoundError: a benchmark file of ``new`` is missing (preflight names it first).
    """
    return _stale(old, new, written, content_of)[0]


def _stale(old: SweepConfig, new: SweepConfig, written: set[str] | None,
           content_of: ContentOf) -> tuple[list[tuple[str, Any, Any]], BenchmarkMatch]:
    diffs: list[tuple[str, Any, Any]] = []
    old_models = {m.name: m for m in old.models}
    for i, m in enumerate(new.models):
        o = old_models.get(m.name)
        if o is None or (written is not None and m.name not in written):
            continue
        common = set(o.modes) & set(m.modes)
        a, b = response_settings(o, common), response_settings(m, common)
        diffs += [(f"models.{i}.{k}", a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    match = BenchmarkMatch()
    if written is None or written:
        match = match_benchmarks(old, new, content_of)
        diffs += match.diffs
        if old.adapt is not None and new.adapt is not None:
            a = old.adapt.model_dump(exclude={"modes", "process_judge_cache"})  # where a cache lives changes no row
            b = new.adapt.model_dump(exclude={"modes", "process_judge_cache"})
            diffs += [(f"adapt.{k}", a[k], b[k]) for k in sorted(a) if a[k] != b[k]]
    return diffs, match


def override_of(key: str, overrides: list[str]) -> str | None:
    """The command-line override (a ``SweepConfig.overrides`` item) that set config key ``key``, or None.

    >>> override_of("models.0.sampling.temperature", ["models.0.sampling.temperature=0.7"])
    'models.0.sampling.temperature=0.7'
    >>> override_of("models.1.modes.T.max_tokens", ["--limit=4", "--max-tokens=32"])
    '--max-tokens=32'
    """
    from howeval.config.base import dotlist_keys

    flags = [o for o in overrides if o.startswith("--")]
    found = dotlist_keys([o for o in overrides if not o.startswith("--")]).get(key)
    if found is None and key.endswith("max_tokens") and key.startswith("models."):
        found = next((f for f in reversed(flags) if f.startswith("--max-tokens=")), None)
    return found


def _why(key: str, old: SweepConfig | None, new: SweepConfig) -> str:
    now = override_of(key, new.overrides)
    if now is not None:
        return f" (now set on the command line: {now})"
    before = override_of(key, old.overrides) if old is not None else None
    return f" (the stored run set it on its command line: {before}; give it again to resume)" if before else ""


def stale_message(diffs: list[tuple[str, Any, Any]], output_uri: str, new: SweepConfig,
                  old: SweepConfig | None = None) -> str:
    """The refusal: what differs (and which command-line override of the new or the stored run set it) and the
    three ways on (new output, new config name, delete the old answers)."""
    lines = [f"{output_uri} holds answers made with other settings; resuming would mix them with the new ones "
             f"({len(diffs)} difference(s) from its run_config.json):"]
    lines += [f"  {k}: stored {v_old!r}, now {v_new!r}{_why(k, old, new)}" for k, v_old, v_new in diffs]
    names = sorted({new.models[int(k.split(".")[1])].name for k, _, _ in diffs if k.startswith("models.")})
    lines.append("Fix: write to a new output URI (--output or output_uri), or give each changed model config a "
                 "new name (models.N.name) so its answers are kept apart"
                 + (f"; or, to discard the old answers, delete {output_uri}/responses/<config>/ for "
                    f"{', '.join(names)} (and their judgments)" if names else "")
                 + ". Fields that do not change a response (judges, ray, resources, limits, concurrency) never block a resume.")
    return "\n".join(lines)


def refuse_stale_resume(new: SweepConfig, content_of: ContentOf = rows_content) -> SweepConfig:
    """Compare ``<output_uri>/run_config.json`` (if any) with ``new``, over the model configs that have
    responses stored under ``<output_uri>/responses/<name>/``.

    Returns ``new``, or, when a stored benchmark is found under a new path without an explicit name whose drawn
    name differs, ``new`` with the stored name set on it (its rows keep their benchmark). Notes on stored
    entries matched without a content check go to stderr.

    Raises:
        ConfigError: a response-changing difference (the message lists each field and the ways on), or a
            stored run_config.json that no longer validates.
    """
    from howeval.store import join

    fs, path = fs_and_path(join(new.output_uri, "run_config.json"))
    if not fs.exists(path):
        return new
    with fs.open(path, "r") as f:
        raw = json.loads(f.read())
    raw["output_uri"] = new.output_uri
    try:
        old = validate(SweepConfig, raw, f"{new.output_uri}/run_config.json")
    except ConfigError as e:
        raise ConfigError(f"{e}\nFix: this output was written by another version of the project; use a new output URI.") from None
    rfs, rpath = fs_and_path(join(new.output_uri, "responses"))
    written = set()
    if rfs.exists(rpath):
        written = {p.rstrip("/").rsplit("/", 1)[-1] for p in rfs.ls(rpath, detail=False)
                   if rfs.isdir(p) and rfs.find(p)}
    diffs, match = _stale(old, new, written, content_of)
    if diffs:
        raise ConfigError(stale_message(diffs, new.output_uri, new, old))
    for note in match.notes:
        print(f"note: {note}", file=sys.stderr)
    if not match.names:
        return new
    benchmarks = [b.model_copy(update={"name": match.names[k]}) if k in match.names else b
                  for k, b in enumerate(new.benchmarks)]
    return new.model_copy(update={"benchmarks": benchmarks})
