"""Key-step generation for new AdaptMMBench items (issue 31): an LLM writes, a person verifies.

AdaptMMBench paper (003, evaluation pipeline step (1), data construction): "key reasoning steps K are
generated with GPT-5 and verified by humans, forming the five-tuple (I, Q, A, E, K)". The writer job
(``howeval/ray_jobs/build_keysteps.py``) asks a model for the key steps of each item from its question, options,
answer and image (:func:`keystep_instruction`), parses each reply (:func:`parse_key_steps`) and writes a
review file (:func:`review_record`): one JSON object per line with the proposed steps and
``status: pending``. A person sets each ``status``:

- ``accepted``: ``proposed_steps`` become the item's key steps;
- ``edited``: the person's ``key_steps`` (a non-empty list of strings) become them;
- ``rejected`` or ``pending``: the item gets none from this file.

:func:`read_review` checks a reviewed file, and :func:`apply_review` puts the accepted / edited steps into
items' ``key_steps`` (``python -m howeval.benchmarks.adapt.keysteps --review R --manifest M --out O`` does it
for a manifest). Pure core: no Ray, no engine.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from howeval.engines.prompts import format_question
from howeval.parsing.text import find_json_object

__all__ = ["KEYSTEP_VERSION", "REVIEW_STATUSES", "KeyStepParseError", "keystep_instruction", "keystep_prompt",
           "parse_key_steps", "review_record", "read_review", "reviewed_key_steps", "apply_review"]

KEYSTEP_VERSION = 1
"""Bumped when the instruction or the parser changes (recorded on each review row as ``writer_version``)."""

REVIEW_STATUSES = ("pending", "accepted", "edited", "rejected")
"""A review row's ``status``: only ``accepted`` and ``edited`` rows give an item key steps."""

MAX_STEPS = 8
"""At most this many key steps are accepted from a writer (the paper's K is a short list of key steps)."""

_LIST_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•]|step\s*\d+\s*[:.)])\s*(.+?)\s*$", re.I)


class KeyStepParseError(ValueError):
    """A writer's reply holds no usable key-step list; ``str(e)`` is the reason (recorded as ``error``)."""


def keystep_instruction(answer: str, *, max_steps: int = 5) -> str:
    """What the writer is asked after the question (and its lettered options): the key steps that lead to
    ``answer``, as JSON.

    Args:
        answer: the item's gold answer (a letter for multiple choice), shown so the steps reach it.
        max_steps: the most steps asked for, 1..:data:`MAX_STEPS`.

    Raises:
        ValueError: ``max_steps`` out of range.

    >>> print(keystep_instruction("B", max_steps=3))  # doctest: +ELLIPSIS
    The correct answer is: B
    Write the key reasoning steps ... at most 3 steps, ...
    Answer with a JSON object only: {"key_steps": ["step 1", "step 2", ...]}
    """
    if not 1 <= max_steps <= MAX_STEPS:
        raise ValueError(f"max_steps must be in 1..{MAX_STEPS}, got {max_steps}")
    return (f"The correct answer is: {str(answer).strip()}\n"
            "Write the key reasoning steps that lead from the image and the question to this answer: the "
            "evidence to find in the image (where it is and what it shows) and each inference that is needed, "
            f"at most {max_steps} steps, each one short sentence, in order. Do not restate the question.\n"
            'Answer with a JSON object only: {"key_steps": ["step 1", "step 2", ...]}')


def keystep_prompt(item: dict, *, max_steps: int = 5) -> str:
    """The full user text for one item (``question``, ``options``, ``answer``): the question, its lettered
    options and :func:`keystep_instruction`; the image goes beside it as the item's image.

    >>> keystep_prompt({"question": "Which is red?", "options": ["sky", "apple"], "answer": "B"}).splitlines()[:4]
    ['Which is red?', 'A. sky', 'B. apple', 'The correct answer is: B']
    """
    return format_question(item["question"], item.get("options"), keystep_instruction(item["answer"], max_steps=max_steps))


def _clean(steps: list[Any]) -> list[str]:
    if not all(isinstance(s, str) for s in steps):
        bad = next(s for s in steps if not isinstance(s, str))
        raise KeyStepParseError(f"key_steps: every step must be a string, got {type(bad).__name__} {bad!r}")
    return [" ".join(s.split()) for s in steps if s.strip()]


