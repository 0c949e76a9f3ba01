"""The LLM judge for what the rules leave open: :class:`LLMVerifier` grades unresolved items in one batched call.

SPEC section 2: "unresolved cases go to an LLM judge". The judge sees the question, the options, the
reference answer and the response (cut from the front to its last characters), and replies with JSON.
"""
from __future__ import annotations

import logging

from howeval.engines.base import ChatRequest, Completion, Engine
from howeval.judges.verify.choice import as_options, option_letter
from howeval.judges.verify.entry import verify
from howeval.judges.verify.result import DEFAULT_REL_TOL, METHOD_LLM, METHOD_LLM_ERROR, VerifyResult
from howeval.parsing.text import find_json_object
from howeval.records import check_columns

__all__ = ["GRADING_PROMPT", "LLMVerifier"]

log = logging.getLogger(__name__)

_REQUIRED_ITEM_KEYS = ("question", "response", "answer", "answer_type")

GRADING_PROMPT = """You grade one answer to a question. Decide whether the RESPONSE's final answer matches the REFERENCE answer.
Judge only the final answer, not the reasoning. Equivalent forms (units, rounding to the reference's precision, paraphrases with the same meaning, the option letter of the reference option) count as correct. A response with no final answer, or with several conflicting final answers, is incorrect.

QUESTION:
{question}
{options_block}
REFERENCE ANSWER ({answer_type}):
{answer}

RESPONSE:
{response}

Reply with JSON only: {{"correct": true or false, "reason": "<one sentence>"}}"""


class LLMVerifier:
    """Rules first, then one batched LLM-judge call for the items the rules leave unresolved.

    SPEC section 2: "unresolved cases go to an LLM judge". A judge verdict is recorded with
    ``method="llm"``; a failed request (``Completion.error``, truncation, an exception from the engine)
    or an unparseable reply gives ``correct=None, method="llm_error"`` with the reason: never a default.

    Args:
        engine: any :class:`howeval.engines.base.Engine` (``generate(list[ChatRequest]) -> list[Completion]``).
        max_tokens: judge completion budget (>= 16).
        max_response_chars: longer responses are cut to their last this-many characters (the final
            answer sits at the end) before prompting (>= 200).
        rel_tol: passed to :func:`verify`.

    Raises:
        ValueError: a bad argument (the message names it).

    Example::

        judge = LLMVerifier(engine)
        results = judge.verify_batch([{"question": q, "response": r, "answer": g, "answer_type": "free_form",
                                       "options": None, "source": "Bingo"}])
    """

    def __init__(self, engine: Engine, *, max_tokens: int = 256, max_response_chars: int = 6000,
                 rel_tol: float = DEFAULT_REL_TOL) -> None:
        if not hasattr(engine, "generate"):
            raise ValueError(f"engine must implement generate(list[ChatRequest]); got {type(engine).__name__}")
        if max_tokens < 16:
            raise ValueError(f"max_tokens must be >= 16, got {max_tokens}")
        if max_response_chars < 200:
            raise ValueError(f"max_response_chars must be >= 200, got {max_response_chars}")
        self.engine = engine
        self.max_tokens = max_tokens
        self.max_response_chars = max_response_chars
        self.rel_tol = rel_tol

    @staticmethod
    def check_item(item: dict) -> None:
        """Raise ValueError naming the missing keys and the keys present."""
        check_columns(item, _REQUIRED_ITEM_KEYS, "verify item", "keys")

    def build_request(self, item: dict, request_id: str | None = None) -> ChatRequest:
        """The grading request for one item (greedy, JSON-only reply)."""
        self.check_item(item)
        opts = as_options(item.get("options"))
        options_block = ("OPTIONS:\n" + "\n".join(f"({option_letter(i)}) {o}" for i, o in enumerate(opts)) + "\n") if opts else ""
        response = item["response"]
        if len(response) > self.max_response_chars:
            response = "[...] " + response[-self.max_response_chars :]
        text = GRADING_PROMPT.format(
            question=item["question"], options_block=options_block, answer_type=item["answer_type"],
            answer=item["answer"] if item["answer"] is not None else "(none given: judge whether the response is accurate)",
            response=response,
        )
        return ChatRequest(messages=[{"role": "user", "content": text}], max_tokens=self.max_tokens,
                           temperature=0.0, request_id=request_id)

    @staticmethod
    def parse_verdict(completion: Completion, extracted: str | None = None) -> VerifyResult:
        """A judge completion -> VerifyResult (``llm`` when it holds ``{"correct": bool, ...}``, else ``llm_error``).

        >>> LLMVerifier.parse_verdict(Completion(text='{"correct": true, "reason": "same value"}')).correct
        True
        >>> LLMVerifier.parse_verdict(Completion(text="maybe")).method
        'llm_error'
        """
        if completion.error:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"judge request failed: {completion.error}")
        if completion.truncated:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, "judge reply truncated inside its reasoning")
        text = completion.text or ""
        obj = find_json_object(text, lambda o: "correct" in o, last=True)
        if obj is None:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"no JSON verdict in judge reply: {text[:200]!r}")
        if not isinstance(obj["correct"], bool):
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"judge 'correct' is not a boolean: {obj['correct']!r}")
        return VerifyResult(obj["correct"], extracted, METHOD_LLM, str(obj.get("reason", "")).strip() or "(no reason given)")

    def judge(self, items: list[dict], extracted: list[str | None] | None = None) -> list[VerifyResult]:
        """LLM verdicts for ``items`` in one ``engine.generate`` call (one result per item, in order)."""
        if not items:
            return []
        extracted = extracted if extracted is not None else [None] * len(items)
        requests = [self.build_request(it, request_id=str(i)) for i, it in enumerate(items)]
        try:
            completions = self.engine.generate(requests)
        except Exception as exc:  # noqa: BLE001 - an I/O boundary, any engine error: recorded on every item, never a default verdict
            log.warning("LLM judge call failed for %d items: %r", len(items), exc)
            return [VerifyResult(None, e, METHOD_LLM_ERROR, f"judge call raised {type(exc).__name__}: {exc}")
                    for e in extracted]
        if len(completions) != len(requests):
            raise ValueError(f"engine {getattr(self.engine, 'name', '?')!r} returned {len(completions)} completions "
                             f"for {len(requests)} requests")
        return [self.parse_verdict(c, e) for c, e in zip(completions, extracted)]

    def verify_batch(self, items: list[dict]) -> list[VerifyResult]:
        """Rules for every item, then one batched judge call for the unresolved ones.

        Each item needs ``question, response, answer, answer_type``; ``options`` and ``source`` are
        optional. Returns one VerifyResult per item, in order.

        Raises:
            ValueError: an item lacks a required key (missing and present keys are listed), or a rule
                verifier rejects it (unknown answer_type, inconsistent options).
        """
        for it in items:
            self.check_item(it)
        results = [
            verify(it["response"], it["answer"], it["answer_type"], it.get("options"), it.get("source"), rel_tol=self.rel_tol)
            for it in items
        ]
        open_idx = [i for i, r in enumerate(results) if r.correct is None]
        if open_idx:
            judged = self.judge([items[i] for i in open_idx], [results[i].extracted for i in open_idx])
            for i, r in zip(open_idx, judged):
                r.reason = f"{r.reason} (rules: {results[i].reason})"
                results[i] = r
        return results
