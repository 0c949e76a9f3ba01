"""Progress of every job: counts per output batch, collected from the stage actors, drawn as a live block.

- :func:`batch_stats`: rows / errors / tokens of one output batch per group (run in the stage actor).
- :class:`Counts`: a small Ray actor the stage actors send those counts to (fire and forget); the driver
  drains it every tick. Created by ``howeval.runtime.execute``; defined here so progress lives in one file.
- :class:`Progress`: the block of lines, one per ``"<config> <mode>"`` and one for the judge (or one per
  CRYSTAL / AdaptMMBench label): rows done / total, errors, rows/s, tokens/s, an ETA that ticks down
  between batches, and the seconds spent starting before the first batch (a ``rich.live`` block
  redrawn in place on a terminal, stray output redirected above it; every 30 s in logs). Each phase of
  a job is a :meth:`Progress.section`.
"""
from __future__ import annotations

import io
import os
import sys
import threading
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from howeval.report.tables import duration  # noqa: F401  (the block's time format, re-exported)


def batch_stats(table: pa.Table, group_col: str | None, error_col: str | None, tokens_col: str | None) -> dict:
    """Row counts of an output batch per group: ``{group: {"rows", "errors", "tokens"}}`` (group None = all)."""
    groups = table.column(group_col).to_pylist() if group_col and group_col in table.column_names else [None] * table.num_rows
    errs = (table.column(error_col).is_valid().to_pylist() if error_col and error_col in table.column_names
            else [False] * table.num_rows)
    toks = (pc.fill_null(table.column(tokens_col), 0).to_pylist() if tokens_col and tokens_col in table.column_names
            else [0] * table.num_rows)
    out: dict = {}
    for g, e, t in zip(groups, errs, toks):
        s = out.setdefault(g, {"rows": 0, "errors": 0, "tokens": 0})
        s["rows"] += 1
        s["errors"] += int(bool(e))
        s["tokens"] += int(t or 0)
    return out


class Counts:
    """The counts sink (a Ray actor, ``max_concurrency`` 1): ``add`` from the stage actors, ``drain`` from
    the driver. Events are ``(pipeline, stage, {group: {"rows", "errors", "tokens"}})``, in arrival order."""

    def __init__(self):
        self.events: list[tuple] = []

    def add(self, pipeline: str, stage: str, groups: dict) -> None:
        self.events.append((pipeline, stage, groups))

    def drain(self) -> list[tuple]:
        out, self.events = self.events, []
        return out


@dataclass
class _Line:
    total: int
    done: int = 0
    errors: int = 0
    tokens: int = 0
    new: int = 0
    batches: int = 0
    gaps: list = field(default_factory=list)  # seconds between consecutive batch arrivals
    start: float | None = None
    first: float | None = None
    last: float | None = None
    ready: float | None = None
    failed: str | None = None


