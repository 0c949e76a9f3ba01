"""A corpus of degenerate model outputs for the scorer fuzz tests (deep nesting, towers of powers,
repeated openers, huge numbers, NUL bytes, 1 MB responses), and a helper that times one scorer call.

Timing uses the calling thread's CPU time (``time.thread_time``), not wall-clock time: the machine is
shared and loaded, and a scorer that returns must not be blamed for time it spent waiting for a core.
Work done in a budget child process is bounded by the budget itself (its reason says so).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

ITEM_BOUND_S = 2.0
"""The per-item bound of issue 12: every scorer returns within 2 s of its own CPU time."""

MB = 1_000_000

# (name, text). Names appear in test ids.
CORPUS: list[tuple[str, str]] = [
    ("json-nesting-2000", '{"a":' * 2000 + "1" + "}" * 2000),
    ("tower-10", r"\boxed{10^{10^{10}}}"),
    ("tower-9", r"\boxed{9^{9^{9^{9}}}}"),
    ("tower-paren", r"The answer is 2^(3^(4^5))."),
    ("big-exponent", r"\boxed{7^{123456789}}"),
    ("big-factorial", r"\boxed{123456!}"),
    ("boxed-openers-4000", r"\boxed{" * 4000),
    ("boxed-openers-closed", r"\boxed{" * 2000 + "1" + "}" * 2000),
    ("many-boxes", r"so \boxed{1}. " * 12000),
    ("parens-5000", "(" * 5000),
    ("brackets-balanced-1000", "[" * 1000 + "]" * 1000),
    ("frac-nesting-300", r"\frac{" * 300 + "1" + "}{2}" * 300),
    ("sqrt-nesting-300", r"\boxed{" + r"\sqrt{" * 300 + "2" + "}" * 301),
    ("digits-5000", "The answer is " + "9" * 5000 + "."),
    ("digits-4000-boxed", r"\boxed{" + "1" + "0" * 4000 + "}"),
    ("digits-999", r"\boxed{" + "7" * 999 + "}"),
    ("nul-bytes", "The answer is \x00 5\x00.\x00" * 10),
    ("nul-only", "\x00" * 10_000),
    ("lone-surrogate", "The answer is \ud800 (B)."),
    ("mixed-unicode", "Ответ: ５ 🙂 \u202e(C)\u202c é\u0301"),
    ("one-mb-letters", "a" * MB),
    ("one-mb-answers", "The answer is 5. " * (MB // 17)),
    ("near-limit-repetition", "Wait, the answer is 5 or maybe 6. " * 5000),
    ("near-limit-sentences", "Step 1: add 2 and 3 to get 5. " * 6000),
    ("answer-is-20000", "answer is " * 20000),
    ("dollars", "$" * 100_000),
    ("newlines", "\n" * 150_000 + "The answer is 3."),
    ("think-openers", "<think>" * 10_000),
    ("fences", "```" * 10_000),
    ("quotes", '"' * 50_000),
    ("bullets", "- " * 90_000),
    ("long-word", "x" * 150_000 + " is the answer"),
    ("division-by-zero", r"\boxed{\frac{1}{0}}"),
    ("option-echo", "(A) Yes (B) No (A) Yes (B) No " * 2000),
    ("crystal-like", '{"reasoning_steps": [' + '"s", ' * 20000 + '"t"], "answer": "B"}'),
    ("empty", ""),
    ("spaces", " " * 10_000),
]


def run_in_thread(fn: Callable[[], Any]) -> tuple[Any, float, BaseException | None]:
    """Run ``fn`` on a fresh (non-main) thread: ``(result, thread CPU seconds, exception or None)``."""
    box: dict[str, Any] = {}

    def target() -> None:
        t0 = time.thread_time()
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - any failure, even SystemExit, is the result the test asserts on
            box["error"] = e
        box["cpu"] = time.thread_time() - t0

    t = threading.Thread(target=target, name="fuzz-scorer")
    t.start()
    t.join(120)
    if t.is_alive():
        raise AssertionError("scorer did not return within 120 s of wall time")
    return box.get("result"), box["cpu"], box.get("error")
