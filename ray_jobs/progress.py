"""Progress of every job: counts per output batch, collected from the stage actors, drawn as a live block.

- :func:`batch_stats`: rows / errors / tokens of one output batch per group (run in the stage actor).
- :class:`Counts`: a small Ray actor the stage actors send those counts to (fire and forget); the driver
  drains it every tick. Created by ``ray_jobs.execute``; defined here so progress lives in one file.
- :class:`Progress`: the block of lines, one per ``"<config> <mode>"`` and one for the judge: rows done /
  total, errors, tokens/s, ETA (redrawn in place on a terminal, every 30 s in logs).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc


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
    start: float | None = None
    last: float | None = None
    failed: str | None = None


class Progress:
    """Live progress lines, one per label (``"<config> <mode>"`` and ``"judge"``).

    Each line: rows done / total, errors, tokens/s and an ETA from the rate since the label's first
    batch was submitted. On a terminal the block is redrawn in place every ``interval`` seconds; elsewhere
    (logs, ``ray job submit``) it is printed every ``log_interval`` seconds and once at the end.

    Args:
        stream: where to print (default stdout).
        clock: monotonic seconds (tests inject one).
        tty: force terminal / log mode (default: ``stream.isatty()``).
    """

    def __init__(self, stream=None, clock=time.monotonic, tty: bool | None = None, interval: float = 0.5,
                 log_interval: float = 30.0):
        self.stream = stream or sys.stdout
        self.clock = clock
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval, self.log_interval = interval, log_interval
        self.lines: dict[str, _Line] = {}
        self._drawn = 0
        self._last_draw = float("-inf")
        self._t0 = clock()

    def add(self, label: str, total: int, done: int = 0) -> None:
        self.lines[label] = _Line(total=total, done=done)

    def start(self, label: str) -> None:
        ln = self.lines[label]
        if ln.start is None:
            ln.start = self.clock()

    def update(self, label: str, rows: int, errors: int = 0, tokens: int = 0) -> None:
        ln = self.lines[label]
        if ln.start is None:
            ln.start = self.clock()
        ln.done += rows
        ln.new += rows
        ln.errors += errors
        ln.tokens += tokens
        ln.last = self.clock()

    def shrink(self, label: str, rows: int) -> None:
        """Lower a total (rows that will not come, e.g. engine errors are not judged)."""
        self.lines[label].total = max(self.lines[label].done, self.lines[label].total - rows)

    def fail(self, label: str, reason: str) -> None:
        self.lines[label].failed = reason

    def line(self, label: str) -> str:
        """One progress line, e.g. ``qwen NT   120/200  60%  err 3  412 tok/s  ETA 35s``."""
        ln = self.lines[label]
        width = max(len(x) for x in self.lines)
        head = f"  {label:<{width}}  {ln.done:>6}/{ln.total:<6} {100 * ln.done / ln.total if ln.total else 100:3.0f}%"
        if ln.failed:
            return f"{head}  FAILED: {ln.failed}"
        parts = [head, f"err {ln.errors}"]
        now = self.clock()
        if ln.start is not None and ln.new:
            elapsed = max((ln.last or now) - ln.start, 1e-9)
            if ln.tokens:
                parts.append(f"{ln.tokens / elapsed:6.1f} tok/s")
            rate = ln.new / elapsed
            left = ln.total - ln.done
            parts.append("done" if left <= 0 else f"ETA {_dur(left / rate)}")
        elif ln.done >= ln.total:
            parts.append("done")
        else:
            parts.append("starting" if ln.start is not None else "waiting")
        return "  ".join(parts)

    def render(self) -> list[str]:
        return [f"[{_dur(self.clock() - self._t0)}]"] + [self.line(k) for k in self.lines]

    def tick(self, force: bool = False) -> None:
        """Redraw (terminal) or print (log) the block when its interval has passed, or when ``force``."""
        now = self.clock()
        if not force and now - self._last_draw < (self.interval if self.tty else self.log_interval):
            return
        self._last_draw = now
        lines = self.render()
        if self.tty and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self._drawn = len(lines) if self.tty else 0

    def note(self, text: str) -> None:
        """Print a line above the block (a failure, a phase change) without breaking the redraw."""
        if self.tty and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0
        self.stream.write(text + "\n")
        self.stream.flush()
        self._last_draw = float("-inf")


def _dur(s: float) -> str:
    s = int(round(max(s, 0)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s}s"
