"""Time budgets for scorers that hold in threads, Ray actors and Serve replicas (not only the main thread).

math-verify's own timeouts use ``signal.alarm``: they work only on a process's main thread, and even there
a single C-level operation (sympy's big-integer ``10**10**10``) cannot be interrupted. The Serve ingress
(``asyncio.to_thread``) and the judge actors call the verifier off the main thread, so one 36-byte item
could hold a replica for minutes. Here:

- :func:`item_budget` sets a per-item budget (a ``contextvars`` value, so it follows the item into
  ``asyncio.to_thread`` and stays apart between threads); :func:`remaining` reads it. Budgets count the
  CPU seconds the child spends on the item (read from ``/proc``), so a loaded machine slows items down
  but does not turn them into timeouts; a child stuck for ``WALL_FACTOR`` times its allowance in wall
  time is killed too.
- :class:`HardTimeoutRunner` runs a registered function in a child process and **kills** the child when
  it is over time (:class:`BudgetExceeded`, reason ``"timeout after 2 s"``). Children are plain
  ``python -c`` subprocesses talking pickle frames over pipes (no fork of a threaded Ray worker, no
  re-import of the caller's ``__main__``), with math-verify imported at start; a killed child is
  replaced on the next call. Waiting for a child to start is not
  charged to the item.
- :func:`math_equal` is math-verify's equivalence run that way: the only scorer step whose cost is not
  bounded by the input's size (the other steps are linear scans behind :mod:`howeval.parsing.limits`).
"""
from __future__ import annotations

import atexit
import contextvars
import logging
import math
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "DEFAULT_ITEM_BUDGET_S",
    "BudgetExceeded",
    "CpuDeadline",
    "item_budget",
    "remaining",
    "timeout_reason",
    "HardTimeoutRunner",
    "math_equal",
    "default_runner",
]

log = logging.getLogger(__name__)

DEFAULT_ITEM_BUDGET_S = 2.0
"""CPU seconds one item may spend in the verifier's unbounded steps (math-verify)."""

WALL_FACTOR = 20.0
"""A child is also killed after this many times its CPU allowance in wall-clock time (a stuck child)."""


class _ItemBudget:
    """The budget of the current item: ``total`` CPU seconds, ``used`` so far (mutable, one per item)."""

    __slots__ = ("total", "used")

    def __init__(self, total: float) -> None:
        self.total = total
        self.used = 0.0


_CURRENT: contextvars.ContextVar[_ItemBudget | None] = contextvars.ContextVar("howeval_item_budget", default=None)


def timeout_reason(seconds: float) -> str:
    """The reason recorded on a row whose budget ran out: ``"timeout after 2 s"``.

    >>> timeout_reason(2.0), timeout_reason(0.5)
    ('timeout after 2 s', 'timeout after 0.5 s')
    """
    return f"timeout after {seconds:g} s"


class BudgetExceeded(Exception):
    """An item ran out of time; ``str(exc)`` is the reason to record (``"timeout after 2 s"``)."""


class CpuDeadline:
    """A per-row CPU-time budget for in-process scorer code (the rule judge), checked cooperatively.

    ``check()`` raises :class:`BudgetExceeded` (``"timeout after 2 s"``) once the calling thread has
    spent more than ``seconds`` of CPU time (``time.thread_time``) since the deadline was made. Code
    calls it between stages and inside its loops; each step between two checks is linear in the
    input, so a row ends within the budget plus one step. CPU time, not wall time: a loaded machine
    slows a row down without turning it into a timeout.

    Args:
        seconds: CPU seconds allowed (> 0, finite).

    Raises:
        ValueError: ``seconds`` is not a positive finite number.

    >>> d = CpuDeadline(5.0); d.check(); d.used() < 5.0
    True
    """

    __slots__ = ("seconds", "_start")

    def __init__(self, seconds: float = DEFAULT_ITEM_BUDGET_S) -> None:
        if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"budget seconds must be a positive finite number, got {seconds!r}")
        self.seconds = float(seconds)
        self._start = time.thread_time()

    def used(self) -> float:
        """CPU seconds this thread has spent since the deadline was made."""
        return time.thread_time() - self._start

    def check(self) -> None:
        """Raise :class:`BudgetExceeded` when the budget is spent."""
        if time.thread_time() - self._start > self.seconds:
            raise BudgetExceeded(timeout_reason(self.seconds))


@contextmanager
def item_budget(seconds: float = DEFAULT_ITEM_BUDGET_S) -> Iterator[None]:
    """Give the code inside the block ``seconds`` of budgeted compute (an enclosing budget is kept).

    The budget counts CPU seconds of the child processes that do the budgeted work (not wall-clock
    time), so a loaded machine does not turn ordinary items into timeouts.

    Raises:
        ValueError: ``seconds`` is not a positive finite number.
    """
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"budget seconds must be a positive finite number, got {seconds!r}")
    outer = _CURRENT.get()
    token = _CURRENT.set(outer if outer is not None else _ItemBudget(float(seconds)))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def remaining(default: float = DEFAULT_ITEM_BUDGET_S) -> tuple[float, float]:
    """``(seconds left, whole budget)`` of the current item; ``(default, default)`` outside any budget."""
    cur = _CURRENT.get()
    if cur is None:
        return default, default
    return cur.total - cur.used, cur.total


