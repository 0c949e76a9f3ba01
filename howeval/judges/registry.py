"""Pattern judges by kind: ``kind`` in a judge's config -> a builder returning a :class:`PatternJudge`.

STYLE rule 2 (registries, not conditionals). The built-in kinds are registered here, each importing its
module only when built, so a kind is known without importing every judge:

- ``rules``: :class:`howeval.judges.rules.RuleJudge` (deterministic surface cues);
- ``llm``: :class:`howeval.judges.llm.LLMPatternJudge` over an engine from ``cfg.llm``;
- ``patternrm``: :class:`howeval.judges.patternrm.PatternRMJudge` (default: the embedded trained PatternRM;
  ``cfg.patternrm`` picks another).

The kinds themselves, one config model each, are listed once: ``howeval.config.PATTERN_JUDGE_CONFIGS``
(a sweep's judge blocks validate as their union, discriminated by ``kind``). A new kind adds one config
model there and one decorated builder here (see ``_patternrm`` below); a test checks the two match.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from howeval.judges.base import PatternJudge

if TYPE_CHECKING:
    from howeval.config import LLMJudgeConfig, PatternJudgeBase, PatternRMJudgeConfig
    from howeval.engines.base import Engine

__all__ = ["PATTERN_JUDGES", "EngineBuilder", "JudgeBuilder", "Registry", "build_pattern_judge",
           "default_engine_builder", "register_pattern_judge"]

T = TypeVar("T")

EngineBuilder = Callable[[str, dict], "Engine"]
"""``(model, options) -> Engine`` for judges that call a model (tests inject fakes)."""

JudgeBuilder = Callable[["PatternJudgeBase", EngineBuilder], PatternJudge]
"""``(judge config, engine builder) -> judge``."""


class Registry(dict[str, T]):
    """``name -> item`` (a dict) with a registering decorator that refuses duplicates and a lookup that lists
    the registered names (STYLE rule 2). Used for pattern-judge kinds and the verifier's answer types.

    >>> r = Registry("kind")
    >>> @r.register("a")
    ... def build_a(): ...
    >>> r.lookup("a") is build_a, sorted(r)
    (True, ['a'])
    >>> r.lookup("b")
    Traceback (most recent call last):
    ...
    ValueError: unknown kind 'b'; registered: ['a']
    """

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name``.

        Raises:
            ValueError: ``name`` is already registered (the message lists the registered names).
        """

        def deco(obj: T) -> T:
            if name in self:
                raise ValueError(f"{self.what} {name!r} already registered; registered: {sorted(self)}")
            self[name] = obj
            return obj

        return deco

    def lookup(self, name: str) -> T:
        """The object registered under ``name``.

        Raises:
            ValueError: ``name`` is not registered (the message lists the registered names).
        """
        if name not in self:
            raise ValueError(f"unknown {self.what} {name!r}; registered: {sorted(self)}")
        return self[name]


PATTERN_JUDGES: Registry[JudgeBuilder] = Registry("pattern judge kind")
"""Registered kinds -> builders."""


def register_pattern_judge(kind: str) -> Callable[[JudgeBuilder], JudgeBuilder]:
    """Decorator: register a builder for pattern judges of ``kind``.

    Raises:
        ValueError: ``kind`` is already registered (the message lists the registered kinds).
    """
    return PATTERN_JUDGES.register(kind)


def default_engine_builder(model: str, options: dict[str, Any]) -> Engine:
    """The OpenAI-compatible engine for ``model`` (judges are served behind an OpenAI-style endpoint)."""
    from howeval.engines.registry import build_engine

    return build_engine("openai", model, options)


def build_pattern_judge(cfg: PatternJudgeBase, engine_builder: EngineBuilder | None = None) -> PatternJudge:
    """The pattern judge configured by ``cfg`` (``cfg.kind`` picks the builder).

    Raises:
        ValueError: unknown ``cfg.kind`` (the message lists the registered kinds).
    """
    try:
        builder = PATTERN_JUDGES.lookup(cfg.kind)
    except ValueError as e:
        raise ValueError(f"judge {cfg.name!r}: {e}") from None
    return builder(cfg, engine_builder or default_engine_builder)


@register_pattern_judge("rules")
def _rules(cfg: PatternJudgeBase, engine_builder: EngineBuilder) -> PatternJudge:
    from howeval.judges.rules import RuleJudge

    return RuleJudge()


@register_pattern_judge("llm")
def _llm(cfg: LLMJudgeConfig, engine_builder: EngineBuilder) -> PatternJudge:
    from howeval.judges.llm import LLMPatternJudge

    return LLMPatternJudge(engine_builder(cfg.llm.model, cfg.llm.options), name=cfg.name, version=cfg.version,
                           with_image=cfg.with_image, max_tokens=cfg.llm.max_tokens, temperature=cfg.llm.temperature,
                           structured_output=cfg.llm.structured_output)


@register_pattern_judge("patternrm")
def _patternrm(cfg: PatternRMJudgeConfig, engine_builder: EngineBuilder) -> PatternJudge:
    from howeval.judges.patternrm.judge import PatternRMJudge

    return PatternRMJudge(name=cfg.name, patternrm=cfg.patternrm, version=cfg.version)
