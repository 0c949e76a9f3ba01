"""Engines behind one interface: openai (against a local capture server), vllm mapping, replay, hf."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from howeval.engines.base import ChatRequest
from howeval.engines.options import OpenAIOptions, VLLMOptions
from howeval.engines.registry import build_engine


class _Capture(BaseHTTPRequestHandler):
    bodies: list = []
    fail_first: int = 0

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "\\boxed{7}", "reasoning_content": "3+4"}}],
               "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture()
def server():
    _Capture.bodies, _Capture.fail_first = [], 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_openai_engine_sends_images_template_kwargs_and_reads_reasoning(server):
    eng = build_engine("openai", "qwen", {"base_url": server, "max_retries": 0})
    req = ChatRequest(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": "3+4?"}]}],
        max_tokens=9, chat_template_kwargs={"enable_thinking": True}, reasoning_effort="low", request_id="r1")
    (c,) = eng.generate([req])
    body = _Capture.bodies[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": True} and body["reasoning_effort"] == "low"
    assert body["messages"][0]["content"][0]["image_url"]["url"] == "data:image/png;base64,AAAA"
    assert body["max_tokens"] == 9
    assert (c.text, c.reasoning, c.prompt_tokens, c.completion_tokens, c.error) == ("\\boxed{7}", "3+4", 11, 5, None)


def test_openai_engine_retries_then_records_error(server):
    _Capture.fail_first = 1
    eng = build_engine("openai", "m", {"base_url": server, "max_retries": 2})
    (c,) = eng.generate([ChatRequest(messages=[{"role": "user", "content": "hi"}])])
    assert c.error is None and len(_Capture.bodies) == 2  # one 503, one retry
    _Capture.fail_first = 10
    eng = build_engine("openai", "m", {"base_url": server, "max_retries": 1})
    out = eng.generate([ChatRequest(messages=[{"role": "user", "content": "hi"}], request_id=str(i)) for i in range(3)])
    assert all(c.finish_reason == "error" and "503" in c.error for c in out)
    assert [c.request_id for c in out] == ["0", "1", "2"]


def test_openai_engine_unset_env_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_URL", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_URL"):
        build_engine("openai", "m", {"base_url_env": "NO_SUCH_URL"})


def test_vllm_mapping_without_a_gpu():
    from howeval.engines.vllm_engine import group_by_template_kwargs, llm_kwargs, sampling_kwargs

    r1 = ChatRequest(messages=[], max_tokens=5, temperature=0.6, top_p=0.95, seed=3, chat_template_kwargs={"enable_thinking": True})
    r2 = ChatRequest(messages=[], chat_template_kwargs={"enable_thinking": False})
    assert sampling_kwargs(r1) == {"max_tokens": 5, "temperature": 0.6, "top_p": 0.95, "seed": 3}
    assert sorted(group_by_template_kwargs([r1, r2, r1]).values()) == [[0, 2], [1]]
    kw = llm_kwargs("/models/q", VLLMOptions(tensor_parallel_size=4))
    assert kw["model"] == "/models/q" and kw["tensor_parallel_size"] == 4 and "max_model_len" not in kw


def test_vllm_engine_missing_is_an_install_hint():
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm installed: covered by tests/gpu")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"\.\[gpu\]"):
        build_engine("vllm", "/models/x", {})


def test_unknown_engine_and_bad_option_name_the_problem():
    with pytest.raises(ValueError, match="registered"):
        build_engine("tgi", "m", {})
    with pytest.raises(ValueError, match="max_concurency"):
        build_engine("openai", "m", {"max_concurency": 3})
    assert OpenAIOptions().max_retries == 3


def test_replay_engine(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"sample_id": "a", "mode": "T", "response": "<think>x</think>y"}) + "\n"
                 + json.dumps({"sample_id": "a", "response": "z"}) + "\n")
    eng = build_engine("replay", None, {"path": str(p)})
    out = eng.generate([ChatRequest(messages=[], request_id=f"a|c|{m}") for m in ("T", "NT")]
                       + [ChatRequest(messages=[], request_id="b|c|NT")])
    assert [(c.reasoning, c.text) for c in out[:2]] == [("x", "y"), (None, "z")]
    assert out[2].error.startswith("replay: no recorded response")


@pytest.mark.slow
def test_hf_embedded_model_generates_in_batches():
    eng = build_engine("hf", None, {"batch_size": 2})
    reqs = [ChatRequest(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}},
                                                                 {"type": "text", "text": q}]}], max_tokens=n)
            for q, n in (("What is the capital of France?", 12), ("Say hello.", 3), ("Count to three.", 8))]
    out = eng.generate(reqs)
    assert "Paris" in out[0].text
    assert out[1].completion_tokens <= 3 and out[1].finish_reason in ("length", "stop")
    assert all(c.error is None for c in out)
