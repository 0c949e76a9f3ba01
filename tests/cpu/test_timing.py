"""Tests for howeval.timing: start-up marks from every process of a run, and the phases read from them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from howeval.timing import ENV, mark, read_marks, startup_phases


def test_marks_are_written_only_when_asked_and_read_back_in_time_order(tmp_path, monkeypatch):
    path = tmp_path / "marks.jsonl"
    monkeypatch.delenv(ENV, raising=False)
    mark("main")
    assert not path.exists() and read_marks(str(path)) == []
    monkeypatch.setenv(ENV, str(path))
    mark("main")
    # another process (a Ray worker inherits the driver's environment) appends to the same file
    code = "from howeval.timing import mark; mark('engine_load_start', engine='vllm')"
    subprocess.run([sys.executable, "-c", code], check=True)
    marks = read_marks(str(path))
    assert [m["event"] for m in marks] == ["main", "engine_load_start"]
    assert marks[1]["engine"] == "vllm" and marks[0]["pid"] != marks[1]["pid"] and marks[0]["t"] <= marks[1]["t"]
    assert all(json.loads(x) for x in path.read_text().splitlines())


def test_startup_phases_split_the_time_to_the_first_request():
    m = [{"event": "main", "t": 101.0}, {"event": "ray_init_start", "t": 104.0}, {"event": "ray_init_end", "t": 107.0},
         {"event": "pipelines_start", "t": 109.0}, {"event": "actor_init_start", "t": 112.0, "stage": "generate"},
         {"event": "actor_ready", "t": 113.0, "stage": "judge"}, {"event": "engine_load_start", "t": 115.0},
         {"event": "engine_load_end", "t": 130.0}, {"event": "actor_ready", "t": 131.0, "stage": "generate"},
         {"event": "first_request", "t": 131.5}, {"event": "answers", "t": 150.0}, {"event": "answers", "t": 161.5},
         {"event": "report_start", "t": 162.0}, {"event": "report_end", "t": 165.0}]
    p = startup_phases(m, 100.0, ended=166.5)
    assert p == {"imports": 1.0, "driver_preparation": 5.0, "ray_start": 3.0, "actor_start": 7.0, "model_load": 15.0,
                 "actor_process_wait": None, "actor_process_boot": None, "actor_engine_import": None,
                 "to_first_request": 31.5, "generation": 30.0, "to_report": 0.5, "report": 3.0, "after_report": 1.5}
    # the generate actor's process start (psutil, on its actor_init_start mark) splits actor_start
    m[4] = {**m[4], "process_start": 110.5}
    p = startup_phases(m, 100.0)
    assert (p["actor_process_wait"], p["actor_process_boot"], p["actor_engine_import"]) == (1.5, 1.5, 3.0)
    m[4] = {**m[4], "process_start": 103.0}  # a worker Ray started before the pipelines (prestarted): no wait
    p = startup_phases(m, 100.0)
    assert (p["actor_process_wait"], p["actor_process_boot"], p["actor_engine_import"]) == (0.0, 3.0, 3.0)
    assert startup_phases(m, 100.0)["after_report"] is None  # no exit time given
    # a run without an engine mark (an hf config) still gives the driver's phases
    p = startup_phases([x for x in m if not x["event"].startswith("engine")], 100.0)
    assert p["actor_start"] is None and p["model_load"] is None and p["ray_start"] == pytest.approx(3.0)
