"""Tests for ray_jobs.common: cluster start/join, blocks, Parquet writes (fakes for Ray; no cluster)."""
from __future__ import annotations

import pyarrow as pa
import pytest

import ray_jobs.common as common
from howeval.config import RayConfig


def test_blocks_are_the_resume_unit():
    t = pa.table({"x": list(range(5))})
    assert [b.column("x").to_pylist() for b in common.blocks(t, 2)] == [[0, 1], [2, 3], [4]]
    assert common.blocks(t.slice(0, 0), 2) == []


class FakeDataset:
    def __init__(self):
        self.calls = []

    def write_parquet(self, path, **kwargs):
        self.calls.append((path, kwargs))


def test_write_parquet_local_folder_is_created_and_passed_as_a_path(tmp_path):
    ds = FakeDataset()
    common.write_parquet(ds, str(tmp_path / "out" / "responses"), num_cpus=0.5)
    ((path, kwargs),) = ds.calls
    assert path == str(tmp_path / "out" / "responses") and (tmp_path / "out" / "responses").is_dir()
    assert kwargs == {"ray_remote_args": {"num_cpus": 0.5}}


def test_write_parquet_other_filesystems_are_wrapped_for_pyarrow():
    from pyarrow.fs import PyFileSystem

    ds = FakeDataset()
    common.write_parquet(ds, "memory://h10-common-test/responses")
    ((path, kwargs),) = ds.calls
    assert path == "/h10-common-test/responses"
    assert isinstance(kwargs["filesystem"], PyFileSystem) and kwargs["ray_remote_args"] == {"num_cpus": 0.25}


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
