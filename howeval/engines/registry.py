"""Engine registry: name -> builder (STYLE rule 2). Unknown names raise, listing the registered ones."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from howeval.config.engines import ENGINE_OPTIONS
from howeval.engines.base import Engine

_BUILDERS: dict[str, Callable[..., Engine]] = {}
_IN_FLIGHT: dict[str, Callable[[dict | None, int], int]] = {}
_BATCH_SIZE: dict[str, Callable[[dict | None], int]] = {}

DEFAULT_BATCH_SIZE = 8
"""Rows per batch of an engine that declares no default of its own (``hf``, ``replay``) when the config's
``resources.batch_size`` is unset."""

VLLM_DEFAULT_MAX_NUM_SEQS = 1024
"""``max_num_seqs`` assumed for a vllm config that leaves it unset: the largest default vLLM picks itself (its
offline ``LLM`` on H100/H200-class GPUs; 256 on smaller GPUs and on CPUs). The driver cannot see which device
an actor's engine lands on, so it keeps enough rows in flight for the largest: an engine with fewer slots holds
the rest in its own waiting queue and takes them as slots free, as one ``LLM.chat`` over every prompt does
(issue 43: the engine full by default). Set ``max_num_seqs`` to size the rows in flight exactly."""

VLLM_MAX_BATCH_SIZE = 64
"""The largest default batch of the vllm engine (rows per ``generate`` call: one output file, one judge batch)."""


def register_engine(name: str, builder: Callable[..., Engine], options_model=None,
                    in_flight: Callable[[dict | None, int], int] | None = None,
                    batch_size: Callable[[dict | None], int] | None = None) -> None:
    """Register ``builder(model, options) -> Engine`` under ``name`` (tests register scripted engines).

    ``in_flight(options, batch_size) -> int`` declares how many batches one actor runs at once
    (:func:`batches_in_flight`); None = 1, for an engine whose ``generate`` is not thread-safe.
    ``batch_size(options) -> int`` declares the rows per batch when a config leaves ``resources.batch_size``
    unset (:func:`default_batch_size`); None = :data:`DEFAULT_BATCH_SIZE`.

    Raises:
        ValueError: ``name`` is already registered.
    """
    if name in _BUILDERS:
        raise ValueError(f"engine {name!r} already registered; registered: {sorted(_BUILDERS)}")
    _BUILDERS[name] = builder
    if in_flight is not None:
        _IN_FLIGHT[name] = in_flight
    if batch_size is not None:
        _BATCH_SIZE[name] = batch_size
    if options_model is not None:
        ENGINE_OPTIONS.setdefault(name, options_model)


def build_engine(name: str, model: str | None, options: BaseModel | Mapping[str, Any] | None = None) -> Engine:
    """Build the engine ``name`` for ``model`` with its options object.

    ``options`` is the engine's typed options object (``ModelConfig.engine_options()``: passed on as is), or a
    mapping (None = ``{}``) validated against the engine's options model here.

    Raises:
        ValueError: unknown engine name (lists registered) or invalid options (pydantic names the key).
    """
    if name not in _BUILDERS:
        raise ValueError(f"unknown engine {name!r}; registered: {sorted(_BUILDERS)}")
    model_cls = ENGINE_OPTIONS[name]
    opts = options if isinstance(options, model_cls) else model_cls.model_validate(options or {})
    return _BUILDERS[name](model, opts)


def batches_in_flight(name: str, options: dict | None, batch_size: int) -> int:
    """How many batches one actor of engine ``name`` runs at once (the actor's ``max_concurrency``), as the
    engine's registration declares; 1 for engines that declare nothing (``hf``, ``replay``).

    Contract: a stage actor may call its engine's ``generate`` from this many threads at once.

    - ``openai``: one in-flight window of ``max_concurrency`` requests per replica, shared by every
      ``generate`` call: ``ceil(max_concurrency / batch_size) + 1`` keeps it full while one batch waits for
      its slowest answer.
    - ``vllm``: one engine thread takes every call's requests into the running engine
      (:class:`howeval.engines.vllm_loop.EngineLoop`): ``ceil(max_num_seqs / batch_size) + 1`` keeps every
      sequence slot busy with one batch more queued, so slots freed by short answers are refilled at once
      instead of waiting for the batch's longest answer (``max_num_seqs`` unset:
      :data:`VLLM_DEFAULT_MAX_NUM_SEQS`, the largest vLLM picks itself).

    >>> batches_in_flight("openai", {"max_concurrency": 64}, 32)
    3
    >>> batches_in_flight("vllm", {"max_num_seqs": 256}, 64)
    5
    >>> batches_in_flight("hf", {}, 16)
    1

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rule = _IN_FLIGHT.get(name)
    return 1 if rule is None else max(1, int(rule(options, batch_size)))


