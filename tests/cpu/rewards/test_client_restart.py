"""The reward client survives a reward-server restart mid-step (issue 15): it retries within its deadline,
and the step's rewards are the ones the restarted server computes — none lost, none made up.

The server is a small HTTP server on 127.0.0.1 answering ``/v1/rewards`` with the core reward pipeline
(``howeval.rewards.pipeline.score_batch``). It is down when the step starts; the client's injected
``sleep`` (called between attempts) brings it back on the same port, so the test has no timers.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.rewards.client import RewardClient
from howeval.rewards.pipeline import score_batch

from fakes.reward_server import free_port

ITEMS = [
    {"prompt": "What is 2+2?", "response": "2 plus 2 is 4, so the answer is \\boxed{4}.", "answer": "4",
     "answer_type": "free_form", "kind": "base"},
    {"prompt": "What is 3*3?", "response": "The answer is \\boxed{6}.", "answer": "9",
     "answer_type": "free_form", "kind": "base"},
]


class _Handler(BaseHTTPRequestHandler):
    served: list[int] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        rewards = score_batch(body["items"], PatternConfig(), CPRConfig())
        out = json.dumps({"rewards": rewards}).encode()
        self.served.append(len(body["items"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def _start(port: int) -> ThreadingHTTPServer:
    srv = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_client_survives_a_server_restart_mid_step():
    port = free_port()
    srv = _start(port)
    srv.shutdown()
    srv.server_close()  # the server is gone when the step's request goes out
    _Handler.served = []
    restarted: list[ThreadingHTTPServer] = []

    def sleep_and_restart(delay: float) -> None:  # the client waits between attempts: the server comes back
        if not restarted:
            restarted.append(_start(port))

    client = RewardClient(f"http://127.0.0.1:{port}", token_env="", timeout_s=10, max_retries=3,
                          backoff_s=0.1, sleep=sleep_and_restart)
    try:
        rewards = client.score(ITEMS)
    finally:
        client.close()
        for s in restarted:
            s.shutdown()
            s.server_close()
    assert len(restarted) == 1  # the first attempt failed (connection refused), the second was answered
    assert _Handler.served == [2]  # one scored request: the step is neither lost nor scored twice
    expected = score_batch(ITEMS, PatternConfig(), CPRConfig())
    assert [r["reward"] for r in rewards] == [r["reward"] for r in expected] == [1.0, 0.0]
    assert [r["s_ver"] for r in rewards] == [1.0, 0.0]
