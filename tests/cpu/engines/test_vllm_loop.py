"""Tests for howeval.engines.vllm_loop without vllm: a fake ``LLM`` that decodes one token per request per
step, as vLLM's continuous batching does, with ``max_num_seqs`` slots."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from howeval.engines.base import ChatRequest
from howeval.engines.vllm_loop import EngineLoop


class FakeLLM:
    """``enqueue_chat`` + ``llm_engine.step``: a request asking for n tokens finishes after n steps once running.

    A message "refuse" is refused at enqueue; ``die_at`` makes step number ``die_at`` raise. Records the most
    requests ever running at once and which batches (request-id prefixes) were running together.
    """

    def __init__(self, max_num_seqs: int = 8, die_at: int | None = None, step_s: float = 0.002):
        self.llm_engine = self
        self.max_num_seqs, self.die_at, self.step_s = max_num_seqs, die_at, step_s
        self.waiting: list[dict] = []
        self.running: list[dict] = []
        self.counter = 0
        self.steps = 0
        self.peak = 0
        self.threads: set[str] = set()
        self.tags_together: set[frozenset] = set()
        self.parts: list[list[str]] = []  # the part types of each list-content request, as enqueued
        self.cut = False  # set: every running request finishes at its next step (ends a test's long request)

    def enqueue_chat(self, messages, params, use_tqdm=False, chat_template_kwargs=None):
        self.threads.add(threading.current_thread().name)
        c = messages[0][-1]["content"]
        text = c if isinstance(c, str) else next(p["text"] for p in c if p["type"] == "text")
        if not isinstance(c, str):
            self.parts.append([p["type"] for p in c])
        if text == "refuse":
            raise ValueError("prompt too long\nfor this model")
        self.counter += 1
        self.waiting.append({"id": str(self.counter), "left": params, "text": text})
        return [f"{self.counter}-abcdefgh"]

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running)

    def step(self):
        self.threads.add(threading.current_thread().name)
        self.steps += 1
        if self.die_at is not None and self.steps >= self.die_at:
            raise RuntimeError("EngineCore died")
        while self.waiting and len(self.running) < self.max_num_seqs:
            self.running.append(self.waiting.pop(0))
        self.peak = max(self.peak, len(self.running))
        self.tags_together.add(frozenset(r["text"].split(":")[0] for r in self.running))
        time.sleep(self.step_s)
        out = []
        for r in list(self.running):
            r["left"] = 0 if self.cut else r["left"] - 1
            if r["left"] == 0:
                self.running.remove(r)
                out.append(SimpleNamespace(request_id=r["id"], finished=True, prompt_token_ids=[1, 2],
                                           outputs=[SimpleNamespace(text=f"answer {r['text']}", finish_reason="length",
                                                                    token_ids=[0] * int(r["text"].split(":")[1]))]))
        return out


def _reqs(tag: str, lengths: list[int]) -> list[ChatRequest]:
    return [ChatRequest(messages=[{"role": "user", "content": f"{tag}:{n}"}], max_tokens=n, request_id=f"{tag}{i}")
            for i, n in enumerate(lengths)]


def _loop(llm: FakeLLM) -> EngineLoop:
    return EngineLoop(llm, lambda r: r.max_tokens)


def test_one_caller_gets_every_answer_in_order_with_its_own_latency():
    llm = FakeLLM()
    out = _loop(llm).submit(_reqs("a", [3, 1, 2]))
    assert [c.text for c in out] == ["answer a:3", "answer a:1", "answer a:2"]
    assert [c.completion_tokens for c in out] == [3, 1, 2] and [c.request_id for c in out] == ["a0", "a1", "a2"]
    assert all(c.error is None and c.finish_reason == "length" for c in out)
    assert out[1].latency_s <= out[2].latency_s <= out[0].latency_s  # each row's own time, not the batch's share
    assert llm.threads == {"vllm-engine-loop"}  # only the loop thread touches the engine


def test_concurrent_callers_keep_several_batches_in_the_engine():
    """A batch with one long answer no longer holds the engine: the next batches run beside it."""
    llm = FakeLLM(max_num_seqs=8, step_s=0.02)  # 40 steps = 0.8 s: callers delayed by a loaded machine still overlap
    loop = _loop(llm)
    batches = {t: _reqs(t, [40] + [2] * 3) for t in "abcd"}  # each batch: one long answer, three short
    start = threading.Barrier(4)

    def submit_together(reqs):
        start.wait()  # the four callers submit at the same moment, as a stage actor's threads do
        return loop.submit(reqs)

    with ThreadPoolExecutor(4) as pool:
        outs = dict(zip(batches, pool.map(submit_together, batches.values())))
    for t, out in outs.items():
        assert [c.text for c in out] == [f"answer {t}:40"] + [f"answer {t}:2"] * 3
    assert any(len(tags) >= 3 for tags in llm.tags_together)  # requests of >= 3 batches ran in one step
    assert llm.peak >= 6
    assert loop.peak_in_flight >= 12 and loop.in_flight == 0
    # one batch at a time would take 4 x 40 steps; together they take about 40 plus start-up
    assert llm.steps < 80, llm.steps


def test_a_refused_request_fails_alone_and_an_all_refused_batch_returns():
    loop = _loop(FakeLLM())
    out = loop.submit([*_reqs("a", [2]), ChatRequest(messages=[{"role": "user", "content": "refuse"}], request_id="x")])
    assert out[0].error is None and out[0].text == "answer a:2"
    assert out[1].finish_reason == "error" and out[1].error == "vllm: ValueError: prompt too long for this model"
    assert out[1].request_id == "x"
    only_bad = loop.submit([ChatRequest(messages=[{"role": "user", "content": "refuse"}])])
    assert only_bad[0].error.startswith("vllm: ValueError")
    assert loop.submit([]) == []


def test_an_engine_that_dies_ends_every_in_flight_row_and_every_later_one_with_the_reason():
    llm = FakeLLM(die_at=5, step_s=0.01)
    loop = _loop(llm)
    with ThreadPoolExecutor(3) as pool:
        outs = list(pool.map(loop.submit, [_reqs(t, [50, 1]) for t in "abc"]))
    reason = "vllm engine: RuntimeError: EngineCore died"
    for out in outs:
        assert len(out) == 2
        assert out[0].error == reason and out[0].finish_reason == "error"
        assert out[1].error in (None, reason)  # a 1-token answer may have finished before the failure
    later = loop.submit(_reqs("d", [1, 1]))
    assert [c.error for c in later] == [reason, reason] and [c.request_id for c in later] == ["d0", "d1"]


# -- images prepared off the loop thread (issue 32) -------------------------------------------------------
def _png_url(colour: tuple[int, int, int], mode: str = "RGB") -> str:
    import base64
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 24), colour).convert(mode).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _image_reqs(n: int, tokens: int = 2) -> list[ChatRequest]:
    return [ChatRequest(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": _png_url((i % 256, 0, 0), "P" if i % 2 else "RGB")}},
        {"type": "text", "text": f"img:{tokens}"}]}], max_tokens=tokens, request_id=f"img{i}") for i in range(n)]


def test_the_loop_keeps_stepping_while_a_batch_of_images_is_prepared():
    """64 images whose preparation takes 10 ms each (real decoding plus a sleep standing in for big images)
    are prepared on the pool while the engine runs a long request: the loop steps during the whole
    preparation at close to its rate without images, and the engine gets decoded RGB ``image_pil`` parts."""
    from howeval.engines.vllm_inputs import has_images, prepare_images

    llm = FakeLLM(step_s=0.002)
    seen: list[tuple[float, int]] = []  # (time, engine steps) at the start and end of every preparation

    def slow_prepare(r: ChatRequest) -> ChatRequest:
        seen.append((time.perf_counter(), llm.steps))
        out = prepare_images(r)
        time.sleep(0.01)
        seen.append((time.perf_counter(), llm.steps))
        return out

    loop = EngineLoop(llm, lambda r: r.max_tokens, prepare=slow_prepare, needs_prepare=has_images, prepare_workers=2)
    long = threading.Thread(target=loop.submit, args=(_reqs("long", [10**6]),))
    long.start()
    while llm.steps < 20:  # the long request is running
        time.sleep(0.005)
    t0, s0 = time.perf_counter(), llm.steps
    time.sleep(0.3)
    base_rate = (llm.steps - s0) / (time.perf_counter() - t0)  # steps/s with nothing being prepared

    out = loop.submit(_image_reqs(64))
    (p0, ps0), (p1, ps1) = min(seen), max(seen)
    prep_rate = (ps1 - ps0) / (p1 - p0)
    llm.cut = True
    long.join()
    assert [c.error for c in out] == [None] * 64 and [c.request_id for c in out] == [f"img{i}" for i in range(64)]
    assert p1 - p0 >= 0.3  # 64 x 10 ms on 2 threads: the window is real
    assert ps1 - ps0 > 0 and prep_rate >= 0.5 * base_rate, (ps1 - ps0, prep_rate, base_rate)
    assert llm.parts[:1] == [["image_pil", "text"]] and len(llm.parts) == 64  # decoded images reached enqueue_chat
    assert loop.prepare_s >= 64 * 0.01
    assert llm.threads == {"vllm-engine-loop"}  # preparation ran on the pool's threads, never touching the engine


def test_work_inside_enqueue_stops_every_sequence_which_is_why_images_are_prepared_before():
    """The same 64 x 10 ms done inside ``enqueue_chat`` (where vLLM decodes data URLs): the loop thread adds the
    whole batch between two steps, so the engine takes no step at all while it runs."""
    llm = FakeLLM(step_s=0.002)
    seen: list[tuple[float, int]] = []
    enqueue = llm.enqueue_chat

    def slow_enqueue(messages, params, **kw):
        if not isinstance(messages[0][-1]["content"], str):
            seen.append((time.perf_counter(), llm.steps))
            time.sleep(0.01)
            seen.append((time.perf_counter(), llm.steps))
        return enqueue(messages, params, **kw)

    llm.enqueue_chat = slow_enqueue
    loop = EngineLoop(llm, lambda r: r.max_tokens)
    long = threading.Thread(target=loop.submit, args=(_reqs("long", [10**6]),))
    long.start()
    while llm.steps < 20:
        time.sleep(0.005)
    out = loop.submit(_image_reqs(64))
    (p0, ps0), (p1, ps1) = min(seen), max(seen)
    llm.cut = True
    long.join()
    assert [c.error for c in out] == [None] * 64
    assert p1 - p0 >= 0.6 and ps1 - ps0 == 0  # 0.64 s with every sequence in flight stopped


def test_an_image_that_cannot_be_prepared_fails_its_own_row_and_is_not_sent():
    from howeval.engines.vllm_inputs import has_images, prepare_images

    llm = FakeLLM()
    loop = EngineLoop(llm, lambda r: r.max_tokens, prepare=prepare_images, needs_prepare=has_images)
    reqs = _image_reqs(2)
    reqs.insert(1, ChatRequest(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"}},
        {"type": "text", "text": "x:2"}]}], max_tokens=2, request_id="bad"))
    out = loop.submit([*reqs, *_reqs("t", [1])])
    assert [c.request_id for c in out] == ["img0", "bad", "img1", "t0"]
    assert [c.error is None for c in out] == [True, False, True, True]
    assert out[1].finish_reason == "error" and out[1].error == (
        "image: ImagePrepError: messages[0].content[0] (image_url): not a readable image (12 bytes; Pillow cannot "
        "identify the format)"), out[1].error
    assert len(llm.parts) == 2 and llm.counter == 3  # the bad row never reached the engine
    assert loop.submit([reqs[1]])[0].error == out[1].error  # a batch of only failed rows returns too


def test_the_loop_marks_its_first_request_and_each_answered_batch(tmp_path, monkeypatch):
    """With $HOWEVAL_TIMINGS set (issue 43's start-up phases), the loop writes one mark when its first request
    enters the engine and one per answered batch, with the rows in flight at their peak."""
    from howeval.timing import ENV, read_marks

    path = tmp_path / "marks.jsonl"
    monkeypatch.setenv(ENV, str(path))
    loop = _loop(FakeLLM())
    loop.submit(_reqs("a", [2, 1]))
    loop.submit(_reqs("b", [1, 1, 1]))
    marks = read_marks(str(path))
    assert [m["event"] for m in marks] == ["first_request", "answers", "answers"]
    assert [m.get("rows") for m in marks] == [None, 2, 3] and marks[-1]["peak_in_flight"] == 3
    assert marks[0]["t"] <= marks[1]["t"] <= marks[2]["t"] and loop.batches == 2
