"""Tests for howeval.runtime.cluster: cluster start/join (fakes for Ray; no cluster)."""
from __future__ import annotations

import pytest

import howeval.runtime.cluster as common
from howeval.config import RayConfig


class FakeRay:
    def __init__(self, initialized: bool):
        self.initialized, self.inits = initialized, []

    def is_initialized(self):
        return self.initialized

    def init(self, **kw):
        self.inits.append(kw)


@pytest.fixture
def fake_ray(monkeypatch):
    import ray

    fake = FakeRay(False)
    monkeypatch.setattr(ray, "is_initialized", fake.is_initialized)
    monkeypatch.setattr(ray, "init", fake.init)
    return fake


def test_init_ray_starts_a_local_cluster_of_num_cpus(fake_ray, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    common.init_ray(RayConfig(num_cpus=3))
    assert fake_ray.inits == [{"num_cpus": 3, "include_dashboard": False, "log_to_driver": True}]


def test_init_ray_joins_the_configured_or_environment_address(fake_ray, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    common.init_ray(RayConfig())
    common.init_ray(RayConfig(address="auto"))
    assert [kw["address"] for kw in fake_ray.inits] == ["ray://head:10001", "auto"]


def test_init_ray_is_a_no_op_when_ray_is_up(fake_ray):
    fake_ray.initialized = True
    common.init_ray(RayConfig())
    assert fake_ray.inits == []


def test_raylet_errors_reach_the_driver_as_one_line_each_once(monkeypatch):
    """Issue 34: an engine that fails to start sent the driver its whole traceback once per retry (284
    lines); condensed, each is its innermost error line, printed once."""
    from ray._private import worker

    import howeval.runtime.cluster as common

    printed = []
    monkeypatch.setattr(worker, "print_to_stdstream", lambda data, ignore_prefix: printed.append(data["lines"]))
    monkeypatch.setattr(common, "_seen_raylet_lines", set())
    common.condense_raylet_errors()
    common.condense_raylet_errors()  # idempotent: wrapped once
    tb = ("Task MapWorker(MapBatches(StageUDF)).get_location failed. There are infinite retries remaining, so the "
          "task will be retried. Error: Traceback (most recent call last):\n\n  File \"x.py\", line 1, in f\n"
          "    raise ValueError('bad.jsonl:1: each line needs sample_id')\n"
          "ValueError: bad.jsonl:1: each line needs sample_id\n")
    for _ in range(6):
        worker.print_to_stdstream({"lines": [tb], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    worker.print_to_stdstream({"lines": ["a worker line"], "pid": 123, "is_err": False}, ignore_prefix=False)
    assert printed == [["ValueError: bad.jsonl:1: each line needs sample_id"], ["a worker line"]]
