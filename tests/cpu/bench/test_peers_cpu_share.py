"""bench/peers_cpu_share.cpu_used: CPU seconds per process inside a window, from once-a-second samples."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
peers_cpu_share = pytest.importorskip("peers_cpu_share")


def test_cpu_used_counts_each_pid_from_its_last_sample_before_the_window_and_keeps_its_last_name():
    samples = [
        (0.0, 1, "driver", 5.0), (0.0, 2, "python default_worker.py", 1.0),
        (1.0, 1, "driver", 6.0), (1.0, 2, "ray::IDLE", 2.0),
        (2.0, 1, "driver", 6.5), (2.0, 2, "ray::MapWorker(StageUDF)", 4.0), (2.0, 3, "VLLM::Worker", 3.0),
        (3.0, 1, "driver", 6.5), (3.0, 2, "ray::MapWorker(StageUDF)", 4.5), (3.0, 3, "VLLM::Worker", 5.0),
        (4.0, 1, "driver", 9.0),
    ]
    r = peers_cpu_share.cpu_used(samples, 0.5, 3.0)
    # pid 1: 6.5 - 5.0; pid 2: 4.5 - 1.0 under its last name; pid 3 born inside the window: from 0
    assert r["per_process"] == [{"cpu_s": 5.0, "process": "VLLM::Worker"},
                                {"cpu_s": 3.5, "process": "ray::MapWorker(StageUDF)"},
                                {"cpu_s": 1.5, "process": "driver"}]
    assert r["cpu_s_used"] == 10.0 and r["window_s"] == 2.5


def test_cpu_used_leaves_out_processes_idle_or_absent_in_the_window():
    samples = [(0.0, 1, "a", 1.0), (1.0, 1, "a", 1.0), (2.0, 2, "b", 0.0), (5.0, 3, "c", 4.0)]
    r = peers_cpu_share.cpu_used(samples, 0.5, 2.0)
    assert r["per_process"] == [] and r["cpu_s_used"] == 0
