"""Per-sample logs of a run (``samples.jsonl`` and ``samples.parquet``), made from its stored records.

One line per response row, i.e. per (sample, config, mode): the prompt as sent (messages with image ids
instead of image bytes, and the request settings: ``howeval.engines.messages.prompt_record``; null for
runs made before it was stored), the raw output, the reasoning channel r_m, the response y_m, finish
reason, truncation, token counts, latency, images the engine received, the engine error; the verdict
(correct, extracted answer, method, reason, verifier); and every pattern judge's labels with evidence,
rationale and error. ``trigger`` is the primary judge's Trigger (null when it has no labels).

In JSONL, ``prompt`` and each judge's ``evidence`` are JSON objects; in Parquet (:data:`SAMPLES_SCHEMA`)
they are JSON strings, the verdict is a struct and the judges a list of structs.
"""
from __future__ import annotations

import json

import pyarrow as pa

from howeval.records import LABELS, RESPONSE_KEY, key_of

RESPONSE_FIELDS = ("sample_id", "config", "mode", "benchmark", "family", "category", "question", "answer",
                   "answer_type", "options", "model", "engine", "raw_output", "reasoning", "response",
                   "finish_reason", "truncated", "prompt_tokens", "completion_tokens", "latency_s", "images_seen",
                   "error", "response_hash")

_LABELS_T = pa.struct([(k, pa.bool_()) for k in LABELS])
SAMPLES_SCHEMA = pa.schema(
    [(f, pa.list_(pa.string()) if f == "options" else pa.int64() if f in ("prompt_tokens", "completion_tokens",
      "images_seen") else pa.float64() if f == "latency_s" else pa.bool_() if f == "truncated" else pa.string())
     for f in RESPONSE_FIELDS]
    + [("prompt", pa.string()),
       ("verdict", pa.struct([("correct", pa.bool_()), ("extracted", pa.string()), ("method", pa.string()),
                              ("reason", pa.string()), ("verifier", pa.string())])),
       ("primary_judge", pa.string()), ("trigger", pa.bool_()),
       ("judges", pa.list_(pa.struct([("judge", pa.string()), ("labels", _LABELS_T), ("evidence", pa.string()),
                                      ("rationale", pa.string()), ("error", pa.string())])))])


def _loads(text: str | None):
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text  # not JSON: keep the stored text as is


def _best_per_judge(judgments: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(sample_id, config, mode, response_hash) -> judge id -> judgment (one without error preferred)."""
    out: dict[tuple, dict[str, dict]] = {}
    for j in judgments:
        k = key_of(j, RESPONSE_KEY)
        cur = out.setdefault(k, {}).get(j["judge"])
        if cur is None or (cur.get("judge_error") and not j.get("judge_error")):
            out[k][j["judge"]] = j
    return out


def sample_records(responses: list[dict], judgments: list[dict], primary: str) -> list[dict]:
    """One dict per response (same order), in the JSONL form described in the module docstring.

    Args:
        responses: Response rows (``howeval.records.RESPONSE_SCHEMA``).
        judgments: Judgment rows of every judge (``JUDGMENT_SCHEMA``); matched on key and response hash.
        primary: the primary pattern judge's id (``name@version``): its verdict and Trigger come first.
    """
    best = _best_per_judge(judgments)
    out = []
    for r in responses:
        js = best.get(key_of({**r, "response_hash": r.get("response_hash")}, RESPONSE_KEY), {})
        order = sorted(js, key=lambda name: (name != primary, name))
        rec = {f: r.get(f) for f in RESPONSE_FIELDS}
        rec["prompt"] = _loads(r.get("prompt"))
        v = js[order[0]] if order else None
        rec["verdict"] = None if v is None else {"correct": v.get("correct"), "extracted": v.get("extracted"),
                                                 "method": v.get("verify_method"), "reason": v.get("verify_reason"),
                                                 "verifier": v.get("verifier")}
        rec["primary_judge"] = primary
        p = js.get(primary)
        labels = None if p is None or p.get("judge_error") else [p.get(k) for k in LABELS]
        rec["trigger"] = None if labels is None or None in labels else any(labels)
        rec["judges"] = [{"judge": name, "labels": {k: js[name].get(k) for k in LABELS},
                          "evidence": _loads(js[name].get("evidence")), "rationale": js[name].get("rationale"),
                          "error": js[name].get("judge_error")} for name in order]
        out.append(rec)
    return out


def to_jsonl(records: list[dict]) -> str:
    """One JSON object per line (UTF-8, non-ASCII kept)."""
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)


def to_table(records: list[dict]) -> pa.Table:
    """The records as a table of :data:`SAMPLES_SCHEMA` (``prompt`` and ``evidence`` as JSON strings)."""
    def dump(x):
        return None if x is None else (x if isinstance(x, str) else json.dumps(x, ensure_ascii=False, default=str))

    rows = [{**r, "prompt": dump(r["prompt"]),
             "judges": [{**j, "evidence": dump(j["evidence"])} for j in r["judges"]]} for r in records]
    return pa.Table.from_pylist(rows, schema=SAMPLES_SCHEMA)


def write_samples(run_dir: str, responses: list[dict], judgments: list[dict], primary: str) -> list[str]:
    """Write ``<run_dir>/samples.jsonl`` and ``<run_dir>/samples.parquet``; returns their URIs."""
    import pyarrow.parquet as pq

    from howeval.store import fs_and_path, join, write_text

    recs = sample_records(responses, judgments, primary)
    jl = join(run_dir, "samples.jsonl")
    write_text(jl, to_jsonl(recs))
    pqu = join(run_dir, "samples.parquet")
    fs, path = fs_and_path(pqu)
    with fs.open(path, "wb") as f:
        pq.write_table(to_table(recs), f)
    return [jl, pqu]
