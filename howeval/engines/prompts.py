"""Build policy requests from samples: the question, options and images, switched into a mode."""
from __future__ import annotations

import base64

from howeval.config import ModelConfig
from howeval.engines.base import ChatRequest

ANSWER_INSTRUCTION = "Put your final answer in \\boxed{}."

_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
                (b"GIF89a", "image/gif"))


def image_mime(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes (sniffed from the header), or None for anything else.

    >>> image_mime(b"\\x89PNG\\r\\n\\x1a\\n...."), image_mime(b"plain text")
    ('image/png', None)
    """
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_data_url(data: bytes) -> str:
    """``data:<mime>;base64,...`` for encoded image bytes (:func:`image_mime`; unknown formats:
    ``application/octet-stream``)."""
    return f"data:{image_mime(data) or 'application/octet-stream'};base64,{base64.b64encode(data).decode('ascii')}"


def format_question(question: str, options: list[str] | None, instruction: str | None, *, sep: str = "\n") -> str:
    """The question, its lettered options (``A. ...``, one a line) when it has any, and the instruction
    when non-empty, joined by ``sep`` (the sweep uses one newline, the AdaptMMBench loop a blank line).

    Raises:
        ValueError: more than 26 options.

    >>> format_question(" Pick ", ["x", "y"], "Answer: <letter>")
    'Pick\\nA. x\\nB. y\\nAnswer: <letter>'
    """
    opts = list(options or [])
    if len(opts) > 26:
        raise ValueError(f"options: at most 26 can be lettered A..Z, got {len(opts)}")
    parts = [question.strip()]
    if opts:
        parts.append("\n".join(f"{chr(ord('A') + i)}. {o}" for i, o in enumerate(opts)))
    if instruction:
        parts.append(instruction)
    return sep.join(parts)


CRYSTAL_INSTRUCTION = ('Answer with a JSON object only: {"reasoning_steps": ["step 1", "step 2", ...], '
                       '"answer": "final answer"}.')
"""The CRYSTAL output format (SPEC section 3), used to make models write explicit steps."""


def question_text(sample: dict) -> str:
    """The question with lettered options (``A. ...``) when it has any, and the one answer instruction:
    the sample's ``instruction`` (its benchmark's ``answer_instruction``) when set, ``""`` for none, else
    :data:`ANSWER_INSTRUCTION`.

    >>> question_text({"question": "2+2?", "instruction": "Answer with a number."})
    '2+2?\\nAnswer with a number.'
    >>> question_text({"question": "2+2?", "instruction": ""}), question_text({"question": "2+2?"})
    ('2+2?', '2+2?\\nPut your final answer in \\\\boxed{}.')
    """
    instruction = sample.get("instruction")
    return format_question(sample["question"], sample.get("options"),
                           ANSWER_INSTRUCTION if instruction is None else instruction)


def build_request(sample: dict, model: ModelConfig, mode: str) -> ChatRequest:
    """The ChatRequest for ``sample`` under ``model`` in ``mode`` ("NT" or "T").

    Images go as ``image_url`` parts (data URLs) before the text when ``model.vision`` is True; with
    ``vision: ocr`` each image's OCR text (:func:`howeval.engines.ocr.ocr_block`, cached per image) goes
    before the question instead; with ``vision: false`` they are left out (text-only models; the report
    says so).

    Raises:
        KeyError: ``mode`` is not configured for this model (lists the configured modes).
    """
    if mode not in model.modes:
        raise KeyError(f"config {model.name!r} has no mode {mode!r}; configured: {sorted(model.modes)}")
    mc = model.modes[mode]
    parts: list[dict] = []
    images = sample.get("images") or []
    text = question_text(sample)
    if model.vision == "ocr":
        from howeval.engines.ocr import ocr_block

        if images:
            text = f"{ocr_block(images)}\n\n{text}"
    elif model.vision:
        parts += [{"type": "image_url", "image_url": {"url": image_data_url(b)}} for b in images]
    parts.append({"type": "text", "text": text})
    messages = []
    if mc.system_prompt:
        messages.append({"role": "system", "content": mc.system_prompt})
    messages.append({"role": "user", "content": parts})
    s = model.sampling
    return ChatRequest(
        messages=messages, max_tokens=mc.max_tokens or s.max_tokens, temperature=s.temperature, top_p=s.top_p,
        top_k=s.top_k, min_p=s.min_p, presence_penalty=s.presence_penalty, repetition_penalty=s.repetition_penalty,
        seed=s.seed, chat_template_kwargs=dict(mc.chat_template_kwargs), reasoning_effort=mc.reasoning_effort,
        extra_body=dict(mc.extra_body), request_id=f"{sample['sample_id']}|{model.name}|{mode}",
        reasoning_opener_in_template=mc.reasoning_opener_in_template,
    )
