"""The one strict config base, the one YAML loader and the one validation-error formatter of every job.

Every config class of the project (sweep, build-refs, training, PatternRM training, reward server, engine
options) derives from :class:`StrictModel`: frozen, unknown keys are errors (STYLE rule 1). Every job
loads its YAML with :func:`load_yaml_config` and reports a bad file as :class:`ConfigError`, whose
message :func:`format_validation_error` writes one line per bad key path, e.g.::

    configs/demo.yaml: 1 config error(s):
      models.0.sampling.max_tokens: Input should be greater than or equal to 1 (got 0)

An unknown key is named with the closest accepted one and the list of accepted keys, at any depth
(:func:`unknown_key_message`), e.g.
``models.0.sampling.temperture: unknown key (got 0.7); did you mean 'temperature'? Accepted: max_tokens, ...``.
Command-line dot-list overrides (``models.0.sampling.temperature=0.7``) are applied to the raw mapping by
:func:`apply_dotlist` before validation, so they get the same errors.
"""
from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every config model: immutable (``frozen``) and unknown keys rejected (``extra="forbid"``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def nested_config(cls, field: str, raw: Mapping) -> type[BaseModel] | None:
        """The config class that validates the plain mapping under ``field`` (e.g. a model's ``options:``,
        checked against its engine's options model), given this model's raw input; None = the field's own
        type. Used only to name the accepted keys in error messages (:func:`format_validation_error`)."""
        return None


class ConfigError(ValueError):
    """A config that does not validate; the message names the source and every bad key path."""


def unknown_key_message(key: str, accepted: Iterable[str]) -> str:
    """The rule of an unknown config key: the closest accepted key (if any is close) and every accepted key.

    >>> unknown_key_message("temperture", ["max_tokens", "temperature", "top_p"])
    "unknown key; did you mean 'temperature'? Accepted: max_tokens, temperature, top_p"
    """
    accepted = list(accepted)
    close = difflib.get_close_matches(str(key), accepted, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    return f"unknown key{hint} Accepted: {', '.join(accepted)}"


def _unwrap(tp: Any) -> Any:
    """``X`` from ``Annotated[X, ...]``; from ``X | None`` (or a union with one non-None member) that member."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(args) == 1:
                tp = args[0]
            elif len(models) == 1:
                tp = models[0]
            else:
                return tp
        else:
            return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _tagged_member(tp: Any, tag: str) -> Any:
    """The member of a discriminated union ``tp`` annotated with ``Tag(tag)`` (pydantic puts the tag in an
    error's path), or None."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return None
    for member in typing.get_args(tp):
        if typing.get_origin(member) is typing.Annotated:
            inner, *meta = typing.get_args(member)
            if any(getattr(m, "tag", None) == tag for m in meta):
                return inner
    return None


def model_at(cls: type[BaseModel], raw: Any, loc: tuple) -> type[BaseModel] | None:
    """The config class that validates the mapping at key path ``loc`` of ``raw`` (validated as ``cls``), or
    None where it cannot be told (a plain dict, an untagged union). Follows fields, list items, dict values,
    the tags of discriminated unions and :meth:`StrictModel.nested_config`."""
    tp: Any = cls
    for seg in loc:
        tp = _unwrap(tp)
        member = _tagged_member(tp, str(seg))
        if member is not None:  # a tag segment: the same raw mapping, validated as that member
            tp = member
            continue
        if _is_model(tp):
            sub = tp.nested_config(str(seg), raw) if issubclass(tp, StrictModel) and isinstance(raw, Mapping) else None
            if sub is None:
                field = tp.model_fields.get(str(seg))
                if field is None:
                    return None
                sub = field.annotation
            tp = sub
        else:
            origin, args = typing.get_origin(tp), typing.get_args(tp)
            if origin in (list, tuple, set, frozenset) and args:
                tp = args[0]
            elif origin is dict and len(args) == 2:
                tp = args[1]
            else:
                return None
        try:
            raw = raw[seg]
        except (KeyError, IndexError, TypeError):
            raw = None
    tp = _unwrap(tp)
    return tp if _is_model(tp) else None


def format_validation_error(err: ValidationError, source: str, cls: type[BaseModel] | None = None,
                            raw: Any = None) -> str:
    """One line per error: ``<key.path>: <rule> (got <value, first 80 chars>)``, under a ``<source>:`` header.

    Mappings are shown as ``{...}`` (their keys are in the path already). With ``cls`` (the class ``raw``
    was validated as), an unknown key's line says ``unknown key (got ...)``, the closest accepted key and
    every accepted key (:func:`unknown_key_message`).
    """
    lines = [f"{source}: {len(err.errors())} config error(s):"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        got_s = repr(got) if not isinstance(got, dict) else "{...}"
        parent = model_at(cls, raw, tuple(e["loc"][:-1])) if cls is not None and e["type"] == "extra_forbidden" else None
        if parent is not None:
            rule = unknown_key_message(str(e["loc"][-1]), parent.model_fields)
            head, _, tail = rule.partition(";")
            lines.append(f"  {loc}: {head} (got {got_s[:80]});{tail}")
        else:
            lines.append(f"  {loc}: {e['msg']} (got {got_s[:80]})")
    return "\n".join(lines)


def validate(cls: type[M], raw: Any, source: str) -> M:
    """``cls.model_validate(raw)`` with a pydantic error turned into :class:`ConfigError` (see
    :func:`format_validation_error`); ``source`` names where ``raw`` came from (a file, "reward server config")."""
    try:
        return cls.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, source, cls, raw)) from None


def check_config(obj: Any, cls: type[BaseModel], name: str) -> None:
    """Raise TypeError unless ``obj`` is a ``cls``: a stage takes the typed config object (Ray pickles it),
    never a dict to validate again.

    >>> check_config({"num_cpus": 1}, StrictModel, "settings")
    Traceback (most recent call last):
    ...
    TypeError: settings: expected a StrictModel, got dict (pass the config object, not its model_dump())
    """
    if not isinstance(obj, cls):
        raise TypeError(f"{name}: expected a {cls.__name__}, got {type(obj).__name__} (pass the config object, "
                        "not its model_dump())")


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


def parse_dotlist_item(item: str) -> tuple[str, list[str], Any]:
    """One command-line override, OmegaConf / Hydra style, as ``(op, key path, value)``.

    ``a.b.0.c=value`` sets (``op`` "set"; ``+a.b=value``, Hydra's "add", is the same); ``~a.b`` deletes
    (``op`` "del"). The value is read as YAML: ``0.7`` a float, ``true`` a bool, ``null`` None, ``[1, 2]``
    a list, ``{a: 1}`` a mapping, anything else a string; ``key=`` is the empty string.

    >>> parse_dotlist_item("models.0.sampling.temperature=0.7")
    ('set', ['models', '0', 'sampling', 'temperature'], 0.7)
    >>> parse_dotlist_item("~models.0.options.device_map")
    ('del', ['models', '0', 'options', 'device_map'], None)

    Raises:
        ConfigError: not ``key=value`` / ``~key``, or an empty key segment.
    """
    example = "e.g. models.0.sampling.temperature=0.7, or ~key to delete"
    if item.startswith("~"):
        op, key, value = "del", item[1:].split("=", 1)[0], None
    elif "=" in item:
        key, raw = item.lstrip("+").split("=", 1)
        op = "set"
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as e:
            raise ConfigError(f"override {item!r}: the value is not valid YAML ({str(e).splitlines()[0]}); quote it") from None
    else:
        raise ConfigError(f"override {item!r}: expected key.path=value ({example})")
    path = key.strip().split(".")
    if not all(path):
        raise ConfigError(f"override {item!r}: empty key segment in {key!r} ({example})")
    return op, path, value


def apply_dotlist(raw: dict, items: Iterable[str]) -> dict:
    """``raw`` (a config mapping before validation) with the dot-list overrides ``items`` applied in order
    (:func:`parse_dotlist_item`); missing or null mappings on the way are created, list items are addressed
    by index. The result is validated like the file, so a misspelt key gets the same error (with the
    closest accepted key). Returns a new dict.

    >>> apply_dotlist({"models": [{"sampling": {"temperature": 0.0}}]}, ["models.0.sampling.temperature=0.7", "crystal.tau=0.3"])
    {'models': [{'sampling': {'temperature': 0.7}}], 'crystal': {'tau': 0.3}}

    Raises:
        ConfigError: a list index out of range or not a number, a key under a value that is not a mapping, or
            ``~key`` of a key that is not there; each names the override and what is there instead.
    """
    import copy

    out = copy.deepcopy(raw)
    for item in items:
        op, path, value = parse_dotlist_item(item)
        cur: Any = out
        for i, seg in enumerate(path):
            here = ".".join(path[:i]) or "the top level"
            last = i == len(path) - 1
            if isinstance(cur, list):
                if not seg.lstrip("-").isdigit() or not -len(cur) <= int(seg) < len(cur):
                    raise ConfigError(f"override {item!r}: {here} is a list of {len(cur)} item(s); {seg!r} is not an "
                                      f"index of it (0..{len(cur) - 1})")
                seg = int(seg)  # type: ignore[assignment]
            elif not isinstance(cur, dict):
                raise ConfigError(f"override {item!r}: {here} is {type(cur).__name__} {cur!r}, not a mapping; "
                                  f"it has no key {seg!r}")
            if last:
                if op == "set":
                    cur[seg] = value
                elif isinstance(cur, list) or seg in cur:
                    del cur[seg]
                else:
                    raise ConfigError(f"override {item!r}: nothing to delete, {here} has no key {seg!r}")
            else:
                if isinstance(cur, dict) and cur.get(seg) is None:
                    if op == "del":
                        raise ConfigError(f"override {item!r}: nothing to delete, {here} has no key {seg!r}")
                    cur[seg] = {}
                cur = cur[seg]
    return out


def dotlist_keys(items: Iterable[str]) -> dict[str, str]:
    """Key path -> the override that set or deleted it (the last one wins), for messages that name it."""
    return {".".join(parse_dotlist_item(it)[1]): it for it in items}


def resolve_path(p: str, folder: Path) -> str:
    """A relative local path resolved against ``folder``; absolute paths and URLs (``scheme://``) unchanged."""
    if "://" in p or Path(p).is_absolute():
        return p
    return str((folder / p).resolve())


def load_yaml_config(path: str | Path, cls: type[M], overrides: Mapping[str, Any] | None = None,
                     prepare: Callable[[dict, Path], None] | None = None, dotlist: Iterable[str] = ()) -> M:
    """Read a YAML mapping, apply ``overrides`` (:func:`merge_overrides`), let ``prepare(raw, folder)`` resolve
    file-relative paths in place, apply the command line's ``dotlist`` (:func:`apply_dotlist`; relative paths
    in it resolve against the current directory, by ``prepare(raw, cwd)``), validate against ``cls``.

    Raises:
        FileNotFoundError: ``path`` does not exist (the message names it and says to give a YAML file).
        ConfigError: ``path`` is a folder or not YAML (the parser's line and column named), the top level is
            not a mapping, or the mapping does not validate (each bad key path named).
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; give the config's YAML file (e.g. {path}/<name>.yaml)")
    if not path.exists():
        raise FileNotFoundError(f"config file not found: {path} (give the path of a YAML config; examples in configs/)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:  # the parser's own message names the line and column
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of config keys, got {type(raw).__name__}")
    raw = merge_overrides(raw, overrides)
    if prepare is not None:
        prepare(raw, path.parent)
    dotlist = list(dotlist)
    if dotlist:
        raw = apply_dotlist(raw, dotlist)
        if prepare is not None:
            prepare(raw, Path.cwd())  # paths the file gave are absolute by now: only the command line's resolve
    return validate(cls, raw, f"{path} with overrides {' '.join(dotlist)}" if dotlist else str(path))
