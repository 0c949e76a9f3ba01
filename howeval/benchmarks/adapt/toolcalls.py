"""Parse a model's tool calls, from OpenAI ``tool_calls`` or from plain text.

Accepted forms, tried in this order:

1. OpenAI ``tool_calls`` on the completion: ``[{"id", "type": "function", "function": {"name",
   "arguments"}}]`` where ``arguments`` is a JSON string (a dict is accepted too).
2. Plain text, for models or engines without native tool calling. Two formats, which may be mixed
   and repeated in one response (calls are returned in text order):

   - a JSON object between tags (Hermes/Qwen style)::

         <tool_call>{"name": "zoom_in", "arguments": {"box": [10, 20, 30, 40]}}</tool_call>

     ``"arguments"`` may also be a JSON string; ``"parameters"`` is accepted as its alias.
   - one call per line after ``TOOL:`` with Python-literal keyword arguments::

         TOOL: zoom_in(box=[10, 20, 30, 40], scale=2)

A call that cannot be parsed is still returned, with ``parse_error`` set (and ``arguments`` None
when they are unreadable), so the loop can count it as an ineffective call rather than ignore it.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
"""``<tool_call>...</tool_call>``; an unclosed tag runs to the end of the text (a cut-off response)."""

TOOL_LINE = re.compile(r"^[ \t>*-]*TOOL:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
"""A ``TOOL: name(k=v, ...)`` line (leading list or quote markers are tolerated)."""


@dataclass
class ToolCall:
    """One parsed tool call.

    Attributes:
        name: the tool's name ("" when even that could not be read).
        arguments: the parsed argument object, or None when unreadable.
        raw: the text the call was parsed from (the JSON string for OpenAI calls).
        parse_error: None when parsed cleanly, else why not.
        id: the OpenAI ``tool_call_id``, or None for plain-text calls.
        source: ``"openai"``, ``"tag"`` or ``"line"``.
    """

    name: str
    arguments: dict[str, Any] | None
    raw: str
    parse_error: str | None = None
    id: str | None = None
    source: str = "openai"


def parse_openai_tool_calls(tool_calls: list[dict[str, Any]] | None) -> list[ToolCall]:
    """Parse OpenAI-format ``tool_calls``; unparsable ones come back with ``parse_error`` set.

    >>> parse_openai_tool_calls([{"id": "c1", "type": "function",
    ...     "function": {"name": "rotate", "arguments": '{"degrees": 90}'}}])[0].arguments
    {'degrees': 90}
    """
    out: list[ToolCall] = []
    for tc in tool_calls or []:
        fn = tc.get("function") if isinstance(tc, dict) else None
        call_id = tc.get("id") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            out.append(ToolCall("", None, repr(tc), f"tool call lacks a 'function' object: {tc!r}", call_id))
            continue
        name = fn.get("name") if isinstance(fn.get("name"), str) else ""
        raw_args = fn.get("arguments")
        raw = raw_args if isinstance(raw_args, str) else json.dumps(raw_args)
        args, err = _as_args(raw_args)
        if not name:
            err = err or f"tool call has no function name: {fn!r}"
        out.append(ToolCall(name, args, raw, err, call_id, "openai"))
    return out


def parse_text_tool_calls(text: str | None) -> list[ToolCall]:
    """Parse ``<tool_call>{...}</tool_call>`` blocks and ``TOOL: name(k=v)`` lines, in text order.

    >>> [c.name for c in parse_text_tool_calls('look\\nTOOL: zoom_in(box=[0, 0, 2, 2])')]
    ['zoom_in']
    >>> parse_text_tool_calls('<tool_call>{"name": "rotate", "arguments": {"degrees": 90}}</tool_call>')[0].arguments
    {'degrees': 90}
    """
    if not text:
        return []
    found: list[tuple[int, ToolCall]] = []
    for m in TOOL_CALL_TAG.finditer(text):
        found.append((m.start(), _parse_tag_body(m.group(1))))
    tag_spans = [m.span() for m in TOOL_CALL_TAG.finditer(text)]
    for m in TOOL_LINE.finditer(text):
        if any(a <= m.start() < b for a, b in tag_spans):
            continue
        found.append((m.start(), _parse_call_expr(m.group(1))))
    return [c for _, c in sorted(found, key=lambda p: p[0])]


def parse_tool_calls(text: str | None, tool_calls: list[dict[str, Any]] | None = None) -> list[ToolCall]:
    """All tool calls of one completion: its OpenAI ``tool_calls`` when present, else those in ``text``."""
    if tool_calls:
        return parse_openai_tool_calls(tool_calls)
    return parse_text_tool_calls(text)


def strip_tool_calls(text: str | None) -> str:
    """``text`` without its plain-text tool calls (tag blocks and ``TOOL:`` lines), stripped.

    >>> strip_tool_calls('Let me zoom.\\nTOOL: zoom_in(box=[0, 0, 2, 2])')
    'Let me zoom.'
    """
    if not text:
        return ""
    text = TOOL_CALL_TAG.sub("", text)
    text = TOOL_LINE.sub("", text)
    return text.strip()


def _as_args(raw_args: Any) -> tuple[dict[str, Any] | None, str | None]:
    if raw_args is None or raw_args == "":
        return {}, None
    if isinstance(raw_args, dict):
        return raw_args, None
    if not isinstance(raw_args, str):
        return None, f"arguments must be a JSON object or string, got {type(raw_args).__name__}"
    try:
        val = json.loads(raw_args)
    except json.JSONDecodeError as e:
        return None, f"arguments are not valid JSON ({e.msg} at char {e.pos}): {raw_args[:200]!r}"
    if not isinstance(val, dict):
        return None, f"arguments must decode to a JSON object, got {type(val).__name__}: {raw_args[:200]!r}"
    return val, None


def _parse_tag_body(body: str) -> ToolCall:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        # Salvage the name so the error report says which tool was meant.
        m = re.search(r'"name"\s*:\s*"([^"]+)"', body)
        return ToolCall(m.group(1) if m else "", None, body, f"<tool_call> body is not valid JSON ({e.msg}): {body[:200]!r}", None, "tag")
    if not isinstance(obj, dict):
        return ToolCall("", None, body, f"<tool_call> body must be a JSON object, got {type(obj).__name__}", None, "tag")
    name = obj.get("name") if isinstance(obj.get("name"), str) else ""
    raw_args = obj.get("arguments", obj.get("parameters"))
    args, err = _as_args(raw_args)
    if not name:
        err = err or f"<tool_call> object has no string 'name': {body[:200]!r}"
    return ToolCall(name, args, body, err, None, "tag")


def _parse_call_expr(expr: str) -> ToolCall:
    """``name(k=v, ...)`` with Python-literal values (lists, numbers, strings)."""
    name_m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", expr)
    name = name_m.group(1) if name_m else ""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError as e:
        return ToolCall(name, None, expr, f"TOOL line is not a call name(k=v, ...): {e.msg}: {expr!r}", None, "line")
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return ToolCall(name, None, expr, f"TOOL line is not a call name(k=v, ...): {expr!r}", None, "line")
    if node.args:
        return ToolCall(node.func.id, None, expr, f"TOOL call must use keyword arguments only (k=v): {expr!r}", None, "line")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return ToolCall(node.func.id, None, expr, f"TOOL call cannot use **kwargs: {expr!r}", None, "line")
        try:
            args[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return ToolCall(node.func.id, None, expr, f"argument {kw.arg!r} is not a literal value: {expr!r}", None, "line")
    # Tuples (``box=(1, 2, 3, 4)``) become lists, as JSON would give.
    args = {k: list(v) if isinstance(v, tuple) else v for k, v in args.items()}
    return ToolCall(node.func.id, args, expr, None, None, "line")
