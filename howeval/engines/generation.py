"""The model's own generation defaults, and a config's overrides on top of them (the paper's "official
default inference settings").

A sampling field the config leaves unset (None) is the model's default; a field it sets overrides it:

- ``vllm``: the defaults of ``LLM.get_default_sampling_params()`` (vLLM reads the model's
  ``generation_config.json``), :func:`vllm_model_defaults`;
- ``hf``: the model's ``generation_config`` (``do_sample`` included: a model whose config says greedy
  stays greedy unless the config sets a temperature), :func:`hf_model_defaults`;
- ``openai``: unset fields are left out of the request, so the server applies its own.

:func:`generation_settings` is what a sweep records per config in ``run_config.json``
(``generation_settings``): the overrides, the model defaults read from a local
``generation_config.json`` (none are downloaded), and the settings that result.
"""
from __future__ import annotations

import json
import os
from typing import Any

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "presence_penalty", "repetition_penalty")
"""The sampling settings a model's generation config may set and a config may override (vLLM names)."""

# generation_config.json key -> our name (the keys vLLM's get_diff_sampling_param reads)
_GEN_CONFIG_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "min_p": "min_p",
                    "repetition_penalty": "repetition_penalty", "presence_penalty": "presence_penalty"}

__all__ = ["SAMPLING_FIELDS", "request_overrides", "merge_sampling", "read_generation_config",
           "vllm_model_defaults", "hf_model_defaults", "generation_settings"]


def request_overrides(req: Any) -> dict[str, Any]:
    """The sampling fields a request sets (not None), by :data:`SAMPLING_FIELDS` name.

    >>> from howeval.engines.base import ChatRequest
    >>> request_overrides(ChatRequest(messages=[], temperature=None, top_p=None, top_k=20))
    {'top_k': 20}
    """
    return {k: getattr(req, k) for k in SAMPLING_FIELDS if getattr(req, k, None) is not None}


def merge_sampling(model_defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """The settings that apply: the model's defaults, then the config's overrides on top.

    >>> merge_sampling({"temperature": 0.7, "top_k": 20}, {"temperature": 0.0})
    {'temperature': 0.0, 'top_k': 20}
    """
    return {**{k: v for k, v in model_defaults.items() if v is not None}, **overrides}


def read_generation_config(model_path: str | None) -> dict[str, Any] | None:
    """The sampling fields of ``<model_path>/generation_config.json`` (plus ``do_sample`` when set), or
    None when ``model_path`` is not a local folder with that file (a hub id is never downloaded here).

    Raises:
        ValueError: the file exists but is not a JSON object.
    """
    if not model_path or not os.path.isdir(model_path):
        return None
    path = os.path.join(model_path, "generation_config.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    out = {ours: raw[key] for key, ours in _GEN_CONFIG_KEYS.items() if raw.get(key) is not None}
    if "do_sample" in raw:
        out["do_sample"] = bool(raw["do_sample"])
    return out


def vllm_model_defaults(llm: Any) -> dict[str, Any]:
    """The sampling fields the model's generation config sets, as vLLM applies them
    (``LLM.get_default_sampling_params()``, compared with vLLM's plain ``SamplingParams()``).

    Returns ``{}`` when the model sets none (or this vLLM has no such method).
    """
    get = getattr(llm, "get_default_sampling_params", None)
    if get is None:
        return {}
    from vllm import SamplingParams

    default, plain = get(), SamplingParams()
    return {k: getattr(default, k) for k in SAMPLING_FIELDS
            if hasattr(default, k) and getattr(default, k) != getattr(plain, k, None)}


def hf_model_defaults(generation_config: Any) -> dict[str, Any]:
    """The sampling fields (and ``do_sample``) a transformers model's ``generation_config`` sets, where
    they differ from transformers' own defaults (``GenerationConfig.to_diff_dict()``).

    >>> from transformers import GenerationConfig
    >>> hf_model_defaults(GenerationConfig(do_sample=True, temperature=0.6, top_k=20))
    {'temperature': 0.6, 'top_k': 20, 'do_sample': True}
    """
    if generation_config is None:
        return {}
    diff = generation_config.to_diff_dict()
    out = {ours: diff[key] for key, ours in _GEN_CONFIG_KEYS.items() if diff.get(key) is not None}
    if "do_sample" in diff:
        out["do_sample"] = bool(diff["do_sample"])
    return out


def generation_settings(model_cfg: Any) -> dict[str, Any]:
    """What a config's engine applies, for ``run_config.json``: ``{"engine", "overrides", "model_defaults",
    "model_defaults_source", "applied"}``.

    ``overrides``: the sampling fields the config sets. ``model_defaults``: read from the model folder's
    ``generation_config.json`` (hf, vllm); None when they cannot be read here (a hub id, the embedded
    GGUF, or the openai engine: the server's own). ``applied``: defaults then overrides, or for openai
    the overrides with every other field ``"server default"``.
    """
    overrides = model_cfg.sampling.overrides()
    base = {"engine": model_cfg.engine, "overrides": overrides, "max_tokens": model_cfg.sampling.max_tokens,
            "seed": model_cfg.sampling.seed}
    if model_cfg.engine == "openai":
        applied = {k: overrides.get(k, "server default") for k in SAMPLING_FIELDS}
        return {**base, "model_defaults": None, "model_defaults_source": "the server (fields left out of the request)",
                "applied": applied}
    defaults = read_generation_config(model_cfg.model)
    if defaults is None:
        src = ("embedded model (no generation_config.json)" if model_cfg.model is None else
               f"{model_cfg.model!r} is not a local folder: the engine applies the model's generation config at load")
        return {**base, "model_defaults": None, "model_defaults_source": src, "applied": dict(overrides)}
    applied = merge_sampling({k: v for k, v in defaults.items() if k != "do_sample"}, overrides)
    if model_cfg.engine == "hf" and "temperature" not in overrides and defaults.get("do_sample") is False:
        applied = {"greedy (generation_config do_sample: false)": True, **applied}
    return {**base, "model_defaults": defaults,
            "model_defaults_source": os.path.join(model_cfg.model, "generation_config.json"), "applied": applied}
