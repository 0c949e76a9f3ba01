"""An LLM judge of AdaptMMBench's reasoning process (issue 31): key-step coverage and tool-call effectiveness
"decided by GPT-5" (AdaptMMBench, background "Key Step Coverage" and "Tool Execution Effectiveness", method
step (3); docs/metrics.md §4).

The project's judge protocol, as :class:`howeval.judges.llm.LLMPatternJudge` has it: one batched call, every
unparseable answer gets exactly ONE repair request (batched), a second failure or an engine error is a
failure row (``error="judge_error: ..."``, the raw output kept) and never a default decision. Caching is the
engine's: wrap it in :class:`howeval.judges.cache.CachingEngine` with :func:`coverage_readable` /
:func:`effectiveness_readable` as ``accept`` (only readable answers are stored and replayed).

The embedding match (``howeval.benchmarks.adapt.metrics.key_step_coverage`` with an embedder's cosine matrix)
stays the offline default; this judge is used when a sweep's ``adapt.process_judge`` names a model.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from howeval.engines.base import ChatRequest, Completion
from howeval.judges.verdict import JudgeParseError

log = logging.getLogger(__name__)

PROCESS_RUBRIC_VERSION = "process-v2"
"""Bumped when a prompt or a parser changes (part of the judge id, so the cache misses on purpose). v2 (issue 41):
the effectiveness judge sees the image each call acted on and its output image."""

COVERAGE_SYSTEM = (
    "You check whether a model's reasoning covers the key steps of a solution. A key step is covered when some "
    "step of the reasoning states it or clearly carries it out; logical jumps and compression are allowed (one "
    "reasoning step may cover several key steps), paraphrase is fine, a contradicting step does not cover. "
    'Answer with one JSON object only: {"covered": [true/false for each key step, in order], "reason": "<one '
    'sentence>"}.'
)
EFFECTIVENESS_SYSTEM = (
    "You check one visual tool call of a model solving an image question. The call is effective when its intent "
    "matches the reasoning step it serves, its arguments are right for that intent (e.g. the zoom box holds the "
    "region the step needs), and its output serves the reasoning (it ran without error and shows what was "
    'needed). Answer with one JSON object only: {"effective": true or false, "reason": "<one sentence>"}.'
)
REPAIR = ("Your answer could not be read: {error}. Answer again with the JSON object only, exactly in the format "
          "asked for, with no other text.")


@dataclass
class ProcessVerdict:
    """One decision of the process judge: ``value`` (coverage in [0, 1], or ``effective`` as a bool),
    ``decisions`` (per key step, coverage only), ``reason``; on failure ``value`` is None and ``error`` says why."""

    value: float | bool | None
    decisions: list[bool] = field(default_factory=list)
    reason: str | None = None
    error: str | None = None
    raw: str | None = None


def _json_object(text: str) -> dict:
    t = (text or "").strip()
    t = re.sub(r"^```(?:json)?\s*|\s*```$", "", t)
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end <= start:
        raise JudgeParseError("no JSON object in the answer")
    try:
        obj = json.loads(t[start:end + 1])
    except json.JSONDecodeError as e:
        raise JudgeParseError(f"invalid JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise JudgeParseError("the JSON is not an object")
    return obj


def parse_coverage_output(text: str, n_key_steps: int) -> tuple[list[bool], str | None]:
    """``(covered per key step, reason)`` from a judge answer.

    Raises:
        JudgeParseError: no JSON object, no ``covered`` list of booleans, or a list of the wrong length.

    >>> parse_coverage_output('{"covered": [true, false], "reason": "skips the count"}', 2)
    ([True, False], 'skips the count')
    """
    obj = _json_object(text)
    cov = obj.get("covered")
    if not isinstance(cov, list) or not all(isinstance(x, bool) for x in cov):
        raise JudgeParseError("'covered' must be a list of true/false, one per key step")
    if len(cov) != n_key_steps:
        raise JudgeParseError(f"'covered' has {len(cov)} entries for {n_key_steps} key steps")
    return cov, obj.get("reason")


def parse_effectiveness_output(text: str) -> tuple[bool, str | None]:
    """``(effective, reason)`` from a judge answer.

    Raises:
        JudgeParseError: no JSON object or no boolean ``effective``.

    >>> parse_effectiveness_output('```json\\n{"effective": false, "reason": "box misses the sign"}\\n```')
    (False, 'box misses the sign')
    """
    obj = _json_object(text)
    if not isinstance(obj.get("effective"), bool):
        raise JudgeParseError("'effective' must be true or false")
    return obj["effective"], obj.get("reason")


def coverage_messages(question: str, key_steps: Sequence[str], steps: Sequence[str]) -> list[dict[str, Any]]:
    """The coverage request: the question, the numbered key steps, the numbered reasoning steps."""
    ks = "\n".join(f"K{i + 1}. {k}" for i, k in enumerate(key_steps))
    ss = "\n".join(f"S{i + 1}. {s}" for i, s in enumerate(steps)) or "(no reasoning steps)"
    return [{"role": "system", "content": COVERAGE_SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nKey steps:\n{ks}\n\nModel reasoning steps:\n{ss}"}]


def effectiveness_messages(question: str, step: str, tool: str, arguments: Any, status: str,
                           result: str | None, input_image: str | None = None,
                           output_image: str | None = None) -> list[dict[str, Any]]:
    """The effectiveness request for one call: the question, the step it serves, the call, what it returned.

    ``input_image`` (the image the call acted on) and ``output_image`` (what it returned; None when it failed)
    are ``data:image/...`` or http(s) URLs. With either, the user content is a list, as the pattern judge's
    (``howeval.judges.rubric.build_pattern_messages``): each image as an ``image_url`` part after a text part
    naming it, then the text; without both, a plain string.

    Raises:
        ValueError: an image that is not a data:image/... or http(s) URL.

    >>> m = effectiveness_messages("q", "zoom on the sign", "zoom_in", {"box": [0, 0, 8, 8]}, "ok", "output image 8x8",
    ...                            "data:image/png;base64,AA", "data:image/png;base64,BB")
    >>> [p["type"] for p in m[1]["content"]]
    ['text', 'image_url', 'text', 'image_url', 'text']
    """
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True, default=str)
    text = (f"Question: {question}\n\nReasoning step before the call: {step or '(none)'}\n"
            f"Tool call: {tool}({args})\nExecution: {status}" + (f"; {result}" if result else ""))
    parts: list[dict[str, Any]] = []
    for caption, url in (("The image the tool was applied to:", input_image),
                         ("The tool's output image:", output_image)):
        if url is None:
            continue
        if not isinstance(url, str) or not url.startswith(("data:image/", "http://", "https://")):
            raise ValueError(f"{caption} must be a data:image/... or http(s) URL, got {str(url)[:40]!r}")
        parts += [{"type": "text", "text": caption}, {"type": "image_url", "image_url": {"url": url}}]
    if not parts:
        return [{"role": "system", "content": EFFECTIVENESS_SYSTEM}, {"role": "user", "content": text}]
    if output_image is None:
        text += "\n(The call returned no image.)"
    return [{"role": "system", "content": EFFECTIVENESS_SYSTEM},
            {"role": "user", "content": [*parts, {"type": "text", "text": text}]}]


class LLMProcessJudge:
    """Key-step coverage and tool-call effectiveness decided by a chat model (module docstring).

    Args:
        engine: any engine with ``generate(list[ChatRequest]) -> list[Completion]`` (the openai engine for a
            hosted GPT-5, ``vllm serve``, or a fake).
        name: the judge's name; ``version`` the model id or revision (the rubric version is appended).
        max_tokens, temperature: per request (greedy by default).

    Example:
        >>> class Echo:
        ...     def generate(self, reqs):
        ...         return [Completion(text='{"covered": [true, false, true]}') for _ in reqs]
        >>> LLMProcessJudge(Echo(), "echo", "0").coverage_batch([{"question": "q", "key_steps": ["a", "b", "c"],
        ...                                                     "steps": ["x"]}])[0].value
        0.6666666666666666
    """

    def __init__(self, engine: Any, name: str, version: str, max_tokens: int = 512, temperature: float = 0.0):
        if not hasattr(engine, "generate"):
            raise TypeError(f"engine must have generate(list[ChatRequest]), got {type(engine).__name__}")
        if not name:
            raise ValueError("name must be a non-empty string")
        if max_tokens < 1 or temperature < 0:
            raise ValueError(f"need max_tokens >= 1 and temperature >= 0, got {max_tokens}, {temperature}")
        self.engine, self.name = engine, name
        self.version = f"{version}|{PROCESS_RUBRIC_VERSION}"
        self.max_tokens, self.temperature = max_tokens, temperature

    @property
    def judge_id(self) -> str:
        """``name@version``: the cache namespace and what rows record as the method."""
        return f"{self.name}@{self.version}"

    def _generate(self, msgs: list[list[dict]], tag: str) -> list[Completion]:
        reqs = [ChatRequest(messages=m, max_tokens=self.max_tokens, temperature=self.temperature, request_id=f"{tag}-{i}")
                for i, m in enumerate(msgs)]
        outs = self.engine.generate(reqs)
        if len(outs) != len(reqs):
            raise RuntimeError(f"engine returned {len(outs)} completions for {len(reqs)} requests")
        return outs

    def _run(self, msgs: list[list[dict]], parse: Callable[[int, str], ProcessVerdict], tag: str) -> list[ProcessVerdict]:
        """First pass, one batched repair of the unparseable answers, failure rows for the rest."""
        out: list[ProcessVerdict | None] = [None] * len(msgs)
        repair: list[tuple[int, str, str]] = []
        for i, c in enumerate(self._generate(msgs, tag) if msgs else []):
            if c.error is not None:
                out[i] = ProcessVerdict(None, error=f"judge_error: engine: {c.error}", raw=c.raw or c.text or None)
                continue
            try:
                out[i] = parse(i, c.text)
            except JudgeParseError as e:
                repair.append((i, c.text, str(e)))
        if repair:
            log.info("process judge %s: repairing %d of %d answers", self.name, len(repair), len(msgs))
            again = self._generate([[*msgs[i], {"role": "assistant", "content": bad or "(empty)"},
                                     {"role": "user", "content": REPAIR.format(error=err)}] for i, bad, err in repair],
                                   f"{tag}-repair")
            for (i, bad, err), c in zip(repair, again):
                if c.error is not None:
                    out[i] = ProcessVerdict(None, error=f"judge_error: engine: {c.error} (on repair after: {err})", raw=bad)
                    continue
                try:
                    out[i] = parse(i, c.text)
                except JudgeParseError as e2:
                    out[i] = ProcessVerdict(None, error=f"judge_error: {e2}", raw=f"{bad}\n--- repair output ---\n{c.text}")
        return out  # type: ignore[return-value]

    def coverage_batch(self, items: Sequence[dict]) -> list[ProcessVerdict]:
        """Key-step coverage of each item (``question``, ``key_steps`` (non-empty), ``steps``): the share of
        key steps the judge marks covered (SPEC 4), with the per-step decisions.

        Raises:
            ValueError: an item without key steps (coverage is undefined; leave it out).
        """
        for k, it in enumerate(items):
            if not it.get("key_steps"):
                raise ValueError(f"item {k}: 'key_steps' is empty; coverage needs at least one key step")
        msgs = [coverage_messages(it.get("question") or "", it["key_steps"], it.get("steps") or []) for it in items]

        def parse(i: int, text: str) -> ProcessVerdict:
            cov, reason = parse_coverage_output(text, len(items[i]["key_steps"]))
            return ProcessVerdict(sum(cov) / len(cov), cov, reason, raw=text)

        return self._run(msgs, parse, "cov")

    def effectiveness_batch(self, calls: Sequence[dict]) -> list[ProcessVerdict]:
        """Whether each tool call (``question``, ``step``, ``tool``, ``arguments``, ``status``, ``result``, and
        optionally ``input_image`` / ``output_image``: data URLs of the image the call acted on and of its
        output) is effective: ``value`` True / False, None on failure."""
        msgs = [effectiveness_messages(c.get("question") or "", c.get("step") or "", c.get("tool") or "?",
                                       c.get("arguments"), c.get("status") or "?", c.get("result"),
                                       c.get("input_image"), c.get("output_image")) for c in calls]

        def parse(_i: int, text: str) -> ProcessVerdict:
            ok, reason = parse_effectiveness_output(text)
            return ProcessVerdict(ok, reason=reason, raw=text)

        return self._run(msgs, parse, "eff")


def coverage_readable(c: Completion) -> bool:
    """``accept`` for :class:`howeval.judges.cache.CachingEngine`: the answer has a ``covered`` list of booleans
    (its length is checked against the item by the judge)."""
    obj = _json_object(c.text)
    return isinstance(obj.get("covered"), list) and all(isinstance(x, bool) for x in obj["covered"])


def effectiveness_readable(c: Completion) -> bool:
    """``accept`` for :class:`howeval.judges.cache.CachingEngine`: :func:`parse_effectiveness_output` succeeds."""
    parse_effectiveness_output(c.text)
    return True


def process_readable(c: Completion) -> bool:
    """``accept`` for one cache shared by both requests: a ``covered`` list of booleans or a boolean ``effective``."""
    obj = _json_object(c.text)
    cov = obj.get("covered")
    return (isinstance(cov, list) and all(isinstance(x, bool) for x in cov)) or isinstance(obj.get("effective"), bool)


__all__ = ["LLMProcessJudge", "ProcessVerdict", "coverage_messages", "coverage_readable", "effectiveness_messages",
           "effectiveness_readable", "parse_coverage_output", "parse_effectiveness_output", "process_readable"]
