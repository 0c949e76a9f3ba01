"""Ray Data stage: generate responses with a policy engine (one engine per actor).

Input columns: the Sample columns plus ``config`` and ``mode``. Output: Response rows
(``howeval.records.RESPONSE_SCHEMA``). A failure of the engine on a row is written on that row
(``error``), never dropped; the rest of the batch goes on.
"""
from __future__ import annotations

import pyarrow as pa

from howeval.config import ModelConfig, check_config
from howeval.engines.base import Completion
from howeval.engines.messages import count_images, prompt_record
from howeval.engines.prompts import build_request
from howeval.engines.registry import build_engine
from howeval.records import RESPONSE_SCHEMA, check_columns, conform, response_hash

INPUT_ERROR = "input_error"
"""Optional input column: why the row's input could not be prepared (set by ``howeval/actors/images.py``)."""

REQUIRED_COLUMNS = {
    "sample_id": "benchmark item id", "config": "model config name", "mode": "NT or T",
    "question": "prompt text", "images": "image bytes", "options": "answer options or null",
    "answer": "gold answer (copied to the response row)", "answer_type": "verifier type",
    "family": "VG/OS/KR", "category": "task category", "benchmark": "benchmark name",
}


def response_row(sample: dict, model: ModelConfig, mode: str, c: Completion, images_seen: int,
                 prompt: str | None = None) -> dict:
    """One Response record from a sample and its completion; ``prompt`` is the prompt as sent
    (``howeval.engines.messages.prompt_record``)."""
    return {
        "sample_id": sample["sample_id"], "config": model.name, "mode": mode, "model": model.model or "embedded",
        "engine": model.engine, "benchmark": sample["benchmark"], "family": sample["family"],
        "category": sample["category"], "question": sample["question"], "answer": sample["answer"],
        "answer_type": sample["answer_type"], "options": sample.get("options"),
        "reasoning": c.reasoning, "response": c.text, "finish_reason": c.finish_reason, "truncated": c.truncated,
        "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "latency_s": c.latency_s,
        "images_seen": images_seen, "error": c.error,
        "response_hash": None if c.error else response_hash(c.text, c.reasoning),
        "prompt": prompt, "raw_output": c.raw,
        "attempt": sample.get("attempt") or 1,
    }


class PolicyStage:
    """Stage class of a sweep's ``generate`` stage (``howeval.plugins.patterneval.generate_stage``; run by Ray Data actors).

    Args:
        model_config: the ``ModelConfig`` (pickled once per actor); its engine gets the typed options
            object (``ModelConfig.engine_options()``).

    Raises:
        TypeError: ``model_config`` is not a ``ModelConfig`` (a dict is not re-validated here).
    """

    def __init__(self, model_config: ModelConfig):
        check_config(model_config, ModelConfig, "model_config")
        self.model = model_config
        self.engine = build_engine(self.model.engine, self.model.model, self.model.engine_options())
        # "ocr" sends text only (any engine); True sends pixels only to engines that take images
        self.vision = self.model.vision == "ocr" or (self.model.vision and getattr(self.engine, "supports_images", True))

    def __call__(self, batch: pa.Table) -> pa.Table:
        check_columns(batch.column_names, REQUIRED_COLUMNS, "PolicyStage")
        all_rows = batch.to_pylist()
        # a row whose input could not be read (howeval/actors/images.py: input_error) is recorded, not sent
        rows = [r for r in all_rows if not r.get(INPUT_ERROR)]
        model = self.model if self.vision else self.model.model_copy(update={"vision": False})
        reqs = [build_request(r, model, r["mode"]) for r in rows]
        try:
            comps = self.engine.generate(reqs) if reqs else []
            if len(comps) != len(reqs):
                raise RuntimeError(f"engine returned {len(comps)} completions for {len(reqs)} requests")
        except Exception as e:  # noqa: BLE001 - the whole call failed: record on every row, keep going
            comps = [Completion(text="", finish_reason="error", error=f"engine: {type(e).__name__}: {e}") for _ in reqs]
        done = {id(r): (q, c) for r, q, c in zip(rows, reqs, comps)}
        out = []
        for r in all_rows:
            if id(r) in done:
                q, c = done[id(r)]
                out.append(response_row(r, self.model, r["mode"], c, count_images(q.messages),
                                        prompt_record(q, r.get("image_names"))))
            else:
                out.append(response_row(r, self.model, r["mode"], Completion(text="", finish_reason="error",
                                                                             error=r[INPUT_ERROR]), 0))
        return conform(out, RESPONSE_SCHEMA)