class Progress:
    """Live progress lines, one per label (``"<config> <mode>"`` and ``"judge"``; ``"crystal"``; ...).

    Each line: rows done / total, errors, then

    - before any row: ``waiting`` (not started), ``starting 35s`` (started 35 s ago: engines loading; it
      ticks with every redraw), then, once an actor of the stage is built (:meth:`ready`),
      ``ready after 35s, first batch 15s`` (the engine is up; the first batch is on its way);
    - after the first batch: ``first batch after 1:40`` (its wait includes the engine's start-up, so it
      gives no rate);
    - from the second batch on: rows/s (:meth:`rate`: rows per batch over the mean time between batch
      arrivals since the first batch; the start-up is left out, and from three gaps on the longest gap
      too, so one late batch does not move it), tokens/s at the same rate, and an ETA = rows left / rows/s
      at the last batch's arrival. Between batches it counts down to the next batch's due time; while a
      batch is late it holds at the rows after it instead of jumping to a projection from scratch.

    On a terminal the block is a ``rich.live.Live`` display: redrawn in place every ``interval`` seconds,
    with ``sys.stdout`` / ``sys.stderr`` and the logging handlers that write to them redirected above the
    block while it is live, so a line from Ray (a worker's log line, a Ray Data warning) lands above the
    block instead of breaking it. Elsewhere (logs, ``ray job logs``) the block is printed every
    ``log_interval`` seconds and once at the end of each phase. A job with several phases (generate +
    judge, CRYSTAL, AdaptMMBench) opens each with :meth:`section`: the finished block stays on screen and a
    new one starts under its own title.

    Args:
        stream: where to print (default stdout).
        clock: monotonic seconds (tests inject one).
        tty: force terminal / log mode (default: ``stream.isatty()``).
        width: terminal columns for the live block (default: the terminal's own).
        tap_fd: also catch what is written to file descriptor 2 by code outside Python while the block
            is live (Ray's C++ core worker logs there, e.g. ``core_worker.cc: Actor ... has constructor
            arguments in the object store``): the line is printed above the block (:class:`_FdTap`).
            Default: when the block is live and fd 2 is a terminal too.
    """

    def __init__(self, stream=None, clock=time.monotonic, tty: bool | None = None, interval: float = 0.5,
                 log_interval: float = 30.0, width: int | None = None, tap_fd: bool | None = None):
        self.stream = stream or sys.stdout
        self.clock = clock
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval, self.log_interval = interval, log_interval
        self.width = width
        self.lines: dict[str, _Line] = {}
        self.title = ""
        self._live = None
        self._console = None
        self._rerouted: list[tuple] = []
        self._tap_fd = tap_fd
        self._tap: _FdTap | None = None
        self._atexit = False
        self._last_draw = float("-inf")
        self._t0 = self._section_t0 = clock()

    @classmethod
    def silent(cls) -> Progress:
        """A Progress that prints nowhere (a caller that passes none: benchmarks, ``build_refs``)."""
        return cls(stream=io.StringIO(), tty=False)

    def section(self, title: str) -> None:
        """Start a new block titled ``title`` (e.g. ``"CRYSTAL step scores"``); the previous block stays on
        screen as last drawn (draw it final with :meth:`finish` first)."""
        self._stop()
        self.lines = {}
        self.title = title
        self._last_draw = float("-inf")
        self._section_t0 = self.clock()

    def add(self, label: str, total: int, done: int = 0) -> None:
        self.lines[label] = _Line(total=total, done=done)

    def start(self, label: str) -> None:
        ln = self.lines[label]
        if ln.start is None:
            ln.start = self.clock()

    def ready(self, label: str) -> None:
        """An actor of the label's stage is built (engine loaded): the line says how long that took."""
        ln = self.lines[label]
        if ln.ready is None:
            ln.ready = self.clock()

    def update(self, label: str, rows: int, errors: int = 0, tokens: int = 0) -> None:
        """One output batch of ``rows`` rows arrived for ``label``."""
        ln = self.lines[label]
        now = self.clock()
        if ln.start is None:
            ln.start = now
        if ln.first is None:
            ln.first = now
        else:
            ln.gaps.append(now - ln.last)
        ln.done += rows
        ln.new += rows
        ln.batches += 1
        ln.errors += errors
        ln.tokens += tokens
        ln.last = now

    def shrink(self, label: str, rows: int) -> None:
        """Lower a total (rows that will not come, e.g. engine errors are not judged)."""
        self.lines[label].total = max(self.lines[label].done, self.lines[label].total - rows)

    def fail(self, label: str, reason: str) -> None:
        self.lines[label].failed = reason

    def rate(self, label: str) -> float | None:
        """Rows per second of ``label`` after its first batch: the mean rows per batch over the mean time between
        batch arrivals since the first batch (the start-up before it, engine load included, is left out; from
        three gaps on the longest gap is left out too, so one late batch does not move it). None until a
        second batch has arrived (one batch gives no rate without its start-up)."""
        ln = self.lines[label]
        if not ln.gaps:
            return None
        gaps = sorted(ln.gaps)[:-1] if len(ln.gaps) >= 3 else ln.gaps
        per_batch = sum(gaps) / len(gaps)
        return (ln.new / ln.batches) / per_batch if per_batch > 0 else None

    def eta(self, label: str) -> float | None:
        """Seconds until the label's last row is expected: rows left / :meth:`rate` at the last batch's arrival,
        counting down from there until the next batch is due and then held at the rows after it (a late batch
        does not make it jump); 0.0 when nothing is left, None while there is no rate (before the second batch)."""
        ln = self.lines[label]
        left = ln.total - ln.done
        if left <= 0:
            return 0.0
        r = self.rate(label)
        if r is None or ln.last is None:
            return None
        held = max(left - ln.new / ln.batches, 0) / r  # what the next batch leaves: the ETA while it is late
        return max(left / r - (self.clock() - ln.last), held)

    def line(self, label: str) -> str:
        """One progress line, e.g. ``qwen NT   120/200  60%  err 3  4.0 rows/s  412 tok/s  ETA 35s``; after the
        first batch only ``first batch after 1:40`` (no rate yet: :meth:`rate`)."""
        ln = self.lines[label]
        width = max(len(x) for x in self.lines)
        head = f"  {label:<{width}}  {ln.done:>6}/{ln.total:<6} {100 * ln.done / ln.total if ln.total else 100:3.0f}%"
        if ln.failed:
            return f"{head}  FAILED: {ln.failed}"
        parts = [head, f"err {ln.errors}"]
        now = self.clock()
        left = ln.total - ln.done
        r = self.rate(label)
        if r is not None:
            parts.append(f"{_rate(r)} rows/s")
            if ln.tokens and ln.new:
                parts.append(f"{r * ln.tokens / ln.new:6.1f} tok/s")
            parts.append("done" if left <= 0 else f"ETA {duration(self.eta(label) or 0)}")
        elif left <= 0:
            parts.append("done")
        elif ln.first is not None:
            parts.append(f"first batch after {duration(ln.first - (ln.start if ln.start is not None else ln.first))}")
        elif ln.ready is not None and ln.start is not None:
            parts.append(f"ready after {duration(ln.ready - ln.start)}, first batch {duration(now - ln.ready)}")
        elif ln.start is not None:
            parts.append(f"starting {duration(now - ln.start)}")
        else:
            parts.append("waiting")
        return "  ".join(parts)

    def render(self) -> list[str]:
        head = f"[{duration(self.clock() - self._t0)}]" + (f" {self.title}" if self.title else "")
        return [head] + [self.line(k) for k in self.lines]

    def tick(self, force: bool = False) -> None:
        """Redraw (terminal) or print (log) the block when its interval has passed, or when ``force``."""
        now = self.clock()
        if not force and now - self._last_draw < (self.interval if self.tty else self.log_interval):
            return
        self._last_draw = now
        lines = self.render()
        if not self.tty:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
            return
        from rich.text import Text

        self._start()
        self._live.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"), refresh=True)

    def finish(self) -> None:
        """Draw the block once more, final, and leave it on screen: what follows (a summary line, the next
        section) is printed under it."""
        self.tick(force=True)
        self._stop()

    def wrote(self, uri: str) -> None:
        """A line for a file just written, with the seconds since the section began, under the block
        (which stays as drawn): ``  wrote runs/demo/report.md  3s``."""
        self._stop()
        self.stream.write(f"  wrote {uri}  {duration(self.clock() - self._section_t0)}\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """Print a line above the block (a failure, a phase change) without breaking the redraw."""
        if self._live is not None:
            from rich.text import Text

            self._console.print(Text(text), soft_wrap=True)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()
        self._last_draw = float("-inf")

    # -- the live block (terminal only) -----------------------------------------------------------------
    def _start(self) -> None:
        if self._live is not None:
            return
        from rich.console import Console
        from rich.live import Live

        if self._console is None:
            self._console = Console(file=self.stream, force_terminal=True, width=self.width, highlight=False,
                                    markup=False, emoji=False)
        before = {id(sys.stdout), id(sys.stderr), id(sys.__stdout__), id(sys.__stderr__), id(self.stream)}
        self._live = Live(console=self._console, auto_refresh=False, redirect_stdout=True, redirect_stderr=True,
                          transient=False, vertical_overflow="visible")
        self._live.start()
        if not self._atexit:  # a job that raises while the block is live: stop it (cursor shown) at exit
            import atexit

            atexit.register(self._stop)
            self._atexit = True
        # logging handlers built before the block (Ray's, at ray.init) hold the terminal's stream itself:
        # point them at the redirected stderr while the block is live, so their lines land above it
        import logging

        loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                          if isinstance(lg, logging.Logger))]
        for lg in loggers:
            for h in lg.handlers:
                # a handler bound to a stream at creation (not a file, not one that reads sys.stderr per call)
                if (isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
                        and "stream" in vars(h) and id(h.stream) in before):
                    self._rerouted.append((h, h.stream))
                    h.setStream(sys.stderr)
        if self._tap_fd if self._tap_fd is not None else (_isatty(2) and _fileno(self.stream) != 2):
            self._tap = _FdTap(2, self._console)

    def _stop(self) -> None:
        if self._live is None:
            return
        if self._tap is not None:
            self._tap.close()
            self._tap = None
        for h, stream in self._rerouted:
            h.setStream(stream)
        self._rerouted = []
        self._live.stop()
        self._live = None


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class _FdTap:
    """File descriptor ``fd`` pointed at a pipe while a live block is drawn: a thread prints each line
    written there (by C/C++ code that writes to the descriptor itself, never through ``sys.stderr``) with
    ``console.print``, i.e. above the live block. :meth:`close` points ``fd`` back at what it was; the
    thread keeps reading until every writer has let go of the pipe (a child process started meanwhile
    holds it as its stderr), forwarding to ``fd`` from then on, so no writer ever blocks on a full pipe
    and no line is lost. A process killed by a signal while the block is live loses what was still in the
    pipe; Ray's own lines are also in the session's logs (``python-core-driver-*.log``)."""

    def __init__(self, fd: int, console) -> None:
        self.fd, self.console = fd, console
        self.saved = os.dup(fd)
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        self.live = True
        self.thread = threading.Thread(target=self._pump, args=(r,), name="progress-fd-tap", daemon=True)
        self.thread.start()

    def _pump(self, r: int) -> None:
        buf = b""
        while chunk := os.read(r, 65536):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                self._emit(line)
        if buf:
            self._emit(buf)
        os.close(r)

    def _emit(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        if self.live:
            from rich.text import Text

            self.console.print(Text(text), soft_wrap=True)
        else:
            os.write(self.fd, line + b"\n")

    def close(self) -> None:
        os.dup2(self.saved, self.fd)  # our write end of the pipe goes: EOF once no child holds it
        os.close(self.saved)
        self.thread.join(timeout=0.5)  # what was written before this point is printed above the final block
        self.live = False


def _rate(r: float) -> str:
    """Rows per second with the digits that matter: ``120``, ``4.0``, ``0.35``."""
    return f"{r:.0f}" if r >= 100 else f"{r:.1f}" if r >= 1 else f"{r:.2f}"
