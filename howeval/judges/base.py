"""The pattern-judge protocol: ``judge_batch(items) -> list[PatternVerdict]``, one item type for every judge.

Every pattern judge (rules, LLM rubric, PatternRM, ...) is an object with ``name``, ``version`` and
``judge_batch(items)``; :mod:`howeval.judges.registry` builds one from its config by ``kind``. Items are
:class:`JudgeItem` records (dicts with the same keys are accepted and converted); a judge returns one
:class:`~howeval.judges.verdict.PatternVerdict` per item, in order, with an error instead of labels for
an item it could not judge (never a default label).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from howeval.judges.verdict import PatternVerdict
from howeval.records import check_columns

__all__ = ["JudgeItem", "PatternJudge", "as_judge_items"]


@dataclass(frozen=True)
class JudgeItem:
    """One response to label (SPEC section 1: a pattern judge sees the question and y_m, never r_m).

    Attributes:
        question: the prompt q ("" when unknown).
        response: the user-facing response y_m.
        options: the item's option texts in order (A first), or None; rule judges use them to map letters.
        image_data_url: ``data:image/...;base64,...`` of the item's image for image-aware judges, or None
            (one image; for several use ``image_data_urls``).
        image_data_urls: every image of the sample, in order, as data URLs (what the policy saw; see
            :func:`howeval.judges.images.judge_image_urls`). :attr:`images` joins both fields.
    """

    question: str
    response: str
    options: tuple[str, ...] | None = None
    image_data_url: str | None = None
    image_data_urls: tuple[str, ...] = ()

    @property
    def images(self) -> tuple[str, ...]:
        """Every image data URL of the item, in order (``image_data_urls``, else ``image_data_url``)."""
        if self.image_data_urls:
            return self.image_data_urls
        return (self.image_data_url,) if self.image_data_url else ()

    def __post_init__(self) -> None:
        if not isinstance(self.response, str):
            raise TypeError(f"JudgeItem.response must be str, got {type(self.response).__name__}")
        if not isinstance(self.question, str):
            raise TypeError(f"JudgeItem.question must be str (\"\" when unknown), got {type(self.question).__name__}")
        if self.options is not None and not isinstance(self.options, tuple):
            object.__setattr__(self, "options", tuple(self.options))
        if not isinstance(self.image_data_urls, tuple):
            object.__setattr__(self, "image_data_urls", tuple(self.image_data_urls or ()))

    @classmethod
    def of(cls, item: JudgeItem | Mapping[str, Any]) -> JudgeItem:
        """A JudgeItem from itself or a mapping with ``question``, ``response`` (``options``,
        ``image_data_url`` optional; a None question becomes "").

        Raises:
            KeyError/ValueError (:class:`howeval.records.MissingColumnsError`): a required key is missing.
        """
        if isinstance(item, JudgeItem):
            return item
        check_columns(item, _REQUIRED, "judge item", "keys")
        opts = item.get("options")
        return cls(question=item["question"] or "", response=item["response"],
                   options=tuple(opts) if opts is not None else None, image_data_url=item.get("image_data_url"),
                   image_data_urls=tuple(item.get("image_data_urls") or ()))


_REQUIRED = {"question": "the prompt q", "response": "the user-facing response y_m"}


def as_judge_items(items: Sequence[JudgeItem | Mapping[str, Any]]) -> list[JudgeItem]:
    """Every item as a :class:`JudgeItem` (see :meth:`JudgeItem.of`), in order."""
    return [JudgeItem.of(it) for it in items]


@runtime_checkable
class PatternJudge(Protocol):
    """What every pattern judge provides (rules, LLM, PatternRM).

    ``name`` and ``version`` identify the judge in verdicts and caches; ``judge_batch`` labels many items
    at once (one engine call for LLM judges) and returns exactly one verdict per item, in order.
    """

    name: str
    version: str

    def judge_batch(self, items: Sequence[JudgeItem | Mapping[str, Any]]) -> list[PatternVerdict]: ...