def parse_key_steps(text: str | None, *, max_steps: int = MAX_STEPS) -> list[str]:
    """The key steps of a writer's reply: the ``key_steps`` list of its JSON object (the last one that has
    it), else its numbered / bulleted lines (``1. ...``, ``- ...``, ``Step 2: ...``); whitespace collapsed,
    empty steps dropped.

    Args:
        text: the reply (None or empty for a failed generation).
        max_steps: more steps than this is a failure (a reply that lists everything is no key-step list).

    Returns:
        1..``max_steps`` steps.

    Raises:
        KeyStepParseError: the reason: an empty reply, no JSON ``key_steps`` list and no list lines, a
            non-string step, no step left, or too many.

    >>> parse_key_steps('Sure. {"key_steps": ["Find the red bar.", " Read its value:  42. "]}')
    ['Find the red bar.', 'Read its value: 42.']
    >>> parse_key_steps("1. Locate the sign.\\n2. Rotate it upright.\\nSo the answer is B.")
    ['Locate the sign.', 'Rotate it upright.']
    """
    if not text or not text.strip():
        raise KeyStepParseError("empty reply")
    obj = find_json_object(text, lambda d: "key_steps" in d, last=True)
    if obj is not None:
        if not isinstance(obj["key_steps"], list):
            raise KeyStepParseError(f"key_steps: expected a list of strings, got {type(obj['key_steps']).__name__}")
        steps = _clean(obj["key_steps"])
    else:
        steps = [m.group(1) for line in text.splitlines() if (m := _LIST_LINE.match(line))]
        if not steps:
            raise KeyStepParseError('no JSON object with "key_steps" and no numbered or bulleted lines: '
                                    f"{text.strip()[:80]!r}")
        steps = _clean(steps)
    if not steps:
        raise KeyStepParseError("key_steps: the list is empty")
    if len(steps) > max_steps:
        raise KeyStepParseError(f"key_steps: {len(steps)} steps, more than {max_steps} (key steps only)")
    return steps


def review_record(item: dict, reply: str | None, *, writer: str, error: str | None = None,
                  max_steps: int = MAX_STEPS) -> dict:
    """One review-file row for ``item`` (``sample_id`` or ``uid``, ``question``, ``options``, ``answer``,
    ``image_names`` or ``image``) from the writer's ``reply`` (or the engine ``error`` of a failed call).

    Returns:
        ``{uid, question, options, answer, image, proposed_steps, writer, writer_version, error, status:
        "pending", key_steps: None, note: ""}``: ``proposed_steps`` is [] and ``error`` the reason when the
        reply could not be parsed (the reviewer may still write ``key_steps`` and set ``edited``).
    """
    steps, why = [], error
    if why is None:
        try:
            steps = parse_key_steps(reply, max_steps=max_steps)
        except KeyStepParseError as e:
            why = f"parse: {e}"
    image = item.get("image") or (item.get("image_names") or [None])[0]
    return {"uid": item.get("uid") or item["sample_id"], "question": item["question"], "options": item.get("options"),
            "answer": item["answer"], "image": image, "proposed_steps": steps, "writer": writer,
            "writer_version": KEYSTEP_VERSION, "error": why, "status": "pending", "key_steps": None, "note": ""}


def read_review(path: str | Path) -> list[dict]:
    """The rows of a review file (JSON Lines; a local path or fsspec URL), checked.

    Raises:
        ValueError: naming the line and field: invalid JSON, no ``uid``, a uid twice, a ``status`` not in
            :data:`REVIEW_STATUSES`, ``accepted`` with no ``proposed_steps``, ``edited`` whose ``key_steps``
            is not a non-empty list of non-empty strings.
    """
    import fsspec

    rows, seen = [], set()
    with fsspec.open(str(path), "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON ({e.msg}); one review row per line") from e
            where = f"{path}:{n}"
            if not isinstance(r, dict) or not r.get("uid"):
                raise ValueError(f"{where}: uid missing (keep the uid the writer job wrote)")
            if r["uid"] in seen:
                raise ValueError(f"{where}: uid {r['uid']!r} appears twice; keep one row per item")
            seen.add(r["uid"])
            st = r.get("status")
            if st not in REVIEW_STATUSES:
                raise ValueError(f"{where}: status {st!r} is not one of {list(REVIEW_STATUSES)}")
            if st == "accepted" and not r.get("proposed_steps"):
                raise ValueError(f"{where}: status accepted but proposed_steps is empty; write key_steps and set "
                                 "status: edited, or set rejected")
            if st == "edited":
                ks = r.get("key_steps")
                if not isinstance(ks, list) or not ks or not all(isinstance(s, str) and s.strip() for s in ks):
                    raise ValueError(f"{where}: status edited needs key_steps, a non-empty list of non-empty strings; "
                                     f"got {ks!r}")
            rows.append(r)
    return rows


