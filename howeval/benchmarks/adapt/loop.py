"""The AdaptMMBench inference loop: text, adaptive (multi-turn tool use) and oracle-visual modes.

SPEC section 4. One item runs as a short conversation with an engine:

- ``mode="text"``: one turn, no tools offered; the prompt says to answer directly from the image.
- ``mode="adaptive"``: tools offered (:data:`howeval.benchmarks.adapt.tools.TOOL_SCHEMAS` as OpenAI ``tools``, or
  described in the system prompt in the plain-text format when ``tool_format="text"``). Each turn the
  model either calls tools or answers. Every call is parsed (:mod:`howeval.benchmarks.adapt.toolcalls`), run on the
  CURRENT image (the latest tool output; the original with ``chain=False``) and its result goes back in
  the next turn, following OpenAI's convention::

      assistant  {"content": text, "tool_calls": [...]}                 (the model's turn, unchanged)
      tool       {"tool_call_id": id, "content": "zoom_in succeeded: ..."}  (one per call)
      user       [text, image_url(result 1), ...]                          (tool messages carry no images)

  Plain-text calls (no ``tool_call_id``) get a single user message with the result texts and images.
  A bad call (parse error, unknown tool, box outside the image...) gets its error message back, counts
  as ineffective, and the loop goes on. At most ``max_turns`` model calls: calls made in the last turn
  are recorded as not executed and the turn's text is the final answer (``hit_turn_limit``).
- ``mode="oracle"``: one turn, no tools; the gold evidence crops (``evidence_boxes``) follow the image
  up front as extra images.

A Completion with ``error`` ends the item with the error recorded on the result; nothing raises for
one bad request. :func:`run_adaptive_batch` advances many items turn by turn, one ``engine.generate``
call per turn, so batched engines stay busy; :func:`run_adaptive` is the one-item form.

Steps: ``steps`` counts the reasoning steps of the final text with
:func:`howeval.parsing.steps.segment_steps` (the CRYSTAL segmenter: "Step k:" markers, numbered or
bulleted items, non-trivial lines, else sentences). ``trajectory_steps`` lists the segments of every
assistant turn (tool-call markup removed), for key-step coverage.
"""
from __future__ import annotations

import base64
import io
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from PIL import Image

from howeval.benchmarks.adapt.items import AdaptItem, parse_item
from howeval.benchmarks.adapt.toolcalls import ToolCall, parse_tool_calls, strip_tool_calls
from howeval.benchmarks.adapt.tools import TOOL_SCHEMAS, TOOLS, check_box, run_tool, zoom_in
from howeval.engines.base import ChatRequest, Completion
from howeval.engines.prompts import format_question, image_data_url, image_mime
from howeval.parsing.steps import segment_steps

ADAPT_MODES = ("text", "adaptive", "oracle")
"""The three inference modes of SPEC section 4."""

TOOL_FORMATS = ("openai", "text")


@dataclass(frozen=True)
class AdaptPrompts:
    """Instruction texts per mode (system messages) and the answer-format line appended to questions."""

    text: str = (
        "Answer the question directly from the image by reasoning in text. "
        "No tools are available: do not call any tool."
    )
    adaptive: str = (
        "You can answer directly, or first call visual tools to inspect the image when that helps "
        "(zoom in on a region, rotate it, change its contrast or brightness). Each tool acts on the latest "
        "image you were shown, in its pixel coordinates, and its result comes back as a new image. "
        "Call tools only when needed."
    )
    oracle: str = (
        "Answer the question from the image. The first image is the full picture; the images after it "
        "are crops of the regions that contain the evidence."
    )
    text_tool_format: str = (
        "To call a tool, write one line per call, either\n"
        '<tool_call>{{"name": "<tool>", "arguments": {{...}}}}</tool_call>\n'
        "or\nTOOL: <tool>(arg=value, ...)\n"
        "and stop; the result comes in the next message. Tools:\n{tools}"
    )
    answer_format: str = "End your response with a line 'Answer: <your final answer>'."


