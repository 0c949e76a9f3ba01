"""The engine interface: ``generate(list[ChatRequest]) -> list[Completion]`` (DESIGN.md, "Engines").

Every backend (``hf``, ``openai``, ``vllm``, test doubles) implements :class:`Engine`. Requests carry
OpenAI-style chat messages (content may be a list of parts, images as ``image_url`` data URLs), so the
same request goes to a local model or to an HTTP server unchanged. A completion keeps the reasoning
channel ``r_m`` apart from the user-facing response ``y_m`` (SPEC section 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class ChatRequest:
    """One chat-completion request.

    Attributes:
        messages: OpenAI chat messages, e.g. ``[{"role": "user", "content": [{"type": "text", "text": q},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]``.
        max_tokens: completion budget in tokens (>= 1).
        temperature: sampling temperature (>= 0; 0 means greedy), or None: the model's own default
            (vllm: ``LLM.get_default_sampling_params()``; hf: the model's ``generation_config``; openai:
            left out of the request, so the server applies its own).
        top_p: nucleus mass in (0, 1], or None (the model's default, as for temperature).
        top_k, min_p, presence_penalty, repetition_penalty: further sampling settings; None = the model's
            default (engines that do not support one leave it to the model).
        seed: per-request seed, or None.
        chat_template_kwargs: passed to the chat template (e.g. ``{"enable_thinking": True}``).
        reasoning_effort: hosted-API reasoning control (``"minimal"|"low"|"medium"|"high"``) or None.
        tools: OpenAI tool schemas offered to the model, or None.
        extra_body: extra request fields (openai engine only), e.g. a provider's thinking switch.
        request_id: caller's id, echoed on the completion.
        reasoning_opener_in_template: the template pre-fills ``<think>`` (outputs have no opening tag);
            engines pass it to ``split_reasoning`` so a length-cut output is truncated, not an answer.
        response_format: OpenAI structured output (``{"type": "json_schema", "json_schema": {...}}``) or
            None; the openai engine sends it as is, the vllm engine as guided JSON decoding.
    """

    messages: list[dict[str, Any]]
    max_tokens: int = 256
    temperature: float | None = 0.0
    top_p: float | None = 1.0
    seed: int | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None
    tools: list[dict[str, Any]] | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    request_id: str | None = None
    reasoning_opener_in_template: bool = False
    response_format: dict[str, Any] | None = None


@dataclass
class Completion:
    """One engine answer.

    Attributes:
        text: the user-facing response y_m ("" when truncated inside the reasoning channel).
        reasoning: the reasoning channel r_m, or None when the model produced none.
        finish_reason: ``"stop"``, ``"length"``, ``"tool_calls"`` or ``"error"``.
        truncated: True when a thinking response was cut off before its reasoning closed (then ``text`` is "").
        prompt_tokens / completion_tokens: token counts (0 when the backend does not report them).
        latency_s: wall seconds for this request (``hf`` divides the batch time evenly; ``vllm`` gives each
            request's own time from its ``generate`` call to its answer).
        tool_calls: OpenAI-format tool calls ``[{"id", "type": "function", "function": {"name", "arguments"}}]``.
        error: None on success, else the reason the engine failed on this request.
        raw: the raw generated text before the reasoning split (for audits).
    """

    text: str
    reasoning: str | None = None
    finish_reason: str = "stop"
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    tool_calls: list[dict[str, Any]] | None = None
    error: str | None = None
    raw: str | None = None
    request_id: str | None = None


@runtime_checkable
class Engine(Protocol):
    """A text/vision generation backend. ``generate`` returns one Completion per request, in order.

    A failure on one request is returned as a Completion with ``error`` set and ``finish_reason="error"``;
    it never raises for a single bad request and never drops one.
    """

    name: str

    def generate(self, requests: list[ChatRequest]) -> list[Completion]: ...
