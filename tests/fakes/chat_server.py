"""A scripted fake OpenAI-compatible chat server (stdlib only, 127.0.0.1, port 0) for engine flow tests.

``ScriptedChatServer(script)`` answers ``POST /v1/chat/completions``; ``script(n, body)`` (n = 1-based
arrival number, body = the request JSON) returns what to do with that request:

- ``("ok", text)``: HTTP 200 with ``text`` as the message content,
- ``("status", code, headers)``: an error answer with that status and extra headers (e.g. Retry-After),
- ``("hang",)``: no answer until the client closes its side (its timeout) or the server stops,
- ``("wait", event, text)``: answer ``text`` once ``event`` (a ``threading.Event``) is set.

Every request is recorded on arrival (arrival number, start/end monotonic time, when an error answer was
about to be written, the body's last user text) together with the most requests in flight at once. Use as a
context manager; ``base_url`` ends in ``/v1``.
"""
from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Seen:
    """One request the server received."""

    n: int
    start: float
    end: float | None
    text: str
    action: str
    answered: float | None = None  # just before the answer's first byte was written (the client cannot see it earlier)


def last_text(body: dict) -> str:
    """The last message's text (string content or its text parts joined)."""
    msgs = body.get("messages") or [{}]
    c = msgs[-1].get("content")
    return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


class ScriptedChatServer:
    """See the module docstring."""

    def __init__(self, script: Callable[[int, dict], tuple]):
        self.script = script
        self.seen: list[Seen] = []
        self.in_flight = self.max_in_flight = 0
        self._n = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> ScriptedChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def arrivals(self) -> int:
        """Requests received so far (counted as each arrives, before its script action is chosen)."""
        with self._lock:
            return self._n

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"{}")
        with self._lock:
            self._n += 1
            n = self._n
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        action = self.script(n, body)
        seen = Seen(n=n, start=time.monotonic(), end=None, text=last_text(body), action=action[0])
        with self._lock:
            self.seen.append(seen)  # on arrival, so a test never races the handler's end
        try:
            if action[0] == "ok":
                self._send(h, 200, self._completion(body, action[1]))
            elif action[0] == "status":
                seen.answered = time.monotonic()
                self._send(h, action[1], {"error": {"message": f"fake {action[1]}", "type": "fake"}}, action[2])
            elif action[0] == "hang":
                self._hang(h)
            elif action[0] == "wait":
                while not action[1].wait(0.05) and not self._stop.is_set():
                    pass
                self._send(h, 200, self._completion(body, action[2]))
            else:
                raise ValueError(f"unknown action {action!r}")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            seen.end = time.monotonic()
            with self._lock:
                self.in_flight -= 1

    def _hang(self, h: BaseHTTPRequestHandler) -> None:
        sock: socket.socket = h.connection
        while not self._stop.is_set():
            r, _, _ = select.select([sock], [], [], 0.02)
            if r:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        break  # the client closed its side
                except OSError:
                    break
        h.close_connection = True

    @staticmethod
    def _completion(body: dict, content: str) -> dict:
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, obj: dict, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, str(v))
        h.end_headers()
        h.wfile.write(data)