def default_batch_size(name: str, options: dict | None) -> int:
    """Rows per batch of engine ``name`` when the config leaves ``resources.batch_size`` unset, as the engine's
    registration declares (:data:`DEFAULT_BATCH_SIZE` for engines that declare nothing).

    The rows in flight per replica do not depend on it (:func:`batches_in_flight` keeps the engine's capacity
    busy whatever the batch): the batch is the unit of writing, resuming and judging.

    - ``vllm``: a quarter of the engine's ``max_num_seqs``, at most :data:`VLLM_MAX_BATCH_SIZE`: a few
      batches fill the engine and each lands (written, judged) while the next run;
    - ``openai``: a quarter of ``max_concurrency``, at least :data:`DEFAULT_BATCH_SIZE`, at most 64.

    >>> default_batch_size("vllm", {}), default_batch_size("vllm", {"max_num_seqs": 128})
    (64, 32)
    >>> default_batch_size("openai", {"max_concurrency": 128}), default_batch_size("hf", {})
    (32, 8)
    """
    rule = _BATCH_SIZE.get(name)
    return DEFAULT_BATCH_SIZE if rule is None else max(1, int(rule(options)))


def resolved_batch_size(name: str, options: dict | None, configured: int | None) -> int:
    """``configured`` (a config's ``resources.batch_size``) when set, else :func:`default_batch_size`."""
    return configured if configured is not None else default_batch_size(name, options)


def _openai_window(options: dict | None) -> int:
    return int(ENGINE_OPTIONS["openai"].model_validate(options or {}).max_concurrency)


def _vllm_seqs(options: dict | None) -> int:
    kw = ENGINE_OPTIONS["vllm"].model_validate(options or {}).all_engine_kwargs()
    return int(kw.get("max_num_seqs") or VLLM_DEFAULT_MAX_NUM_SEQS)


def _openai_in_flight(options: dict | None, batch_size: int) -> int:
    return -(-_openai_window(options) // batch_size) + 1


def _vllm_in_flight(options: dict | None, batch_size: int) -> int:
    return -(-_vllm_seqs(options) // batch_size) + 1


def _openai_batch(options: dict | None) -> int:
    return min(64, max(DEFAULT_BATCH_SIZE, _openai_window(options) // 4))


def _vllm_batch(options: dict | None) -> int:
    return min(VLLM_MAX_BATCH_SIZE, max(1, _vllm_seqs(options) // 4))


def _hf(model, opts):
    from howeval.engines.hf import HFEngine

    return HFEngine(model, opts)


def _openai(model, opts):
    from howeval.engines.openai_engine import OpenAIEngine

    return OpenAIEngine(model, opts)


def _vllm(model, opts):
    from howeval.engines.vllm_engine import VLLMEngine

    return VLLMEngine(model, opts)


def _replay(model, opts):
    from howeval.engines.replay import ReplayEngine

    return ReplayEngine(model, opts)


register_engine("hf", _hf)
register_engine("openai", _openai, in_flight=_openai_in_flight, batch_size=_openai_batch)
register_engine("vllm", _vllm, in_flight=_vllm_in_flight, batch_size=_vllm_batch)
register_engine("replay", _replay)
