"""The AdaptMMBench loop against a scripted engine, and the item loader."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from howeval.benchmarks.adapt.items import AdaptItem, load_adapt_items
from howeval.benchmarks.adapt.loop import data_url_to_image, run_adaptive, run_adaptive_batch
from howeval.benchmarks.adapt.tools import TOOL_SCHEMAS
from howeval.engines.base import ChatRequest, Completion


class ScriptedEngine:
    """Replies with a fixed sequence of completions per item (keyed by uid) and keeps every request."""

    name = "scripted"

    def __init__(self, script: list[Completion] | dict[str, list[Completion]]):
        self.script = script
        self.requests: list[ChatRequest] = []
        self.calls = 0

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.calls += 1
        out = []
        for req in requests:
            self.requests.append(req)
            uid, _, turn = req.request_id.rsplit(":", 2)
            seq = self.script[uid] if isinstance(self.script, dict) else self.script
            out.append(seq[int(turn[1:]) - 1])
        return out


def openai_call(name: str, args: dict, cid: str = "call_0") -> list[dict]:
    return [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]


def images_in(message: dict) -> list[np.ndarray]:
    content = message["content"]
    if not isinstance(content, list):
        return []
    return [np.asarray(data_url_to_image(p["image_url"]["url"])) for p in content if p.get("type") == "image_url"]


@pytest.fixture
def arr() -> np.ndarray:
    return np.random.default_rng(1).integers(0, 256, size=(30, 40, 3), dtype=np.uint8)


@pytest.fixture
def item(arr) -> dict:
    buf = io.BytesIO()
    Image.fromarray(arr, "RGB").save(buf, format="PNG")
    return {
        "uid": "it1",
        "image": buf.getvalue(),
        "question": "What is written on the sign?",
        "answer": "STOP",
        "answer_type": "free_form",
        "evidence_boxes": [[5, 4, 15, 10], [30, 20, 40, 30]],
        "key_steps": ["Find the sign.", "Read it."],
        "domain": "ocr",
    }


FINAL = Completion(text="I zoomed in.\nThe sign says STOP.\nAnswer: STOP", completion_tokens=7)


def test_openai_zoom_then_answer_sends_exact_crop(item, arr):
    eng = ScriptedEngine([
        Completion(text="Let me look closer.", tool_calls=openai_call("zoom_in", {"box": [5, 4, 15, 10], "scale": 2}), completion_tokens=5, finish_reason="tool_calls"),
        FINAL,
    ])
    r = run_adaptive(eng, item, "adaptive", max_turns=4)
    assert len(eng.requests) == 2
    first, second = eng.requests
    assert first.tools == TOOL_SCHEMAS
    assert [m["role"] for m in first.messages] == ["system", "user"]
    np.testing.assert_array_equal(images_in(first.messages[1])[0], arr)  # the original image
    roles = [m["role"] for m in second.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert second.messages[2]["tool_calls"][0]["id"] == "call_0"
    assert second.messages[3]["tool_call_id"] == "call_0" and "succeeded" in second.messages[3]["content"]
    (crop,) = images_in(second.messages[4])
    np.testing.assert_array_equal(crop, arr[4:10, 5:15].repeat(2, 0).repeat(2, 1))
    assert r.error is None and r.called and r.n_calls == 1 and r.n_ineffective == 0
    assert r.calls[0].name == "zoom_in" and r.calls[0].ok and r.calls[0].output_size == (20, 12)
    assert r.n_turns == 2 and r.tokens == 12 and not r.hit_turn_limit
    assert r.final_text == FINAL.text and r.steps == 3
    assert r.trajectory_steps == ["Let me look closer.", "I zoomed in.", "The sign says STOP.", "Answer: STOP"]


@pytest.mark.parametrize("call_text", [
    'Closer look.\n<tool_call>{"name": "zoom_in", "arguments": {"box": [5, 4, 15, 10], "scale": 2}}</tool_call>',
    "Closer look.\nTOOL: zoom_in(box=[5, 4, 15, 10], scale=2)",
])
def test_plain_text_call_then_answer(item, arr, call_text):
    eng = ScriptedEngine([Completion(text=call_text, completion_tokens=4), FINAL])
    r = run_adaptive(eng, item, "adaptive", tool_format="text")
    first, second = eng.requests
    assert first.tools is None and "TOOL:" in first.messages[0]["content"]
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[2]["content"] == call_text and "tool_calls" not in second.messages[2]
    result_msg = second.messages[3]
    assert "zoom_in succeeded" in result_msg["content"][0]["text"]
    (crop,) = images_in(result_msg)
    np.testing.assert_array_equal(crop, arr[4:10, 5:15].repeat(2, 0).repeat(2, 1))
    assert r.calls[0].source in ("tag", "line") and r.calls[0].ok
    assert r.final_text == FINAL.text and r.n_turns == 2


def test_out_of_bounds_box_is_ineffective_and_loop_continues(item, arr):
    eng = ScriptedEngine([
        Completion(text="", tool_calls=openai_call("zoom_in", {"box": [0, 0, 400, 10]}, "a")),
        Completion(text="", tool_calls=openai_call("zoom_in", {"box": [30, 20, 40, 30], "scale": 1}, "b")),
        FINAL,
    ])
    r = run_adaptive(eng, item, "adaptive")
    assert r.n_turns == 3 and r.n_calls == 2 and r.n_ineffective == 1
    assert [c.status for c in r.calls] == ["error", "ok"]
    assert "outside" in r.calls[0].error
    second = eng.requests[1]
    assert second.messages[-1]["role"] == "tool" and "failed" in second.messages[-1]["content"]  # no image turn
    third = eng.requests[2]
    np.testing.assert_array_equal(images_in(third.messages[-1])[0], arr[20:30, 30:40])
    assert r.final_text == FINAL.text and r.error is None


def test_tools_chain_on_current_image(item, arr):
    eng = ScriptedEngine([
        Completion(text="", tool_calls=openai_call("rotate", {"degrees": 90})),
        Completion(text="", tool_calls=openai_call("zoom_in", {"box": [0, 0, 10, 5], "scale": 1})),
        FINAL,
    ])
    run_adaptive(eng, item, "adaptive")
    np.testing.assert_array_equal(images_in(eng.requests[1].messages[-1])[0], np.rot90(arr))
    np.testing.assert_array_equal(images_in(eng.requests[2].messages[-1])[0], np.rot90(arr)[0:5, 0:10])
    # chain=False: the second call acts on the original image
    eng2 = ScriptedEngine(eng.script)
    run_adaptive(eng2, item, "adaptive", chain=False)
    np.testing.assert_array_equal(images_in(eng2.requests[2].messages[-1])[0], arr[0:5, 0:10])


def test_turn_limit_is_honoured(item):
    always_zoom = Completion(text="more\nTOOL: zoom_in(box=[0, 0, 4, 4])", completion_tokens=2)
    eng = ScriptedEngine([always_zoom] * 10)
    r = run_adaptive(eng, item, "adaptive", max_turns=3)
    assert len(eng.requests) == 3 and r.n_turns == 3 and r.hit_turn_limit
    assert [c.status for c in r.calls] == ["ok", "ok", "not_executed"]
    assert r.n_ineffective == 0 and r.called and r.tokens == 6
    assert r.final_text == "more"
    with pytest.raises(ValueError, match="max_turns"):
        run_adaptive(eng, item, "adaptive", max_turns=0)


def test_engine_error_ends_item_without_raising(item):
    eng = ScriptedEngine([
        Completion(text="", tool_calls=openai_call("zoom_in", {"box": [0, 0, 4, 4]})),
        Completion(text="", finish_reason="error", error="HTTP 500"),
        FINAL,
    ])
    r = run_adaptive(eng, item, "adaptive")
    assert r.error == "HTTP 500" and r.n_turns == 2 and len(eng.requests) == 2 and r.final_text == ""


def test_text_mode_offers_no_tools_and_does_not_execute(item):
    eng = ScriptedEngine([Completion(text="TOOL: zoom_in(box=[0, 0, 4, 4])\nAnswer: STOP", completion_tokens=3)])
    r = run_adaptive(eng, item, "text", max_turns=4)
    (req,) = eng.requests
    assert req.tools is None and "directly" in req.messages[0]["content"] and "No tools" in req.messages[0]["content"]
    assert len(images_in(req.messages[1])) == 1
    assert r.n_turns == 1 and r.calls[0].status == "not_executed" and r.n_ineffective == 0
    assert r.final_text == "Answer: STOP"


def test_oracle_mode_appends_evidence_crops(item, arr):
    eng = ScriptedEngine([FINAL])
    r = run_adaptive(eng, item, "oracle")
    (req,) = eng.requests
    assert req.tools is None
    imgs = images_in(req.messages[1])
    assert len(imgs) == 3 and r.images_sent == 3
    np.testing.assert_array_equal(imgs[0], arr)
    np.testing.assert_array_equal(imgs[1], arr[4:10, 5:15])
    np.testing.assert_array_equal(imgs[2], arr[20:30, 30:40])


def test_batch_runs_items_in_lockstep(item):
    other = dict(item, uid="it2")
    eng = ScriptedEngine({
        "it1": [Completion(text="Answer: STOP")],
        "it2": [Completion(text="", tool_calls=openai_call("rotate", {"degrees": 180})), FINAL],
    })
    r1, r2 = run_adaptive_batch(eng, [item, AdaptItem(**{k: v for k, v in other.items()})], "adaptive")
    assert eng.calls == 2 and len(eng.requests) == 3
    assert (r1.n_turns, r1.called, r2.n_turns, r2.called) == (1, False, 2, True)


def test_request_kwargs_and_options(item):
    eng = ScriptedEngine([FINAL])
    run_adaptive(eng, dict(item, options=["STOP", "GO"]), "text", max_tokens=64, seed=3, chat_template_kwargs={"enable_thinking": False})
    (req,) = eng.requests
    assert (req.max_tokens, req.seed, req.chat_template_kwargs) == (64, 3, {"enable_thinking": False})
    assert "A. STOP\nB. GO" in req.messages[1]["content"][0]["text"]


def test_bad_mode_raises(item):
    with pytest.raises(ValueError, match="mode"):
        run_adaptive(ScriptedEngine([]), item, "visual")


def test_steps_use_the_shared_segmenter(item):
    """The loop counts steps with howeval.parsing.steps.segment_steps (one segmenter for CRYSTAL and adapt):
    numbered items with their continuation lines are one step each, markers stripped, rules dropped."""
    text = "1. Find the sign.\n   It is red.\n---\n2. Read it: STOP."
    r = run_adaptive(ScriptedEngine([Completion(text=text)]), item, "text")
    assert r.steps == 2
    assert r.trajectory_steps == ["Find the sign. It is red.", "Read it: STOP."]


def test_a_loaded_item_runs_through_the_loop(tmp_path, arr):
    Image.fromarray(arr, "RGB").save(tmp_path / "a.png", format="PNG")
    (tmp_path / "m.jsonl").write_text(json.dumps({"uid": "demo:1", "image": "a.png", "question": "Q1?", "answer": "B",
                                                  "evidence_boxes": [[0, 0, 10, 10]], "domain": "gui"}) + "\n")
    (loaded,) = load_adapt_items(str(tmp_path / "m.jsonl"))
    r = run_adaptive(ScriptedEngine([FINAL]), loaded, "oracle")
    assert r.images_sent == 2 and r.domain == "gui"


# ----------------------------------------------------------------- a real VLM receives the tool-result images


class _ZoomThenVLM:
    """Turn 1: a scripted zoom on the left half (the tiny VLM cannot plan tool calls); turn 2: the real tiny VLM."""

    name = "zoom-then-vlm"

    def __init__(self, vlm):
        self.vlm, self.turn2 = vlm, []

    def generate(self, requests):
        out = []
        for req in requests:
            if req.request_id.endswith("t1"):
                out.append(Completion(text="TOOL: zoom_in(box=[0, 0, 48, 64], scale=1)", completion_tokens=12))
            else:
                self.turn2.append(req)
                out += self.vlm.generate([req])
        return out


@pytest.mark.slow
def test_tiny_vlm_receives_tool_result_images(tiny_vlm_engine):
    from howeval.benchmarks.adapt.loop import image_to_data_url

    arr = np.zeros((64, 96, 3), dtype=np.uint8)
    arr[:, :48] = (220, 20, 20)   # left half red
    arr[:, 48:] = (20, 20, 220)   # right half blue
    buf = io.BytesIO()
    Image.fromarray(arr, "RGB").save(buf, format="PNG")
    it = {"uid": "vlm1", "image": buf.getvalue(), "question": "What colour is the left half?", "answer": "red",
          "answer_type": "extractive_text", "domain": "test"}
    eng = _ZoomThenVLM(tiny_vlm_engine)
    res = run_adaptive(eng, it, "adaptive", max_turns=2, tool_format="text", max_tokens=3)
    assert res.error is None and [c.status for c in res.calls] == ["ok"] and res.n_turns == 2
    (req,) = eng.turn2
    urls = [p["image_url"]["url"] for m in req.messages if isinstance(m["content"], list)
            for p in m["content"] if p.get("type") == "image_url"]
    assert len(urls) == 2  # the original image, then the zoom result
    assert data_url_to_image(urls[1]).size == (48, 64)
    # the model's logits depend on the tool image: swap it for the right (blue) half, or drop it
    def swapped(new_url):
        msgs = []
        for m in req.messages:
            if isinstance(m["content"], list):
                parts = [p for p in m["content"] if not (p.get("type") == "image_url" and p["image_url"]["url"] == urls[1])]
                if new_url and len(parts) != len(m["content"]):
                    parts.append({"type": "image_url", "image_url": {"url": new_url}})
                m = {**m, "content": parts}
            msgs.append(m)
        return ChatRequest(messages=msgs, max_tokens=3)

    blue_half = image_to_data_url(Image.fromarray(arr[:, 48:]))
    base = tiny_vlm_engine.next_token_logits(swapped(urls[1]))
    assert (base - tiny_vlm_engine.next_token_logits(swapped(blue_half))).abs().max().item() > 0.1
    assert (base - tiny_vlm_engine.next_token_logits(swapped(None))).abs().max().item() > 0.1
