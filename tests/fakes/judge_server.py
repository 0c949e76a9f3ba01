"""A fake OpenAI-compatible chat server for fault tests of LLM judges (stdlib only, 127.0.0.1, port 0).

``FakeJudgeServer`` answers ``POST /v1/chat/completions``. A request gets a fault with probability
``fault_rate``, decided by ``random.Random`` seeded with (seed, judged text, repair or not, the client's
retry count): the same request meets the same fault on every run, whatever the arrival order, so a test
can compute each row's outcome in advance (:meth:`FakeJudgeServer.outcome`) instead of bounding rates:

- ``429``: rate limited (JSON error body), ``500``: server error,
- ``hang``: no answer until the client gives up (the handler returns once the client closes the
  connection, or after ``hang_s``),
- ``garbage``: HTTP 200 whose message content is not JSON (the judge's repair path).

Every other request gets a valid pattern-judge JSON object whose labels are a pure function of the
judged response text (:func:`expected_labels`), so a test can check each verdict against what was sent.
The server records every call (start/end time, fault, client retry count, judged text, repair or not)
and the maximum number of requests in flight at once. With ``gate=k`` the first k requests are held until
k of them are in flight together (a barrier: an event, not a timing), which shows that a client really
sends k requests at once. ``latency_s`` delays every answer (a judge with latency, for benchmarks).

Usage::

    with FakeJudgeServer(seed=0) as srv:
        options = {"base_url": srv.base_url, "timeout_s": 1.0, "max_retries": 2}
        ...
        srv.calls, srv.max_in_flight
"""
from __future__ import annotations

import hashlib
import json
import random
import select
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from howeval.records import LABELS

FAULTS = ("429", "500", "hang", "garbage")
_START, _END = "<<<RESPONSE\n", "\nRESPONSE>>>"


def expected_labels(response_text: str) -> dict[str, bool]:
    """The labels the server gives a response: bits of sha256(text), one per label."""
    h = hashlib.sha256(response_text.encode("utf-8")).digest()[0]
    return {k: bool(h >> i & 1) for i, k in enumerate(LABELS)}


def judged_text(messages: list[dict]) -> str | None:
    """The response under judgment, read back from the rubric's ``<<<RESPONSE ... RESPONSE>>>`` block."""
    for m in messages:
        content = m.get("content")
        parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content or [] if isinstance(p, dict)]
        for text in parts:
            if text and _START in text and _END in text:
                return text.split(_START, 1)[1].rsplit(_END, 1)[0]
    return None


@dataclass
class Call:
    """One request the server received."""

    n: int
    start: float
    end: float | None
    fault: str | None
    retry_count: int
    repair: bool
    text: str | None
    images: list[str] | None = None  # the image_url URLs of the request, in order
    response_format: dict | None = None  # the request's response_format, when it had one