@dataclass
class CallRecord:
    """One tool call: its turn, name, arguments, and outcome (``status`` ok / error / not_executed)."""

    turn: int
    name: str
    arguments: dict[str, Any] | None
    status: str
    error: str | None = None
    source: str = "openai"
    output_size: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TurnRecord:
    """One model turn: user-facing text, reasoning channel, finish reason, tokens, number of calls."""

    turn: int
    text: str
    reasoning: str | None
    finish_reason: str
    completion_tokens: int
    n_tool_calls: int
    error: str | None = None


@dataclass
class AdaptiveResult:
    """The outcome of one item in one mode.

    ``called`` is True when the model made any tool call (executed or not): the "called a tool" of
    the MCC confusion. ``n_ineffective`` counts calls that were executed and failed or did not parse.
    ``correct`` stays None until a verifier scores ``final_text`` against ``answer``.
    """

    uid: str
    mode: str
    domain: str
    question: str
    answer: str | None
    answer_type: str
    final_text: str = ""
    final_reasoning: str | None = None
    calls: list[CallRecord] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    n_calls: int = 0
    n_ineffective: int = 0
    called: bool = False
    n_turns: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    steps: int = 0
    trajectory_steps: list[str] = field(default_factory=list)
    images_sent: int = 0
    hit_turn_limit: bool = False
    truncated: bool = False
    error: str | None = None
    correct: bool | None = None
    call_images: dict[int, tuple[Image.Image, Image.Image | None]] = field(default_factory=dict, repr=False,
                                                                            compare=False)
    """Per executed call (its index in ``calls``): ``(the image it acted on, its output image or None when it
    failed)``, in memory for the tool-effectiveness judge (``howeval.judges.process``); not in :meth:`to_dict`."""

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON-serialisable) for Ray Data rows and Parquet (without ``call_images``)."""
        d = asdict(replace(self, call_images={}))  # asdict deep-copies: the images are left out before
        del d["call_images"]
        return d


# ----------------------------------------------------------------------------- helpers
def image_to_data_url(img: Image.Image) -> str:
    """PNG-encode a PIL image as a ``data:image/png;base64,...`` URL (lossless, so pixels survive)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return image_data_url(buf.getvalue())


def data_url_to_image(url: str) -> Image.Image:
    """Decode a ``data:image/...;base64,`` URL back to a PIL image (used by tests and engines)."""
    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError(f"not a base64 data URL: {url[:40]!r}")
    img = Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1])))
    img.load()
    return img


def _load_image(image: Any) -> tuple[Image.Image, str]:
    """(RGB PIL image, data URL of the original). Encoded bytes in a common format are sent unchanged."""
    if isinstance(image, Image.Image):
        pil = image if image.mode == "RGB" else image.convert("RGB")
        return pil, image_to_data_url(pil)
    if isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
        src = Image.open(io.BytesIO(data))
        src.load()
        pil = src if src.mode == "RGB" else src.convert("RGB")
        url = image_data_url(data) if image_mime(data) else image_to_data_url(pil)
        return pil, url
    raise TypeError(f"item image must be encoded bytes or a PIL image, got {type(image).__name__}")


def as_item(item: AdaptItem | dict[str, Any]) -> AdaptItem:
    """An :class:`AdaptItem` from an item or a dict row (``image`` or the first of ``images``: bytes or PIL)."""
    if isinstance(item, AdaptItem):
        return item
    if not isinstance(item, dict):
        raise TypeError(f"item must be an AdaptItem or a dict, got {type(item).__name__}")
    row = dict(item)
    img = row.pop("image", None)
    if img is None:
        img = row.pop("I", None)
    if img is None and row.get("images"):
        img = row.pop("images")[0]
    if img is None:
        raise ValueError(f"item has no 'image' (or 'images'); present: {sorted(item)}")
    uid = row.get("uid", row.get("sample_id", row.get("id")))
    parsed = parse_item({**row, "image": "<in-memory>"}, where=f"item {uid!r}", default_uid="item")
    parsed.image = img
    return parsed


