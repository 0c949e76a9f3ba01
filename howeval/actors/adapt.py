"""Ray Data stage: AdaptMMBench episodes (text / adaptive / oracle-visual) with a policy engine.

Input: Sample columns with ``evidence_boxes`` plus ``config`` and ``adapt_mode``. Output: one row per
item and mode (``howeval.records.ADAPT_SCHEMA``), the final answer verified with ``howeval.judges.verify``.
An engine failure ends that item with ``error`` set; the rest of the batch goes on.
"""
from __future__ import annotations

import dataclasses
import json

import pyarrow as pa

from howeval.benchmarks.adapt.loop import run_adaptive_batch
from howeval.benchmarks.adapt.metrics import key_step_coverage
from howeval.config import AdaptConfig, ModelConfig, check_config
from howeval.engines.registry import build_engine
from howeval.judges.verify import verify
from howeval.records import check_columns, conform

REQUIRED_COLUMNS = {"sample_id": "item id", "images": "image bytes", "question": "question", "answer": "gold",
                    "answer_type": "verifier type", "evidence_boxes": "gold boxes", "adapt_mode": "text|adaptive|oracle",
                    "config": "model config"}


class AdaptStage:
    """Stage class of an ``adapt:<config>`` pipeline (``howeval.plugins.adapt.Adapt``); one engine per actor.

    Args:
        model_config: the config whose engine runs the episodes (pickled once per actor).
        settings: the sweep's ``adapt:`` block with ``tool_format`` filled in for this engine
            (``howeval.plugins.adapt.adapt_settings``): turns, tokens per turn, coverage threshold, embedder.
        schema: the output schema (``howeval.records.ADAPT_SCHEMA``).

    Raises:
        TypeError: ``model_config`` or ``settings`` is not the config object (a dict is not re-validated here).
        ValueError: ``settings.tool_format`` is unset (call ``AdaptConfig.for_engine`` first).
    """

    def __init__(self, model_config: ModelConfig, settings: AdaptConfig, schema: pa.Schema):
        check_config(model_config, ModelConfig, "model_config")
        check_config(settings, AdaptConfig, "settings")
        if settings.tool_format is None:
            raise ValueError("settings.tool_format is None: pass AdaptConfig.for_engine(engine), which fills it in")
        self.model, self.settings, self.schema = model_config, settings, schema
        self.engine = build_engine(self.model.engine, self.model.model, self.model.engine_options())
        from howeval.embed import StepEmbedder

        self.embedder = StepEmbedder(model_path=settings.embedder)
        self.process_judge = None
        if settings.process_judge is not None:  # the paper's LLM judge of coverage and tool effectiveness
            import os

            from howeval.judges.cache import CachingEngine, JudgeCache
            from howeval.judges.process import LLMProcessJudge, process_readable

            pj = settings.process_judge
            cache = JudgeCache(settings.process_judge_cache
                               or os.path.expanduser("~/.cache/howeval/judge_cache/adapt-process"))
            judge = LLMProcessJudge(build_engine("openai", pj.model, pj.options), pj.model, pj.model,
                                    max_tokens=pj.max_tokens, temperature=pj.temperature)
            judge.engine = CachingEngine(judge.engine, cache, judge.judge_id, process_readable)
            self.process_judge = judge

    def judged(self, rows: list[dict], results: list) -> list[dict]:
        """Per row: ``key_step_coverage`` / ``coverage_method`` / ``coverage_error`` and the tool calls judged
        effective (``n_calls_effective`` of ``n_calls_judged``), by the process judge when configured, else
        coverage by embedding match (``coverage_method`` ``embedding@<tau>``) and no effectiveness counts."""
        out = [{"key_step_coverage": None, "coverage_method": None, "coverage_error": None,
                "n_calls_effective": None, "n_calls_judged": None} for _ in rows]
        todo = [i for i, (r, res) in enumerate(zip(rows, results)) if not res.error and r.get("key_steps")]
        if self.process_judge is None:
            for i in todo:
                out[i]["key_step_coverage"] = self.coverage(rows[i]["key_steps"], list(results[i].trajectory_steps))
                out[i]["coverage_method"] = f"embedding@{self.settings.coverage_tau}"
            return out
        judge = self.process_judge
        verdicts = judge.coverage_batch([{"question": rows[i]["question"], "key_steps": rows[i]["key_steps"],
                                          "steps": list(results[i].trajectory_steps)} for i in todo])
        for i, v in zip(todo, verdicts):
            out[i].update(key_step_coverage=v.value, coverage_method=f"llm:{judge.judge_id}", coverage_error=v.error)
        calls = [(i, c) for i, res in enumerate(results) if not res.error for c in res.calls if c.status != "not_executed"]
        texts = {(i, t.turn): t.text for i, res in enumerate(results) for t in res.turns}
        eff = judge.effectiveness_batch([{
            "question": rows[i]["question"], "step": (texts.get((i, c.turn)) or "").strip()[-600:], "tool": c.name,
            "arguments": c.arguments, "status": c.status + (f" ({c.error})" if c.error else ""),
            "result": None if c.output_size is None else f"output image {c.output_size[0]}x{c.output_size[1]}",
        } for i, c in calls])
        for i, res in enumerate(results):
            if not res.error:
                out[i]["n_calls_effective"], out[i]["n_calls_judged"] = 0, 0
        for (i, _c), v in zip(calls, eff):
            if v.value is not None:  # a failed judgment counts in neither (never a default decision)
                out[i]["n_calls_judged"] += 1
                out[i]["n_calls_effective"] += bool(v.value)
        return out

    def coverage(self, key_steps: list[str] | None, steps: list[str]) -> float | None:
        """Key-step coverage by embedding match at ``coverage_tau`` (SPEC 4); None without key steps."""
        if not key_steps:
            return None
        if not steps:
            return 0.0
        return key_step_coverage(key_steps, steps, self.embedder.similarity, tau=self.settings.coverage_tau)

    def __call__(self, batch: pa.Table) -> pa.Table:
        check_columns(batch.column_names, REQUIRED_COLUMNS, "AdaptStage")
        rows = batch.to_pylist()
        out = []
        for mode in sorted({r["adapt_mode"] for r in rows}):
            sel = [r for r in rows if r["adapt_mode"] == mode]
            items = [{"uid": r["sample_id"], "image": r["images"][0], "question": r["question"], "answer": r["answer"],
                      "answer_type": r["answer_type"], "options": r.get("options") or [],
                      "evidence_boxes": r.get("evidence_boxes") or [], "key_steps": r.get("key_steps") or [],
                      "domain": r.get("domain") or "unknown"} for r in sel]
            try:
                results = run_adaptive_batch(self.engine, items, mode, self.settings.max_turns,
                                             tool_format=self.settings.tool_format,
                                             max_tokens=self.settings.max_tokens, temperature=0.0)
            except Exception as e:  # noqa: BLE001 - the whole batch failed in the engine: recorded on each row
                out += [{"sample_id": r["sample_id"], "config": self.model.name, "mode": mode,
                         "error": f"{type(e).__name__}: {e}"} for r in sel]
                continue
            process = self.judged(sel, results)
            for r, res, pj in zip(sel, results, process):
                v = None if res.error else verify(res.final_text or "", r["answer"], r["answer_type"], r.get("options"))
                out.append({
                    "sample_id": r["sample_id"], "config": self.model.name, "mode": mode, "domain": r.get("domain"),
                    "correct": None if v is None else v.correct, "verify_method": None if v is None else v.method,
                    "called": res.called, "n_calls": res.n_calls, "n_ineffective": res.n_ineffective,
                    "tokens": res.tokens, "steps": res.steps, "n_turns": res.n_turns, "final_text": res.final_text,
                    "trajectory_steps": list(res.trajectory_steps), "key_steps": r.get("key_steps"),
                    **pj,
                    "calls": json.dumps([dataclasses.asdict(c) for c in res.calls], default=str),
                    "error": res.error,
                })
        return conform(out, self.schema)
