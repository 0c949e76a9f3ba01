"""Tests for howeval.actors.adapt: AdaptMMBench episodes on one Arrow batch, without Ray (replay engine, fake embedder)."""
from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from howeval.actors.adapt import AdaptStage
from howeval.config import AdaptConfig, JudgesConfig, ModelConfig
from howeval.records import ADAPT_SCHEMA, MissingColumnsError


class WordOverlapEmbedder:
    """Stands in for StepEmbedder: similarity 1.0 when two steps share a word of 4+ letters, else 0.0."""

    def __init__(self, model_path=None):
        self.model_path = model_path

    @staticmethod
    def similarity(a, b):
        words = lambda s: {w for w in s.lower().replace(".", " ").split() if len(w) >= 4}  # noqa: E731
        return np.array([[float(bool(words(x) & words(y))) for y in b] for x in a])


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (0, 0, 255)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def stage(tmp_path, monkeypatch):
    import howeval.embed

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    path = tmp_path / "recorded.jsonl"
    # the replay engine keys an adapt turn by its request id "<uid>:<mode>:t<turn>"
    lines = [{"sample_id": "s1:text:t1", "response": "The sign is red.\nIt reads STOP.\nAnswer: STOP"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    settings = AdaptConfig(modes=["text"]).for_engine("replay")
    model = ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"NT": {}})
    return AdaptStage(model, settings, ADAPT_SCHEMA)


def _row(sid: str, mode: str = "text", **kw) -> dict:
    return {"sample_id": sid, "config": "rep", "adapt_mode": mode, "images": [_png()], "question": "What does the sign say?",
            "answer": "STOP", "answer_type": "other_text", "options": None, "evidence_boxes": [[0, 0, 8, 8]],
            "key_steps": ["Find the sign", "Read the word STOP"], "domain": "ocr", **kw}


def test_episode_verified_and_key_steps_covered(stage):
    out = stage(pa.Table.from_pylist([_row("s1")])).to_pylist()
    (r,) = out
    assert (r["sample_id"], r["config"], r["mode"], r["domain"]) == ("s1", "rep", "text", "ocr")
    assert (r["correct"], r["verify_method"], r["error"]) == (True, "rule", None)
    assert (r["called"], r["n_calls"], r["n_turns"], r["steps"]) == (False, 0, 1, 3)
    assert r["trajectory_steps"] == ["The sign is red.", "It reads STOP.", "Answer: STOP"]
    # "Find the sign" shares "sign" with step 1, "Read the word STOP" shares "stop" with steps 2 and 3
    assert r["key_step_coverage"] == 1.0
    assert json.loads(r["calls"]) == []


def test_engine_error_row_has_no_verdict_and_no_coverage(stage):
    (r,) = stage(pa.Table.from_pylist([_row("s2")])).to_pylist()
    assert r["error"].startswith("replay: no recorded response")
    assert r["correct"] is None and r["verify_method"] is None and r["key_step_coverage"] is None


def test_coverage_edge_cases(stage):
    assert stage.coverage(None, ["x"]) is None and stage.coverage([], ["x"]) is None
    assert stage.coverage(["Read the sign"], []) == 0.0
    assert stage.coverage(["Read the sign", "Count apples"], ["The sign is red."]) == 0.5


def test_missing_columns_are_named(stage):
    row = {k: v for k, v in _row("s1").items() if k != "evidence_boxes"}
    with pytest.raises(MissingColumnsError, match=r"AdaptStage: missing columns \['evidence_boxes'\]"):
        stage(pa.Table.from_pylist([row]))


def test_dumped_configs_are_refused_not_revalidated(tmp_path):
    model = ModelConfig(name="rep", engine="replay", options={"path": str(tmp_path / "r.jsonl")}, modes={"NT": {}})
    settings = AdaptConfig(modes=["text"]).for_engine("replay")
    with pytest.raises(TypeError, match="settings: expected a AdaptConfig, got dict"):
        AdaptStage(model, settings.model_dump(), ADAPT_SCHEMA)
    with pytest.raises(TypeError, match="model_config: expected a ModelConfig, got dict"):
        AdaptStage(model.model_dump(), settings, ADAPT_SCHEMA)
    with pytest.raises(ValueError, match="tool_format is None"):
        AdaptStage(model, AdaptConfig(modes=["text"]), ADAPT_SCHEMA)