class FakeJudgeServer:
    """Threaded fake judge server; see the module docstring. ``base_url`` ends in ``/v1``."""

    def __init__(self, fault_rate: float = 0.3, seed: int = 0, hang_s: float = 10.0, faults: tuple[str, ...] = FAULTS,
                 gate: int = 0, gate_timeout_s: float = 30.0, reject_response_format: bool = False,
                 latency_s: float = 0.0):
        if not 0 <= fault_rate <= 1:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate}")
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS}")
        self.fault_rate, self.seed, self.hang_s, self.faults = fault_rate, seed, hang_s, tuple(faults)
        self.reject_response_format = reject_response_format  # answer 400 to requests with response_format
        self.latency_s = latency_s  # every answer waits this long (a judge with latency, for benchmarks)
        self.calls: list[Call] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._n = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._gate = threading.Barrier(gate) if gate > 1 else None
        self._gate_timeout_s = gate_timeout_s

    # -- fault plan ---------------------------------------------------------------------------------
    def fault_for(self, text: str | None, repair: bool, retry_count: int) -> str | None:
        """The fault of a request (None: a valid answer). Deterministic in (seed, text, repair, retry count)."""
        digest = hashlib.sha256(f"{self.seed}|{repair}|{retry_count}|{text}".encode()).hexdigest()
        rng = random.Random(digest)
        if rng.random() >= self.fault_rate:
            return None
        return self.faults[rng.randrange(len(self.faults))]

    def outcome(self, text: str, max_retries: int) -> str:
        """What a judge client (``max_retries`` client retries on 429/500/timeouts, one repair request after
        unparseable output) ends with for ``text``: ``"labels"``, ``"engine:<fault>"`` (the attempts of the
        first request all failed), ``"repair engine:<fault>"`` (those of the repair request did), or
        ``"parse"`` (garbage twice)."""
        for repair in (False, True):
            fault = None
            for retry in range(max_retries + 1):
                fault = self.fault_for(text, repair, retry)
                if fault in (None, "garbage"):
                    break
            if fault is None:
                return "labels"
            if fault != "garbage":
                return f"{'repair ' if repair else ''}engine:{fault}"
        return "parse"

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeJudgeServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def wait_idle(self, timeout_s: float = 5.0) -> None:
        """Wait until no request is in flight (a hung handler notices the client's close a moment later)."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.in_flight:
            raise TimeoutError(f"{self.in_flight} request(s) still in flight after {timeout_s}s")

    def reset_calls(self) -> None:
        with self._lock:
            self.calls = []
            self.max_in_flight = 0

    # -- request handling ---------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        with self._lock:
            self._n += 1
            n = self._n
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        call = Call(n=n, start=time.monotonic(), end=None, fault=None,
                    retry_count=int(h.headers.get("x-stainless-retry-count") or 0), repair=False, text=None)
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            req = json.loads(body or b"{}")
            msgs = req.get("messages") or []
            call.text = judged_text(msgs)
            call.repair = any(m.get("role") == "assistant" for m in msgs)
            call.fault = self.fault_for(call.text, call.repair, call.retry_count)
            if self._gate is not None and n <= self._gate.parties:
                self._gate.wait(self._gate_timeout_s)  # BrokenBarrierError if fewer ever arrive together
            call.images = [p["image_url"]["url"] for m in msgs if isinstance(m.get("content"), list)
                           for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url"]
            call.response_format = req.get("response_format")
            if h.path.rstrip("/") != "/v1/chat/completions":
                self._send(h, 404, {"error": {"message": f"no route {h.path}"}})
            elif call.response_format is not None and self.reject_response_format:
                self._send(h, 400, {"error": {"message": "unknown field response_format (fake)", "type": "invalid_request_error"}})
            elif call.fault == "429":
                self._send(h, 429, {"error": {"message": "rate limited (fake)", "type": "rate_limit_error"}})
            elif call.fault == "500":
                self._send(h, 500, {"error": {"message": "internal error (fake)", "type": "server_error"}})
            elif call.fault == "hang":
                self._hang(h)
            elif call.fault == "garbage":
                self._send(h, 200, self._completion(req, "Sure! The labels: cot maybe, rep no... {not json"))
            elif call.text is None:
                self._send(h, 400, {"error": {"message": "no <<<RESPONSE block in the messages"}})
            else:
                labels = expected_labels(call.text)
                out = {k: {"label": v, "evidence": (call.text[:20] or "x") if v else None} for k, v in labels.items()}
                self._send(h, 200, self._completion(req, json.dumps(out)))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) while we answered
        finally:
            call.end = time.monotonic()
            with self._lock:
                self.in_flight -= 1
                self.calls.append(call)

    def _hang(self, h: BaseHTTPRequestHandler) -> None:
        """Answer nothing until the client closes its side (its timeout) or ``hang_s`` passes."""
        sock: socket.socket = h.connection
        deadline = time.monotonic() + self.hang_s
        while time.monotonic() < deadline:
            r, _, _ = select.select([sock], [], [], 0.02)
            if r:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        break  # EOF: client closed the connection
                except OSError:
                    break
        h.close_connection = True

    @staticmethod
    def _completion(req: dict, content: str) -> dict:
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": req.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
