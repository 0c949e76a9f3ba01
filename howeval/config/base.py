"""The one strict config base, the one YAML loader and the one validation-error formatter of every job.

Every config class of the project (sweep, build-refs, training, PatternRM training, reward server, engine
options) derives from :class:`StrictModel`: frozen, unknown keys are errors (STYLE rule 1). Every job
loads its YAML with :func:`load_yaml_config` and reports a bad file as :class:`ConfigError`, whose
message :func:`format_validation_error` writes one line per bad key path, e.g.::

    configs/demo.yaml: 1 config error(s):
      models.0.sampling.max_tokens: Input should be greater than or equal to 1 (got 0)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every config model: immutable (``frozen``) and unknown keys rejected (``extra="forbid"``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ConfigError(ValueError):
    """A config that does not validate; the message names the source and every bad key path."""


def format_validation_error(err: ValidationError, source: str) -> str:
    """One line per error: ``<key.path>: <rule> (got <value, first 80 chars>)``, under a ``<source>:`` header.

    Mappings are shown as ``{...}`` (their keys are in the path already).
    """
    lines = [f"{source}: {len(err.errors())} config error(s):"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        got_s = repr(got) if not isinstance(got, dict) else "{...}"
        lines.append(f"  {loc}: {e['msg']} (got {got_s[:80]})")
    return "\n".join(lines)


def validate(cls: type[M], raw: Any, source: str) -> M:
    """``cls.model_validate(raw)`` with a pydantic error turned into :class:`ConfigError` (see
    :func:`format_validation_error`); ``source`` names where ``raw`` came from (a file, "reward server config")."""
    try:
        return cls.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, source)) from None


def with_changes(model: M, source: str, **changes: Any) -> M:
    """``model.model_copy(update=changes)``, checked: the changed fields and the model's validators run again
    (``model_copy`` alone checks nothing). Unchanged fields keep their typed objects: nothing is dumped to a
    dict. ``source`` names where the changes came from (a CLI flag) in the error.

    >>> class Ray(StrictModel):
    ...     num_cpus: int = 1
    >>> with_changes(Ray(), "--num-cpus", num_cpus=2).num_cpus
    2

    Raises:
        ConfigError: a change does not validate (the key path and value named under ``source``).
    """
    return validate(type(model), {**dict(model), **changes}, source)


def merge_overrides(raw: dict, overrides: Mapping[str, Any] | None) -> dict:
    """``raw`` with ``overrides`` applied at the top level; a mapping given for a mapping key is merged one
    level deep (``{"ray": {"num_cpus": 2}}`` keeps the file's other ``ray`` keys). Returns a new dict."""
    out = dict(raw)
    for k, v in (overrides or {}).items():
        out[k] = {**out[k], **v} if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def resolve_path(p: str, folder: Path) -> str:
    """A relative local path resolved against ``folder``; absolute paths and URLs (``scheme://``) unchanged."""
    if "://" in p or Path(p).is_absolute():
        return p
    return str((folder / p).resolve())


def load_yaml_config(path: str | Path, cls: type[M], overrides: Mapping[str, Any] | None = None,
                     prepare: Callable[[dict, Path], None] | None = None) -> M:
    """Read a YAML mapping, apply ``overrides`` (:func:`merge_overrides`), let ``prepare(raw, folder)`` resolve
    file-relative paths in place, validate against ``cls``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ConfigError: the top level is not a mapping, or the mapping does not validate (each bad key path named).
    """
    path = Path(path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of config keys, got {type(raw).__name__}")
    raw = merge_overrides(raw, overrides)
    if prepare is not None:
        prepare(raw, path.parent)
    return validate(cls, raw, str(path))
