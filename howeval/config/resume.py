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
    Data: a benchmark file of the stored run that the new config no longer lists (the report would keep
    its answers beside the new ones), or the same file under another benchmark ``name``.
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

Not detectable from the config: a model file or a manifest changed in place under the same path, or a
change in the project's own prompt code; use a new output URI after such changes.
"""
from __future__ import annotations

import json
from typing import Any

from howeval.config.base import ConfigError, validate
from howeval.config.sweep import ModelConfig, SweepConfig

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


def stale_fields(old: SweepConfig, new: SweepConfig, written: set[str] | None = None) -> list[tuple[str, Any, Any]]:
    """``(key path, stored value, new value)`` for every response-changing difference (see the module
    docstring), key paths as in the new config (``models.2.sampling.temperature``); ``[]`` = safe to resume.

    Args:
        written: names of the model configs that have stored responses; None = every config of ``old``.
    """
    diffs: list[tuple[str, Any, Any]] = []
    old_models = {m.name: m for m in old.models}
    for i, m in enumerate(new.models):
        o = old_models.get(m.name)
        if o is None or (written is not None and m.name not in written):
            continue
        common = set(o.modes) & set(m.modes)
        a, b = response_settings(o, common), response_settings(m, common)
        diffs += [(f"models.{i}.{k}", a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if written is None or written:
        new_names = {b.path: b.name for b in new.benchmarks}
        for j, b in enumerate(old.benchmarks):
            if b.path not in new_names:
                diffs.append((f"benchmarks (stored benchmarks.{j}.path)", b.path, None))
            elif new_names[b.path] != b.name:
                k = next(k for k, nb in enumerate(new.benchmarks) if nb.path == b.path)
                diffs.append((f"benchmarks.{k}.name", b.name, new_names[b.path]))
        if old.adapt is not None and new.adapt is not None:
            a = old.adapt.model_dump(exclude={"modes", "process_judge_cache"})  # where a cache lives changes no row
            b = new.adapt.model_dump(exclude={"modes", "process_judge_cache"})
            diffs += [(f"adapt.{k}", a[k], b[k]) for k in sorted(a) if a[k] != b[k]]
    return diffs


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


def refuse_stale_resume(new: SweepConfig) -> None:
    """Compare ``<output_uri>/run_config.json`` (if any) with ``new``, over the model configs that have
    responses stored under ``<output_uri>/responses/<name>/``.

    Raises:
        ConfigError: a response-changing difference (the message lists each field and the ways on), or a
            stored run_config.json that no longer validates.
    """
    from howeval.store import fs_and_path, join

    fs, path = fs_and_path(join(new.output_uri, "run_config.json"))
    if not fs.exists(path):
        return
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
    diffs = stale_fields(old, new, written)
    if diffs:
        raise ConfigError(stale_message(diffs, new.output_uri, new, old))
