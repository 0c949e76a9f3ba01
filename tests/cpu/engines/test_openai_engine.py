"""Tests for howeval.engines.openai_engine: the qps limiter with an injected clock (no wall-clock rates)."""
from __future__ import annotations

import pytest

from howeval.engines.openai_engine import RateLimiter


class FakeClock:
    """A clock that only moves when the limiter sleeps (or the test advances it)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(round(s, 9))
        self.now += s


def test_starts_are_spaced_one_over_qps():
    clock = FakeClock()
    lim = RateLimiter(4.0, clock=clock, sleep=clock.sleep)
    starts = []
    for _ in range(5):
        lim.wait()
        starts.append(clock.now)
    assert [round(b - a, 9) for a, b in zip(starts, starts[1:])] == [0.25] * 4
    assert clock.sleeps == [0.25] * 4  # the first request goes at once


def test_idle_time_is_not_banked():
    clock = FakeClock()
    lim = RateLimiter(2.0, clock=clock, sleep=clock.sleep)
    lim.wait()
    clock.now += 10.0  # a long pause: the next two requests may not burst
    lim.wait()
    lim.wait()
    assert clock.sleeps == [0.5]


def test_no_limit_and_bad_qps():
    clock = FakeClock()
    lim = RateLimiter(None, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        lim.wait()
    assert clock.sleeps == [] and lim.interval == 0.0
    with pytest.raises(ValueError, match="qps must be > 0"):
        RateLimiter(0.0)
