"""Tool of ``make submit-local``: wait until the dashboard at a URL is the head this command started.

    python -m howeval.ray_jobs.local_head --url http://127.0.0.1:8265 --temp-dir /tmp/howeval-submit-6389 --pid PID
    python -m howeval.ray_jobs.local_head --url http://127.0.0.1:8265 --free    # refuse when the port is taken

Something listening on the dashboard port is not enough: another user's (or another session's) Ray
cluster may hold it, and ``ray job submit`` would then run the sweep there. The head started with
``--temp-dir DIR`` writes its session under ``DIR/session_latest``; the dashboard's job API answers
``GET /api/version`` with its ``session_name``. They must be the same session, and the ``ray start`` process
(``--pid``) must still be alive. Exit 0 when they match, 1 with a one-line reason otherwise (the port held
by another cluster, the head exited, no answer in ``--timeout`` seconds).
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlparse


def own_session(temp_dir: str) -> str | None:
    """The session name of the head started with ``--temp-dir temp_dir`` (``session_latest``'s target), or
    None before the head has written it."""
    link = Path(temp_dir) / "session_latest"
    return Path(os.path.realpath(link)).name if link.exists() else None


def dashboard_session(url: str) -> str | None:
    """The ``session_name`` the dashboard at ``url`` reports (``GET /api/version`` through Ray's job
    submission client, which adds the cluster token when ``RAY_AUTH_MODE=token``); None when nothing
    answers there yet."""
    from ray.dashboard.modules.dashboard_sdk import SubmissionClient

    try:
        r = SubmissionClient(url)._do_request("GET", "/api/version")
    except Exception:  # noqa: BLE001 - not up yet (connection refused, reset, a half-started server)
        return None
    if r.status_code != 200:
        return None
    try:
        return r.json().get("session_name")
    except ValueError:
        return None


def port_in_use(url: str) -> bool:
    """True when something accepts connections on ``url``'s host and port."""
    u = urlparse(url)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), timeout=2):
            return True
    except OSError:
        return False


def wait_for_own_head(url: str, temp_dir: str, pid: int | None, timeout_s: float = 180.0,
                      poll_s: float = 2.0) -> str | None:
    """Wait until the dashboard at ``url`` reports the session of the head in ``temp_dir``.

    Returns None when it does; else the one-line reason: the head process ``pid`` exited, the port is
    answered by another session, or nothing matched within ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if pid is not None and not _alive(pid):
            return f"the head (pid {pid}) exited: see {temp_dir}/head.log"
        mine, theirs = own_session(temp_dir), dashboard_session(url)
        if mine and theirs == mine:
            return None
        if mine and theirs and theirs != mine:
            return (f"{url} is answered by another Ray cluster (session {theirs}), not the head started here "
                    f"(session {mine}): nothing submitted; stop that cluster or set SUBMIT_DASHBOARD / SUBMIT_PORT")
        if time.monotonic() > deadline:
            return (f"{url} did not answer as the head of {temp_dir} within {timeout_s:.0f} s"
                    + (f" (it answers as session {theirs})" if theirs else "") + f": see {temp_dir}/head.log")
        time.sleep(poll_s)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.local_head", description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True, help="dashboard URL, e.g. http://127.0.0.1:8265")
    p.add_argument("--temp-dir", help="the --temp-dir the head was started with")
    p.add_argument("--pid", type=int, help="pid of the `ray start --head --block` process")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the head (default 180)")
    p.add_argument("--free", action="store_true", help="only check that nothing listens on the URL's port yet")
    args = p.parse_args(argv)
    if args.free:
        if port_in_use(args.url):
            print(f"error: {args.url} is already in use (another Ray cluster?): nothing started; set SUBMIT_DASHBOARD "
                  "to a free port", file=sys.stderr)
            return 1
        return 0
    if not args.temp_dir:
        p.error("--temp-dir is required (unless --free)")
    reason = wait_for_own_head(args.url, args.temp_dir, args.pid, args.timeout)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