def _charge(seconds: float) -> None:
    cur = _CURRENT.get()
    if cur is not None:
        cur.used += seconds


# --------------------------------------------------------------------------------- child processes

_TASKS: dict[str, Callable[..., Any]] = {}


def _register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _TASKS[name] = fn
        return fn

    return deco


@_register("math_equal")
def _math_equal_task(gold: str, pred: str) -> bool | None:
    """math-verify equivalence (runs in the child): True/False, or None when either side does not parse."""
    from math_verify import parse, verify as mv_verify

    def wrap(s: str) -> str:
        s = s.strip()
        return s if "$" in s or "\\(" in s or "\\[" in s else f"${s}$"

    # No signal timeouts here: on a timeout math-verify answers False/[] (a wrong "not equal");
    # the parent's hard kill is the only timeout, and it says so.
    g = parse(wrap(gold), parsing_timeout=None)
    p = parse(wrap(pred), parsing_timeout=None)
    if not g or not p:
        return None
    return bool(mv_verify(g, p, timeout_seconds=None))


@_register("sleep")
def _sleep_task(seconds: float) -> float:
    """Test task: sleeps (a stuck child: killed by the wall-clock cap)."""
    time.sleep(seconds)
    return seconds


@_register("spin")
def _spin_task(seconds: float) -> float:
    """Test task: burns CPU for ``seconds`` of wall time (stands for any computation that overruns)."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return seconds


class WorkerFailed(RuntimeError):
    """The child raised (the message is its exception) or died; the item is unresolved, not wrong."""


class _Channel:
    """Length-prefixed pickle frames over a pair of pipe file objects (the child's stdin / stdout)."""

    def __init__(self, rfile: Any, wfile: Any) -> None:
        self.rfile, self.wfile = rfile, wfile

    def send(self, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        self.wfile.write(struct.pack("<Q", len(data)) + data)
        self.wfile.flush()

    def recv(self) -> Any:
        head = self._read(8)
        return pickle.loads(self._read(struct.unpack("<Q", head)[0]))

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.rfile.read(n - len(buf))
            if not chunk:
                raise EOFError("budget worker pipe closed")
            buf += chunk
        return buf

    def poll(self, timeout: float) -> bool:
        return bool(select.select([self.rfile], [], [], max(timeout, 0.0))[0])

    def close(self) -> None:
        for f in (self.rfile, self.wfile):
            try:
                f.close()
            except OSError:
                pass


def _worker_main() -> None:  # pragma: no cover - runs in the child process
    """The child: read (task, args) frames on stdin, answer ("ok"|"error", value) frames on stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the task prints goes to stderr, never into the frames
    chan = _Channel(sys.stdin.buffer, out)
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # its "timeout is disabled" notice: the parent kills
    try:
        import math_verify  # noqa: F401  (warm: the first item is not charged the import)

        # math-verify builds its LaTeX grammar and sympy's printers lazily on the first call (0.3-0.5 s):
        # pay that here, before "ready", so no item's budget is charged for it
        _math_equal_task("1", "1")
        _math_equal_task("x^2+\\frac{1}{2}", "20\\pi")
    except ImportError:  # only the task that needs it fails
        pass
    chan.send(("ready", None))
    while True:
        try:
            name, args = chan.recv()
        except (EOFError, OSError):
            return
        try:
            chan.send(("ok", _TASKS[name](*args)))
        except RecursionError:
            chan.send(("error", "RecursionError: too deeply nested"))
        except Exception as e:  # noqa: BLE001 - any task failure is reported to the parent, which records it on the row
            chan.send(("error", f"{type(e).__name__}: {str(e)[:200]}"))


class _Worker:
    """One child process: ``python -c 'import howeval.judges.budget as b; b._worker_main()'``.

    A plain subprocess (not multiprocessing): it never re-imports the caller's ``__main__`` script, and
    it starts the same way in a test, a Ray actor or a Serve replica. The parent's ``sys.path`` goes in
    ``PYTHONPATH`` so the child finds ``howeval`` wherever the parent did.
    """

    def __init__(self, start_timeout_s: float) -> None:
        env = dict(os.environ)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import howeval.judges.budget as b; b._worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
        )
        self.parent = _Channel(self.proc.stdout, self.proc.stdin)
        try:
            ready = self.parent.poll(start_timeout_s) and self.parent.recv()[0] == "ready"
        except (EOFError, OSError, pickle.UnpicklingError):
            ready = False
        if not ready:
            self.kill()
            raise WorkerFailed(f"budget worker did not start within {start_timeout_s} s")

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired) as e:  # already gone
            log.debug("killing budget worker: %r", e)
        self.parent.close()


_CLK_TCK = None


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` from ``/proc`` (None where there is no ``/proc``)."""
    global _CLK_TCK
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        if _CLK_TCK is None:
            _CLK_TCK = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime (fields 14, 15 of stat)
    except (OSError, IndexError, ValueError):
        return None


class HardTimeoutRunner:
    """Run registered tasks in child processes that are killed when over time.

    Args:
        max_workers: children kept at most (calls beyond that wait for a free child; the wait is not
            charged to the item).
        start_timeout_s: how long a new child may take to start and import math-verify.

    ``call(task, args, timeout_s)`` returns the task's result, or raises :class:`BudgetExceeded` (child
    killed after ``timeout_s``) or :class:`WorkerFailed` (the task raised, or the child died).
    """

    def __init__(self, max_workers: int = 4, start_timeout_s: float = 120.0) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.start_timeout_s = start_timeout_s
        self._idle: list[_Worker] = []
        self._count = 0
        self._cond = threading.Condition()
        self.kills = 0  # children killed for overrunning (for tests and logs)

    def _acquire(self) -> _Worker:
        with self._cond:
            while not self._idle and self._count >= self.max_workers:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return _Worker(self.start_timeout_s)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, w: _Worker | None) -> None:
        with self._cond:
            if w is None:
                self._count -= 1
            else:
                self._idle.append(w)
            self._cond.notify()

    def call(self, task: str, args: tuple, timeout_s: float, budget_s: float | None = None) -> tuple[Any, float]:
        """Run ``task(*args)`` in a child; kill it after ``timeout_s`` CPU seconds of its work.

        Args:
            task: a registered task name (``"math_equal"``).
            args: picklable arguments.
            timeout_s: CPU seconds the task may use (> 0); the child is also killed after
                ``WALL_FACTOR * timeout_s`` seconds of wall-clock time.
            budget_s: the whole budget, named in the timeout reason (default ``timeout_s``).

        Returns:
            ``(result, CPU seconds the task used)``.

        Raises:
            KeyError: unknown task.
            BudgetExceeded: over time (the child was killed); message ``"timeout after N s"``.
            WorkerFailed: the task raised or the child died (message says which).
        """
        if task not in _TASKS:
            raise KeyError(f"unknown budget task {task!r}; registered: {sorted(_TASKS)}")
        reason = timeout_reason(budget_s if budget_s is not None else timeout_s)
        if timeout_s <= 0:
            raise BudgetExceeded(reason)
        w: _Worker | None = self._acquire()
        try:
            cpu0 = _cpu_seconds(w.proc.pid)
            wall0 = time.monotonic()
            w.parent.send((task, args))
            step = min(0.02, timeout_s / 4)
            while not w.parent.poll(step):
                cpu = _cpu_seconds(w.proc.pid)
                used = (cpu - cpu0) if cpu is not None and cpu0 is not None else time.monotonic() - wall0
                if used > timeout_s or time.monotonic() - wall0 > WALL_FACTOR * timeout_s:
                    w.kill()
                    self.kills += 1
                    self._release(None)
                    w = None
                    raise BudgetExceeded(reason)
            status, value = w.parent.recv()
            cpu = _cpu_seconds(w.proc.pid)
            used = (cpu - cpu0) if cpu is not None and cpu0 is not None else time.monotonic() - wall0
        except (EOFError, OSError, pickle.UnpicklingError) as e:
            if w is not None:
                w.kill()
                self._release(None)
            raise WorkerFailed(f"budget worker died: {type(e).__name__}") from None
        self._release(w)
        if status != "ok":
            raise WorkerFailed(value)
        return value, max(used, 0.0)

    def close(self) -> None:
        """Kill every idle child (busy ones end with their calls)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for w in idle:
            w.kill()


_RUNNER: HardTimeoutRunner | None = None
_RUNNER_LOCK = threading.Lock()


def default_runner() -> HardTimeoutRunner:
    """The process-wide runner (created on first use; its children end with the process)."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = HardTimeoutRunner()
            atexit.register(_RUNNER.close)
        return _RUNNER


def math_equal(gold: str, pred: str) -> bool | None:
    """math-verify equivalence of two LaTeX strings under the current item's budget.

    Returns:
        True / False, or None when either side does not parse (or math-verify raised).

    Raises:
        BudgetExceeded: the item's budget ran out (the child computing it was killed).
    """
    left, whole = remaining()
    try:
        value, used = default_runner().call("math_equal", (gold, pred), left, budget_s=whole)
    except WorkerFailed as e:
        log.debug("math-verify failed on %r vs %r: %s", gold[:80], pred[:80], e)
        return None
    _charge(used)
    return value