def test_process_judge_decides_coverage_and_tool_effectiveness(tmp_path, monkeypatch):
    """Issue 31: with ``adapt.process_judge`` set, coverage and each executed call's effectiveness come from
    the LLM judge (the scripted fake OpenAI-compatible server), recorded with the method; without it the
    embedding match stays the named default."""
    import howeval.embed

    from fakes.chat_server import ScriptedChatServer, last_text

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    path = tmp_path / "recorded.jsonl"
    lines = [{"sample_id": "s1:adaptive:t1", "response": "The sign is small.\nTOOL: zoom_in(box=[0, 0, 16, 12])"},
             {"sample_id": "s1:adaptive:t2", "response": "It reads STOP.\nAnswer: STOP"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    model = ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"NT": {}})

    def script(n, body):
        user = last_text(body)
        if "Key steps:" in user:
            return ("ok", '{"covered": [true, false], "reason": "never reads the word"}')
        return ("ok", '{"effective": true, "reason": "the box holds the sign"}' if "zoom_in" in user else "?")

    with ScriptedChatServer(script) as srv:
        settings = AdaptConfig(modes=["adaptive"], process_judge={"model": "gpt-5", "options": {"base_url": srv.base_url}},
                               process_judge_cache=str(tmp_path / "cache")).for_engine("replay")
        (r,) = AdaptStage(model, settings, ADAPT_SCHEMA)(pa.Table.from_pylist([_row("s1", "adaptive")])).to_pylist()
    assert (r["called"], r["n_calls"], r["correct"]) == (True, 1, True)
    assert r["key_step_coverage"] == 0.5 and r["coverage_method"] == "llm:gpt-5@gpt-5|process-v2"
    assert r["coverage_error"] is None and (r["n_calls_effective"], r["n_calls_judged"]) == (1, 1)
    # the same episode without a process judge: the word-overlap stand-in covers both key steps
    plain = AdaptStage(model, AdaptConfig(modes=["adaptive"]).for_engine("replay"), ADAPT_SCHEMA)
    (p,) = plain(pa.Table.from_pylist([_row("s1", "adaptive")])).to_pylist()
    assert p["coverage_method"] == "embedding@0.35" and p["key_step_coverage"] == 1.0
    assert p["n_calls_judged"] is None


def _replay_model(tmp_path, lines: list[dict]) -> ModelConfig:
    path = tmp_path / "recorded.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ModelConfig(name="rep", engine="replay", options={"path": str(path)}, modes={"NT": {}})


DESCRIPTIVE = "A red octagonal road sign that tells drivers to stop"
"""A descriptive gold answer: the rules cannot decide against it (``verify`` leaves it unresolved)."""


def test_unresolved_answer_goes_to_the_sweeps_llm_verifier(tmp_path, monkeypatch):
    """Issue 41: an answer the rules leave open goes to ``judges.verifier.llm_fallback`` (the sweep's verifier,
    its cache included); without one it keeps no verdict, method ``unresolved``, and says on the row that it
    counts as not correct. The old stage used the rules alone (correct None, method "rule", no reason)."""
    import howeval.embed

    from fakes.chat_server import ScriptedChatServer, last_text

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    model = _replay_model(tmp_path, [{"sample_id": "s1:text:t1", "response": "It is a stop sign.\nAnswer: a red stop sign"}])
    settings = AdaptConfig(modes=["text"]).for_engine("replay")
    row = _row("s1", answer=DESCRIPTIVE, answer_type="free_form")

    (plain,) = AdaptStage(model, settings, ADAPT_SCHEMA)(pa.Table.from_pylist([row])).to_pylist()
    assert (plain["correct"], plain["verify_method"], plain["verifier"]) == (None, "unresolved", "rules@2")
    assert plain["verify_reason"] == ("rules could not decide (unresolved: descriptive reference; rules cannot judge "
                                      "it); no LLM verifier configured (judges.verifier.llm_fallback): counted as not "
                                      "correct in the all-items accuracy (AdaptMMBench's figure)")

    graded = []

    def grader(n, body):
        graded.append(last_text(body))
        return ("ok", '{"correct": true, "reason": "a red stop sign is the octagonal stop sign"}')

    with ScriptedChatServer(grader) as srv:
        judges = JudgesConfig(verifier={"llm_fallback": {"model": "grader", "options": {"base_url": srv.base_url}}})
        stage = AdaptStage(model, settings, ADAPT_SCHEMA, judges=judges, cache_dir=str(tmp_path / "jc"))
        (r,) = stage(pa.Table.from_pylist([row])).to_pylist()
        assert (r["correct"], r["verify_method"], r["verifier"]) == (True, "llm", "rules+llm@2")
        assert r["verify_reason"].startswith("a red stop sign is the octagonal stop sign (rules: unresolved")
        assert len(graded) == 1 and DESCRIPTIVE in graded[0] and "a red stop sign" in graded[0]
        # the write-ahead cache: the same answer again costs no second call
        (again,) = AdaptStage(model, settings, ADAPT_SCHEMA, judges=judges,
                              cache_dir=str(tmp_path / "jc"))(pa.Table.from_pylist([row])).to_pylist()
        assert again["correct"] is True and len(graded) == 1
    # a verifier that fails: no verdict, the failure and its consequence on the row
    with ScriptedChatServer(lambda n, body: ("ok", "I cannot tell")) as srv:
        judges = JudgesConfig(verifier={"llm_fallback": {"model": "grader", "options": {"base_url": srv.base_url}}})
        (bad,) = AdaptStage(model, settings, ADAPT_SCHEMA, judges=judges)(pa.Table.from_pylist([row])).to_pylist()
    assert (bad["correct"], bad["verify_method"]) == (None, "llm_error")
    assert bad["verify_reason"].startswith("no JSON verdict in judge reply")
    assert bad["verify_reason"].endswith("counted as not correct in the all-items accuracy (AdaptMMBench's figure)")


