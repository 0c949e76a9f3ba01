"""Engine registry: name -> builder (STYLE rule 2). Unknown names raise, listing the registered ones."""
from __future__ import annotations

from collections.abc import Callable

from howeval.config.engines import ENGINE_OPTIONS
from howeval.engines.base import Engine

_BUILDERS: dict[str, Callable[..., Engine]] = {}


def register_engine(name: str, builder: Callable[..., Engine], options_model=None) -> None:
    """Register ``builder(model, options) -> Engine`` under ``name`` (tests register scripted engines).

    Raises:
        ValueError: ``name`` is already registered.
    """
    if name in _BUILDERS:
        raise ValueError(f"engine {name!r} already registered; registered: {sorted(_BUILDERS)}")
    _BUILDERS[name] = builder
    if options_model is not None:
        ENGINE_OPTIONS.setdefault(name, options_model)


def build_engine(name: str, model: str | None, options: dict | None = None) -> Engine:
    """Build the engine ``name`` for ``model`` with validated ``options``.

    Raises:
        ValueError: unknown engine name (lists registered) or invalid options (pydantic names the key).
    """
    if name not in _BUILDERS:
        raise ValueError(f"unknown engine {name!r}; registered: {sorted(_BUILDERS)}")
    opts = ENGINE_OPTIONS[name].model_validate(options or {})
    return _BUILDERS[name](model, opts)


def batches_in_flight(name: str, options: dict | None, batch_size: int) -> int:
    """How many batches one actor of engine ``name`` should run at once (the actor's ``max_concurrency``).

    The ``openai`` engine keeps one in-flight window of ``max_concurrency`` requests per replica, shared by
    every ``generate`` call on it (safe from several threads): with ``ceil(max_concurrency / batch_size) + 1``
    batches in flight the window stays full while one batch waits for its slowest answer. Local engines
    (``hf``, ``vllm``, ``replay``) run one batch at a time: 1.

    >>> batches_in_flight("openai", {"max_concurrency": 64}, 32)
    3
    >>> batches_in_flight("hf", {}, 16)
    1
    """
    if name != "openai":
        return 1
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    window = ENGINE_OPTIONS["openai"].model_validate(options or {}).max_concurrency
    return -(-window // batch_size) + 1


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
register_engine("openai", _openai)
register_engine("vllm", _vllm)
register_engine("replay", _replay)
