"""Ray Data stage: AdaptMMBench episodes (text / adaptive / oracle-visual) with a policy engine.

Input: Sample columns with ``evidence_boxes`` plus ``config`` and ``adapt_mode``. Output: one row per
item and mode (``howeval.records.ADAPT_SCHEMA``), the final answer verified as the sweep verifies responses
(``howeval.judges.pipeline.Judger.verify_rows``: the rules, then the sweep's ``judges.verifier.llm_fallback``
for what they leave open, through the run's write-ahead judge cache). Where no LLM verifier is configured an
answer the rules leave open keeps ``correct`` null with ``verify_method`` ``"unresolved"`` and a
``verify_reason`` that says it counts as not correct in the paper's all-items accuracy
(``howeval.benchmarks.adapt.metrics.summarize``). An engine failure ends that item with ``error`` set; the rest
of the batch goes on.
"""
from __future__ import annotations

import dataclasses
import json

import pyarrow as pa

from howeval.benchmarks.adapt.loop import run_adaptive_batch
from howeval.benchmarks.adapt.metrics import key_step_coverage
from howeval.config import AdaptConfig, JudgesConfig, ModelConfig, check_config
from howeval.engines.registry import build_engine
from howeval.judges.pipeline import Judger
from howeval.judges.verify import VerifyResult
from howeval.records import check_columns, conform

METHOD_UNRESOLVED = "unresolved"
"""``verify_method`` of an answer the rules could not decide with no LLM verifier configured (the reward
server's name for the same case)."""
NOT_CORRECT_NOTE = "counted as not correct in the all-items accuracy (AdaptMMBench's figure)"

REQUIRED_COLUMNS = {"sample_id": "item id", "images": "image bytes", "question": "question", "answer": "gold",
                    "answer_type": "verifier type", "evidence_boxes": "gold boxes", "adapt_mode": "text|adaptive|oracle",
                    "config": "model config"}


JUDGE_INPUT_MAX_SIDE = 1024
"""The image a call acted on goes to the effectiveness judge at most this many pixels a side (a thumbnail keeps
the request small; the judge needs where the box lies, not every pixel); the output image goes as it is."""


def call_image_urls(images) -> dict:
    """``{"input_image", "output_image"}`` PNG data URLs of one executed call's ``AdaptiveResult.call_images``
    entry: the image it acted on (shrunk to :data:`JUDGE_INPUT_MAX_SIDE` a side when larger) and its output,
    pixel for pixel (None when the call failed); {} without an entry (a call that did not parse ran on no image)."""
    if not images:
        return {}
    from howeval.benchmarks.adapt.loop import image_to_data_url

    src, out = images
    if max(src.size) > JUDGE_INPUT_MAX_SIDE:
        src = src.copy()
        src.thumbnail((JUDGE_INPUT_MAX_SIDE, JUDGE_INPUT_MAX_SIDE))
    return {"input_image": image_to_data_url(src), "output_image": None if out is None else image_to_data_url(out)}