def test_effectiveness_judge_sees_each_calls_real_output_image(tmp_path, monkeypatch, shared_data):
    """Issue 41: the tool-effectiveness judge gets the image a call acted on and the image it returned (the pattern
    judge's image protocol: ``image_url`` parts before the text), not the text ``output image WxH``. On a real
    TabMWP table image (``../shared/data``), a zoom on the table, a zoom on the blank strip under it and a
    rotation; the scripted judge decides from the output pixels alone (effective when over 2% of them are ink),
    so its verdicts follow the real crops. The old stage sent no image: every call would be judged "?" twice
    and fail."""
    import base64

    import howeval.embed
    from howeval.benchmarks.adapt.tools import run_tool

    from fakes.chat_server import ScriptedChatServer, last_text

    monkeypatch.setattr(howeval.embed, "StepEmbedder", WordOverlapEmbedder)
    image = (shared_data / "vqa" / "images" / "tabmwp" / "10744.png").read_bytes()
    original = Image.open(io.BytesIO(image)).convert("RGB")
    assert original.size == (216, 192)
    calls = {"table": "TOOL: zoom_in(box=[11, 9, 205, 183])", "blank": "TOOL: zoom_in(box=[0, 184, 216, 192])",
             "turned": "TOOL: rotate(degrees=90)"}
    lines = []
    for uid, call in calls.items():
        lines += [{"sample_id": f"{uid}:adaptive:t1", "response": f"I need the prices in the table.\n{call}"},
                  {"sample_id": f"{uid}:adaptive:t2", "response": "A lamp is $74.21 and a vase $91.93.\nAnswer: 166.14"}]
    model = _replay_model(tmp_path, lines)
    seen = {}

    def decode(url):
        return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")

    def judge(n, body):
        content = body["messages"][-1]["content"]
        if "Key steps:" in last_text(body):
            return ("ok", '{"covered": [true, true, true], "reason": "reads both prices and adds"}')
        assert isinstance(content, list), "the effectiveness request carries images"
        captions = [p.get("text") for p in content if p["type"] == "text"]
        urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
        assert captions[:2] == ["The image the tool was applied to:", "The tool's output image:"] and len(urls) == 2
        src, out = decode(urls[0]), decode(urls[1])
        ink = float((np.asarray(out.convert("L")) < 128).mean())
        seen[last_text(body).split("Tool call: ", 1)[1].split("\n", 1)[0]] = (src, out, ink)
        return ("ok", json.dumps({"effective": ink > 0.02, "reason": f"{100 * ink:.1f}% of the output is ink"}))

    key_steps = ["Read the price of a lamp", "Read the price of a crystal vase", "Add the two prices"]
    rows = [_row(uid, "adaptive", images=[image], question="How much money does Jenna need to buy a lamp and a crystal vase?",
                 answer="166.14", answer_type="decimal_number", key_steps=key_steps, domain="ocr") for uid in calls]
    with ScriptedChatServer(judge) as srv:
        settings = AdaptConfig(modes=["adaptive"], process_judge={"model": "gpt-5", "options": {"base_url": srv.base_url}},
                               process_judge_cache=str(tmp_path / "cache")).for_engine("replay")
        out = {r["sample_id"]: r for r in AdaptStage(model, settings, ADAPT_SCHEMA)(pa.Table.from_pylist(rows)).to_pylist()}
    assert {u: (r["called"], r["correct"], r["n_calls_effective"], r["n_calls_judged"]) for u, r in out.items()} == {
        "table": (True, True, 1, 1), "blank": (True, True, 0, 1), "turned": (True, True, 1, 1)}
    # what the judge saw: the real image as the input, and each call's real output, pixel for pixel
    table = seen['zoom_in({"box": [11, 9, 205, 183]})']
    blank = seen['zoom_in({"box": [0, 184, 216, 192]})']
    turned = seen['rotate({"degrees": 90})']
    for src, _out, _ink in (table, blank, turned):
        assert src.tobytes() == original.tobytes()
    for (_src, got, _ink), args in ((table, ("zoom_in", {"box": [11, 9, 205, 183]})),
                                    (blank, ("zoom_in", {"box": [0, 184, 216, 192]})),
                                    (turned, ("rotate", {"degrees": 90}))):
        want = run_tool(original, *args).image
        assert got.size == want.size and got.tobytes() == want.convert("RGB").tobytes()
    assert table[1].size == (388, 348) and turned[1].size == (192, 216)  # zoom doubles; rotation turns the frame
    assert table[2] > 0.05 and blank[2] == 0.0