def reviewed_key_steps(rows: list[dict]) -> dict[str, list[str]]:
    """``{uid: key steps}`` of the accepted (their ``proposed_steps``) and edited (their ``key_steps``) rows
    of :func:`read_review`; pending and rejected rows give nothing."""
    out = {}
    for r in rows:
        if r["status"] == "accepted":
            out[r["uid"]] = [str(s) for s in r["proposed_steps"]]
        elif r["status"] == "edited":
            out[r["uid"]] = [" ".join(s.split()) for s in r["key_steps"]]
    return out


def apply_review(items: list[dict], rows: list[dict], *, overwrite: bool = False) -> tuple[list[dict], dict[str, int]]:
    """Items (manifest rows with ``uid``) with ``key_steps`` from the reviewed rows.

    Args:
        items: manifest rows; not modified (copies are returned).
        rows: :func:`read_review` rows.
        overwrite: replace key steps an item already has (default: keep them, count it as ``kept``).

    Returns:
        (items, counts): counts = ``{applied, kept, pending, rejected, unknown}``; ``unknown`` counts
        reviewed uids that no item has (a review file of another manifest).
    """
    steps = reviewed_key_steps(rows)
    uids = {it.get("uid") for it in items}
    counts = {"applied": 0, "kept": 0, "pending": sum(r["status"] == "pending" for r in rows),
              "rejected": sum(r["status"] == "rejected" for r in rows), "unknown": len(set(steps) - uids)}
    out = []
    for it in items:
        it = dict(it)
        new = steps.get(it.get("uid"))
        if new is not None:
            if it.get("key_steps") and not overwrite:
                counts["kept"] += 1
            else:
                it["key_steps"] = new
                counts["applied"] += 1
        out.append(it)
    return out, counts


def main(argv: list[str] | None = None) -> int:
    """``python -m howeval.benchmarks.adapt.keysteps --review key_steps_review.jsonl --manifest M --out O``:
    the manifest with the reviewed key steps; prints the counts as JSON. Exit 2 on a bad review file."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m howeval.benchmarks.adapt.keysteps",
                                description="Put reviewed key steps into a manifest's key_steps.")
    p.add_argument("--review", required=True, help="the reviewed key_steps_review.jsonl (howeval.ray_jobs.build_keysteps)")
    p.add_argument("--manifest", required=True, help="the manifest (JSONL) whose items get key steps")
    p.add_argument("--out", required=True, help="the manifest written with key_steps (may not be --manifest)")
    p.add_argument("--overwrite", action="store_true", help="replace key steps an item already has")
    a = p.parse_args(argv)
    if Path(a.out).resolve() == Path(a.manifest).resolve():
        print("error: --out must differ from --manifest (the manifest is kept as it was)", file=sys.stderr)
        return 2
    try:
        rows = read_review(a.review)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with open(a.manifest, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    out, counts = apply_review(items, rows, overwrite=a.overwrite)
    src, dst = Path(a.manifest).resolve().parent, Path(a.out).resolve().parent
    if src != dst:  # relative image paths are relative to the manifest: keep them pointing at the same files
        for r in out:
            for k in ("image", "images"):
                v = r.get(k)
                if isinstance(v, str) and v and "://" not in v and not Path(v).is_absolute():
                    r[k] = str(src / v)
                elif isinstance(v, list):
                    r[k] = [str(src / x) if isinstance(x, str) and "://" not in x and not Path(x).is_absolute() else x
                            for x in v]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