class AdaptStage:
    """Stage class of an ``adapt:<config>`` pipeline (``howeval.plugins.adapt.Adapt``); one engine per actor.

    Args:
        model_config: the config whose engine runs the episodes (pickled once per actor).
        settings: the sweep's ``adapt:`` block with ``tool_format`` filled in for this engine
            (``howeval.plugins.adapt.adapt_settings``): turns, tokens per turn, coverage threshold, embedder.
        schema: the output schema (``howeval.records.ADAPT_SCHEMA``).
        judges: the sweep's ``judges:`` block; only its verifier is used (rules, then ``llm_fallback`` when
            set). None = the rules alone.
        cache_dir: the run's write-ahead judge cache folder (``howeval.judges.cache.judge_cache_dir``) for the
            LLM verifier's calls (the verifier id is the namespace, as in the sweep's judge stage), or None.

    Raises:
        TypeError: ``model_config`` or ``settings`` is not the config object (a dict is not re-validated here).
        ValueError: ``settings.tool_format`` is unset (call ``AdaptConfig.for_engine`` first).
    """

    def __init__(self, model_config: ModelConfig, settings: AdaptConfig, schema: pa.Schema,
                 judges: JudgesConfig | None = None, cache_dir: str | None = None):
        check_config(model_config, ModelConfig, "model_config")
        check_config(settings, AdaptConfig, "settings")
        if judges is not None:
            check_config(judges, JudgesConfig, "judges")
        # the sweep's verifier, no pattern judge (only=[]): the same rules, LLM fallback and cache as JudgeStage
        self.verifier = Judger(judges or JudgesConfig(), only=[], cache_dir=cache_dir)
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
        calls = [(i, k, c) for i, res in enumerate(results) if not res.error
                 for k, c in enumerate(res.calls) if c.status != "not_executed"]
        texts = {(i, t.turn): t.text for i, res in enumerate(results) for t in res.turns}
        eff = judge.effectiveness_batch([{
            "question": rows[i]["question"], "step": (texts.get((i, c.turn)) or "").strip()[-600:], "tool": c.name,
            "arguments": c.arguments, "status": c.status + (f" ({c.error})" if c.error else ""),
            "result": None if c.output_size is None else f"output image {c.output_size[0]}x{c.output_size[1]}",
            **call_image_urls(results[i].call_images.get(k)),
        } for i, k, c in calls])
        for i, res in enumerate(results):
            if not res.error:
                out[i]["n_calls_effective"], out[i]["n_calls_judged"] = 0, 0
        for (i, _k, _c), v in zip(calls, eff):
            if v.value is not None:  # a failed judgment counts in neither (never a default decision)
                out[i]["n_calls_judged"] += 1
                out[i]["n_calls_effective"] += bool(v.value)
        return out

    def verified(self, rows: list[dict], results: list) -> list[VerifyResult | None]:
        """The verdict on each episode's final answer (None for an engine error: no answer).

        ``Judger.verify_rows`` decides (rules, then the LLM fallback when configured; a truncated final answer
        is wrong with method ``truncated``). An answer still without a verdict keeps ``correct`` None and gets
        a reason saying it counts as not correct in the all-items accuracy; with no LLM verifier configured
        its method is :data:`METHOD_UNRESOLVED` (the rules' reason kept)."""
        todo = [i for i, res in enumerate(results) if not res.error]
        verdicts = self.verifier.verify_rows([{
            "question": rows[i]["question"], "response": results[i].final_text or "", "answer": rows[i]["answer"],
            "answer_type": rows[i]["answer_type"], "options": rows[i].get("options"),
            "benchmark": rows[i].get("benchmark"), "truncated": results[i].truncated} for i in todo])
        out: list[VerifyResult | None] = [None] * len(rows)
        for i, v in zip(todo, verdicts):
            if v.correct is None and self.verifier.llm_verifier is None:
                v = VerifyResult(None, v.extracted, METHOD_UNRESOLVED,
                                 f"rules could not decide ({v.reason}); no LLM verifier configured "
                                 f"(judges.verifier.llm_fallback): {NOT_CORRECT_NOTE}")
            elif v.correct is None:
                v = VerifyResult(None, v.extracted, v.method, f"{v.reason}: {NOT_CORRECT_NOTE}")
            out[i] = v
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
                         "domain": r.get("domain"), "error": f"{type(e).__name__}: {e}"} for r in sel]
                continue
            process = self.judged(sel, results)
            for r, res, pj, v in zip(sel, results, process, self.verified(sel, results)):
                out.append({
                    "sample_id": r["sample_id"], "config": self.model.name, "mode": mode, "domain": r.get("domain"),
                    "correct": None if v is None else v.correct, "verify_method": None if v is None else v.method,
                    "verify_reason": None if v is None else v.reason, "verifier": self.verifier.verifier_id,
                    "called": res.called, "n_calls": res.n_calls, "n_ineffective": res.n_ineffective,
                    "tokens": res.tokens, "steps": res.steps, "n_turns": res.n_turns, "final_text": res.final_text,
                    "trajectory_steps": list(res.trajectory_steps), "key_steps": r.get("key_steps"),
                    **pj,
                    "calls": json.dumps([dataclasses.asdict(c) for c in res.calls], default=str),
                    "error": res.error,
                })
        return conform(out, self.schema)
