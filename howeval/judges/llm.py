"""An LLM pattern judge over any engine: one batched call, one batched repair, never a default label.

Works with every backend of ``howeval.engines`` (``generate(list[ChatRequest]) -> list[Completion]``).
A text-only judge (``with_image=False``) mirrors how PatternRM is served (SPEC section 2).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from howeval.engines.base import ChatRequest, Completion, Engine
from howeval.judges.base import JudgeItem, as_judge_items
from howeval.judges.rubric import (
    RESPONSE_FORMAT,
    RUBRIC_VERSION,
    build_pattern_messages,
    build_repair_messages,
    parse_pattern_output,
)
from howeval.judges.verdict import JudgeParseError, PatternVerdict, make_verdict
from howeval.parsing.limits import MAX_TEXT_CHARS

log = logging.getLogger(__name__)

RAW_SEPARATOR = "\n--- repair output ---\n"
"""Joins the first and the repair output in ``raw`` when both failed to parse."""

class LLMPatternJudge:
    """Ask a chat model for the four pattern labels of each response (rubric: ``howeval.judges.rubric``).

    Args:
        engine: any :class:`howeval.engines.base.Engine`.
        name: the judge's name in verdicts (e.g. ``"seed-2.0-pro+img"``).
        version: the judge's version (model id / revision); the rubric version is appended.
        with_image: send every image of the item (``JudgeItem.images``: what the policy saw) when it has
            any (``False``: text-only judge).
        max_tokens: completion budget per request.
        temperature: sampling temperature (0: greedy, the default for a judge).
        structured_output: ask for the label JSON by schema (OpenAI ``response_format`` json_schema;
            vLLM's server turns it into guided JSON, the vllm engine into guided decoding). A server that
            refuses it (an error naming ``response_format``/``json_schema``, or a 400) gets the same
            requests again without it, and the judge stops asking for it.

    Flow of :meth:`judge_batch`: build one request per item -> one ``engine.generate`` call (structured
    output when on) -> parse each output; every unparseable output gets exactly ONE repair request (all repairs in one more batched
    call: the original messages, the bad output, and the parse error) -> parse again; a second failure
    gives ``error="judge_error: <reason>"`` with both raw outputs kept (joined by ``RAW_SEPARATOR``). An engine failure on an item
    gives ``error="judge_error: engine: <reason>"`` and is not repaired. A failed item never gets labels.

    Example:
        >>> class Echo:
        ...     name = "echo"
        ...     def generate(self, reqs):
        ...         return [Completion(text='{"cot": false, "rep": false, "con": false, "pr": true}') for _ in reqs]
        >>> LLMPatternJudge(Echo(), "echo", "0").judge_batch([{"question": "q", "response": "r"}])[0].as_vector()
        (False, False, False, True)
    """

    def __init__(
        self,
        engine: Engine,
        name: str,
        version: str,
        with_image: bool = True,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        structured_output: bool = True,
    ) -> None:
        if not hasattr(engine, "generate"):
            raise TypeError(f"engine must have generate(list[ChatRequest]), got {type(engine).__name__}")
        if not name:
            raise ValueError("name must be a non-empty string")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.engine = engine
        self.name = name
        self.version = f"{version}|{RUBRIC_VERSION}"
        self.with_image = with_image
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.structured_output = structured_output

    def messages_for(self, item: JudgeItem | dict[str, Any]) -> list[dict[str, Any]]:
        """The judge messages for one item (every image of the item, only when ``with_image``).

        Raises:
            ValueError (:class:`howeval.records.MissingColumnsError`): a dict item lacks ``question`` or ``response``.
        """
        item = JudgeItem.of(item)
        images = list(item.images) if self.with_image else None
        return build_pattern_messages(item.question, item.response, images)

    def _request(self, messages: list[dict[str, Any]], rid: str, structured: bool = False) -> ChatRequest:
        return ChatRequest(
            messages=messages, max_tokens=self.max_tokens, temperature=self.temperature, request_id=rid,
            response_format=RESPONSE_FORMAT if structured else None,
        )

    def _first_pass(self, msgs: list[list[dict[str, Any]]]) -> list[Completion]:
        """One request per item, with structured output while the server accepts it."""
        structured = self.structured_output
        first = self._generate([self._request(m, f"pat-{i}", structured) for i, m in enumerate(msgs)])
        if structured:
            refused = [i for i, c in enumerate(first) if c.error is not None and _refuses_structured(c.error)]
            if refused:
                log.warning("judge %s: the server refused structured output (%s); asking without it",
                            self.name, first[refused[0]].error[:200])
                self.structured_output = False
                again = self._generate([self._request(msgs[i], f"pat-{i}") for i in refused])
                for i, c in zip(refused, again):
                    first[i] = c
        return first

    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        outs = self.engine.generate(requests)
        if len(outs) != len(requests):
            raise RuntimeError(
                f"engine {getattr(self.engine, 'name', '?')!r} returned {len(outs)} completions for {len(requests)} requests"
            )
        return outs

    def judge_batch(self, items: Sequence[JudgeItem | dict[str, Any]]) -> list[PatternVerdict]:
        """The judge protocol (:class:`howeval.judges.base.PatternJudge`): label every item; one verdict per
        item, in order. Items are :class:`~howeval.judges.base.JudgeItem` (or dicts with ``question``,
        ``response``, ``image_data_url``?). A question or response over 200,000 characters
        (``howeval.parsing.limits.MAX_TEXT_CHARS``, the rules judge's and the verifier's limit) is a failed
        verdict ``judge_error: input too large: ...``, sent to no engine."""
        items = as_judge_items(items)
        if not items:
            return []
        # the rules judge's and the verifier's limit: no engine call for a book
        verdicts: list[PatternVerdict | None] = [self._oversize_verdict(it) for it in items]
        todo = [i for i in range(len(items)) if verdicts[i] is None]
        msgs = [self.messages_for(it) if verdicts[i] is None else [] for i, it in enumerate(items)]
        first_todo = self._first_pass([msgs[i] for i in todo]) if todo else []
        first: list[Completion | None] = [None] * len(items)
        for i, c in zip(todo, first_todo):
            first[i] = c

        to_repair: list[tuple[int, str, str]] = []  # (index, bad output, parse error)
        for i, c in enumerate(first):
            if c is None:
                continue
            if c.error is not None:
                verdicts[i] = PatternVerdict.failed(self.name, self.version, f"judge_error: engine: {c.error}", c.raw or c.text or None)
                continue
            try:
                labels, evidence = parse_pattern_output(c.text)
            except JudgeParseError as e:
                to_repair.append((i, c.text, str(e)))
                continue
            verdicts[i] = make_verdict(labels, evidence, self.name, self.version, raw=c.text)

        if to_repair:
            log.info("judge %s: repairing %d of %d outputs", self.name, len(to_repair), len(items))
            for i, v in self._repair(msgs, to_repair):
                verdicts[i] = v
        assert all(v is not None for v in verdicts), "every item gets a verdict"
        return verdicts  # type: ignore[return-value]

    def _oversize_verdict(self, it: JudgeItem) -> PatternVerdict | None:
        """The failed verdict of an item whose question or response (the first over) is longer than
        ``MAX_TEXT_CHARS``; None when both fit."""
        for field, text in (("question", it.question or ""), ("response", it.response)):
            if len(text) > MAX_TEXT_CHARS:
                return PatternVerdict.failed(self.name, self.version, f"judge_error: input too large: {field} "
                                             f"has {len(text):,} characters (limit {MAX_TEXT_CHARS:,})")
        return None

    def _repair(self, msgs: list[list[dict[str, Any]]], to_repair: list[tuple[int, str, str]]
                ) -> list[tuple[int, PatternVerdict]]:
        """One repair request per ``(index, bad output, parse error)`` in one engine call: ``(index, verdict)``
        each, a failed verdict when the engine fails or the second output does not parse either."""
        reqs = [
            self._request(build_repair_messages(msgs[i], bad, err), f"pat-{i}-repair")
            for i, bad, err in to_repair
        ]
        second = self._generate(reqs)
        out: list[tuple[int, PatternVerdict]] = []
        for (i, bad, err), c in zip(to_repair, second):
            if c.error is not None:
                out.append((i, PatternVerdict.failed(
                    self.name, self.version, f"judge_error: engine: {c.error} (on repair after: {err})", bad
                )))
                continue
            try:
                labels, evidence = parse_pattern_output(c.text)
            except JudgeParseError as e2:
                log.warning("judge %s: item %d unparseable after repair: %s", self.name, i, e2)
                out.append((i, PatternVerdict.failed(
                    self.name, self.version, f"judge_error: {e2}", f"{bad}{RAW_SEPARATOR}{c.text}"
                )))
                continue
            out.append((i, make_verdict(labels, evidence, self.name, self.version, raw=c.text)))
        return out

    def judge(self, question: str, response: str, image_data_url: str | None = None) -> PatternVerdict:
        """One item (a batch of one)."""
        return self.judge_batch([JudgeItem(question, response, image_data_url=image_data_url)])[0]


def _refuses_structured(error: str) -> bool:
    """True when an engine error reads like a server refusing ``response_format`` (unknown field, 400)."""
    low = error.lower()
    return any(k in low for k in ("response_format", "json_schema", "guided", "badrequesterror", "error code: 400"))


__all__ = ["LLMPatternJudge", "RAW_SEPARATOR"]
