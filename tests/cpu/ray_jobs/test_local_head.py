"""make submit-local submits only to the head it started (howeval.ray_jobs.local_head), against a real HTTP server on
127.0.0.1 that answers Ray's ``GET /api/version`` as a dashboard of some session."""
from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from howeval.ray_jobs.local_head import main, wait_for_own_head


class _Dashboard:
    """A dashboard stand-in: ``/api/version`` with ``session_name``."""

    def __init__(self, session: str):
        session_name = session

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                import ray

                body = json.dumps({"version": "4", "ray_version": ray.__version__, "ray_commit": "x",
                                   "session_name": session_name}).encode()
                self.send_response(200 if self.path == "/api/version" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def temp_head(tmp_path, monkeypatch):
    """A head temp dir whose session_latest points at session_2026_mine."""
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    (tmp_path / "session_2026_mine").mkdir()
    os.symlink(tmp_path / "session_2026_mine", tmp_path / "session_latest")
    return tmp_path


def test_another_clusters_dashboard_is_refused_and_the_own_one_accepted(temp_head, capsys):
    other = _Dashboard("session_2026_someone_else")
    try:
        reason = wait_for_own_head(other.url, str(temp_head), os.getpid(), timeout_s=5, poll_s=0.1)
        assert reason.startswith(f"{other.url} is answered by another Ray cluster (session session_2026_someone_else)")
        assert main(["--url", other.url, "--free"]) == 1  # the port is taken: refuse before starting a head
        assert "already in use" in capsys.readouterr().err
    finally:
        other.close()
    mine = _Dashboard("session_2026_mine")
    try:
        assert wait_for_own_head(mine.url, str(temp_head), os.getpid(), timeout_s=5, poll_s=0.1) is None
        assert main(["--url", mine.url, "--temp-dir", str(temp_head), "--timeout", "5"]) == 0
    finally:
        mine.close()
    assert main(["--url", mine.url, "--free"]) == 0  # closed: free again


def test_a_head_that_exited_or_never_answers_is_reported(temp_head):
    import subprocess
    import sys

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert wait_for_own_head("http://127.0.0.1:9", str(temp_head), done.pid, timeout_s=5, poll_s=0.1).startswith(
        f"the head (pid {done.pid}) exited")
    reason = wait_for_own_head("http://127.0.0.1:9", str(temp_head), None, timeout_s=0.3, poll_s=0.1)
    assert reason.startswith("http://127.0.0.1:9 did not answer as the head of")