def _tool_list_text() -> str:
    lines = []
    for spec in TOOLS.values():
        args = ", ".join(f"{n}: {p.description}" for n, p in spec.params.items())
        lines.append(f"- {spec.name}({', '.join(spec.params)}): {spec.description} Arguments: {args}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- one conversation
class _Conversation:
    """The state of one item in one mode across turns."""

    def __init__(self, item: AdaptItem, mode: str, *, tool_format: str, chain: bool, oracle_scale: float,
                 prompts: AdaptPrompts, request_kwargs: dict[str, Any]):
        self.item, self.mode, self.tool_format, self.chain = item, mode, tool_format, chain
        self.request_kwargs = request_kwargs
        self.original, url = _load_image(item.image)
        self.current = self.original
        self.done = False
        self.result = AdaptiveResult(
            uid=item.uid, mode=mode, domain=item.domain, question=item.question,
            answer=item.answer, answer_type=item.answer_type,
        )
        system = {"text": prompts.text, "adaptive": prompts.adaptive, "oracle": prompts.oracle}[mode]
        if mode == "adaptive" and tool_format == "text":
            system += "\n\n" + prompts.text_tool_format.format(tools=_tool_list_text())
        content: list[dict[str, Any]] = [
            {"type": "text", "text": format_question(item.question, item.options, prompts.answer_format, sep="\n\n")},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        if mode == "oracle":
            for box in item.evidence_boxes:
                check_box(box, self.original.size)  # a bad gold box is a data error: raise
                crop = zoom_in(self.original, box, scale=oracle_scale)
                content.append({"type": "image_url", "image_url": {"url": image_to_data_url(crop)}})
        self.result.images_sent = len(content) - 1
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": content},
        ]

    def request(self, turn: int) -> ChatRequest:
        offer = self.mode == "adaptive" and self.tool_format == "openai"
        return ChatRequest(
            messages=[dict(m) for m in self.messages],
            tools=TOOL_SCHEMAS if offer else None,
            request_id=f"{self.item.uid}:{self.mode}:t{turn}",
            **self.request_kwargs,
        )

    def advance(self, c: Completion, turn: int, last: bool) -> None:
        r = self.result
        r.n_turns = turn
        r.tokens += int(c.completion_tokens or 0)
        r.prompt_tokens += int(c.prompt_tokens or 0)
        calls = [] if c.error else parse_tool_calls(c.text, c.tool_calls)
        r.turns.append(TurnRecord(turn, c.text or "", c.reasoning, c.finish_reason, int(c.completion_tokens or 0), len(calls), c.error))
        visible = strip_tool_calls(c.text)
        r.trajectory_steps.extend(segment_steps(visible))
        if c.error:
            r.error, self.done = c.error, True
            return
        if not calls or self.mode != "adaptive" or last:
            reason = None
            if calls and self.mode != "adaptive":
                reason = f"tools are not offered in {self.mode} mode"
            elif calls:
                reason = f"turn limit {turn} reached"
                r.hit_turn_limit = True
            for tc in calls:
                self._record(turn, tc, "not_executed", reason)
            self._finish(c, visible)
            return
        self._execute(c, calls, turn)

    def _finish(self, c: Completion, visible: str) -> None:
        r = self.result
        r.final_text, r.final_reasoning, r.truncated = visible, c.reasoning, bool(c.truncated)
        r.steps = len(segment_steps(visible))
        self.done = True

    def _record(self, turn: int, tc: ToolCall, status: str, error: str | None, size=None,
                images: tuple[Image.Image, Image.Image | None] | None = None) -> None:
        r = self.result
        if images is not None:
            r.call_images[len(r.calls)] = images
        r.calls.append(CallRecord(turn, tc.name, tc.arguments, status, error, tc.source, size))
        r.n_calls += 1
        r.called = True
        if status == "error":
            r.n_ineffective += 1

    def _execute(self, c: Completion, calls: list[ToolCall], turn: int) -> None:
        openai_style = bool(c.tool_calls)
        assistant: dict[str, Any] = {"role": "assistant", "content": c.text or ""}
        if openai_style:
            tcs = []
            for k, (raw, tc) in enumerate(zip(c.tool_calls or [], calls)):
                tc.id = tc.id or f"call_{turn}_{k}"
                tcs.append({**raw, "id": tc.id} if isinstance(raw, dict) else raw)
            assistant["tool_calls"] = tcs
        self.messages.append(assistant)

        texts: list[str] = []
        images: list[Image.Image] = []
        for tc in calls:
            io_images = None
            if tc.parse_error:
                status, err, size, msg = "error", tc.parse_error, None, f"{tc.name or 'tool call'} failed: {tc.parse_error}"
            else:
                base = self.current if self.chain else self.original
                res = run_tool(base, tc.name, tc.arguments)
                io_images = (base, res.image if res.ok else None)
                if res.ok:
                    images.append(res.image)
                    if self.chain:
                        self.current = res.image
                    size = res.image.size
                    status, err = "ok", None
                    msg = f"{tc.name} succeeded: result image {len(images)} below ({size[0]}x{size[1]} px)."
                else:
                    status, err, size, msg = "error", res.error, None, f"{tc.name} failed: {res.error}"
            self._record(turn, tc, status, err, size, io_images)
            if openai_style:
                self.messages.append({"role": "tool", "tool_call_id": tc.id, "content": msg})
            else:
                texts.append(msg)

        parts: list[dict[str, Any]] = []
        if openai_style:
            if images:
                parts.append({"type": "text", "text": "Result image(s) of the tool call(s) above."})
        else:
            parts.append({"type": "text", "text": "Tool results:\n" + "\n".join(texts)})
        parts.extend({"type": "image_url", "image_url": {"url": image_to_data_url(im)}} for im in images)
        if parts:
            self.messages.append({"role": "user", "content": parts})


# ----------------------------------------------------------------------------- entry points
def run_adaptive_batch(
    engine: Any,
    items: list[AdaptItem | dict[str, Any]],
    mode: str,
    max_turns: int = 4,
    *,
    tool_format: str = "openai",
    chain: bool = True,
    oracle_scale: float = 1.0,
    prompts: AdaptPrompts | None = None,
    max_tokens: int = 1024,
    temperature: float = 0.0,
    **request_kwargs: Any,
) -> list[AdaptiveResult]:
    """Run many items in one mode, one ``engine.generate`` call per turn for all unfinished items.

    Args:
        engine: anything with ``generate(list[ChatRequest]) -> list[Completion]``.
        items: :class:`AdaptItem` or dict rows (image as encoded bytes or PIL).
        mode: ``"text"``, ``"adaptive"`` or ``"oracle"``.
        max_turns: most model calls per item in adaptive mode (text and oracle use one).
        tool_format: ``"openai"`` (tools passed as ``ChatRequest.tools``) or ``"text"`` (described in the
            system prompt; for engines without native tool calling). Both reply formats are parsed either way.
        chain: tools act on the latest tool output (True) or always on the original image (False).
        oracle_scale: upscaling of the oracle evidence crops (1 = native pixels).
        prompts: instruction texts; defaults to :class:`AdaptPrompts`.
        max_tokens, temperature, **request_kwargs: passed to every :class:`ChatRequest`
            (e.g. ``seed``, ``chat_template_kwargs``, ``reasoning_effort``).

    Returns:
        One :class:`AdaptiveResult` per item, in order.
    """
    if mode not in ADAPT_MODES:
        raise ValueError(f"mode must be one of {ADAPT_MODES}, got {mode!r}")
    if tool_format not in TOOL_FORMATS:
        raise ValueError(f"tool_format must be one of {TOOL_FORMATS}, got {tool_format!r}")
    if not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be an int >= 1, got {max_turns!r}")
    turns = max_turns if mode == "adaptive" else 1
    convs = [
        _Conversation(as_item(it), mode, tool_format=tool_format, chain=chain, oracle_scale=oracle_scale,
                      prompts=prompts or AdaptPrompts(),
                      request_kwargs={"max_tokens": max_tokens, "temperature": temperature, **request_kwargs})
        for it in items
    ]
    for turn in range(1, turns + 1):
        active = [cv for cv in convs if not cv.done]
        if not active:
            break
        completions = engine.generate([cv.request(turn) for cv in active])
        if len(completions) != len(active):
            raise RuntimeError(
                f"engine {getattr(engine, 'name', engine)!r} returned {len(completions)} completions for {len(active)} requests"
            )
        for cv, comp in zip(active, completions):
            cv.advance(comp, turn, last=turn == turns)
    return [cv.result for cv in convs]


def run_adaptive(engine: Any, item: AdaptItem | dict[str, Any], mode: str, max_turns: int = 4, **kwargs: Any) -> AdaptiveResult:
    """Run one item in one mode; see :func:`run_adaptive_batch` for the arguments."""
    return run_adaptive_batch(engine, [item], mode, max_turns, **kwargs)[0]
