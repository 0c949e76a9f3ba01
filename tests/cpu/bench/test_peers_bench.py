"""bench/peers_bench: the start-up phases of the contenders that mark their engine, and the summary's ratios
(the issue's goals, and the pipeline against the Ray floor, ``ray_one_call``)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
peers_bench = pytest.importorskip("peers_bench")


def test_engine_phases_without_ray_marks_are_the_engine_spans_from_the_spawn():
    mk = {"engine_load_start": 110.0, "engine_load_end": 130.0, "first_request": 130.5, "last_answer": 160.5}
    assert peers_bench.engine_phases(mk, 100.0) == {"to_engine_start": 10.0, "model_load": 20.0,
                                                    "to_first_request": 30.5, "generation": 30.0}


def test_engine_phases_split_the_ray_floor_start_like_the_sweep_and_count_a_prestarted_process_as_no_wait():
    mk = {"ray_init_start": 101.0, "ray_init_end": 106.0, "process_start": 105.0, "actor_init_start": 109.0,
          "engine_load_start": 118.0, "engine_load_end": 140.0, "first_request": 140.5, "last_answer": 170.5}
    p = peers_bench.engine_phases(mk, 100.0)
    # the worker process started before Ray's start ended (pre-started): no wait, its boot counted from Ray's end
    assert (p["ray_start"], p["actor_process_wait"], p["actor_process_boot"], p["actor_engine_import"]) == (5.0, 0.0, 3.0, 9.0)
    assert (p["to_engine_start"], p["to_first_request"], p["generation"]) == (18.0, 40.5, 30.0)
    late = peers_bench.engine_phases(mk | {"process_start": 107.5}, 100.0)
    assert (late["actor_process_wait"], late["actor_process_boot"]) == (1.5, 1.5)


def _run(contender, rnd, wall, gen, outputs=None):
    return {"contender": contender, "round": rnd, "wall_s": wall, "generation_s": gen, "phases": {"generation": gen},
            "outputs": outputs or {"a": "x", "b": "y"}}


def test_summarize_gives_the_goals_and_the_ray_floor_ratios_on_minima_and_paired_by_round():
    runs = [_run("one_call", 0, 70.0, 30.0), _run("lmms_eval", 0, 80.0, 31.0), _run("pipeline", 0, 90.0, 36.0),
            _run("ray_one_call", 0, 84.0, 33.0),
            _run("one_call", 1, 75.0, 32.0), _run("lmms_eval", 1, 76.0, 30.0), _run("pipeline", 1, 88.0, 33.0),
            _run("ray_one_call", 1, 80.0, 30.0)]
    s = peers_bench.summarize(runs)
    assert s["pipeline_wall_vs_lmms_eval"] == {"on_minima": round(88 / 76, 3), "median_paired": round((90 / 80 + 88 / 76) / 2, 3),
                                              "paired": [round(90 / 80, 3), round(88 / 76, 3)]}
    assert s["pipeline_generation_vs_one_call"]["on_minima"] == 1.1  # 33 / 30
    assert s["pipeline_wall_vs_ray_one_call"]["on_minima"] == 1.1  # 88 / 80
    assert s["pipeline_generation_vs_ray_one_call"]["paired"] == [round(36 / 33, 3), 1.1]
    assert s["ray_one_call_wall_vs_lmms_eval"]["on_minima"] == round(80 / 76, 3)
    assert s["ray_one_call_generation_vs_one_call"]["on_minima"] == 1.0
    assert s["ray_one_call"]["wall_s"] == {"min": 80.0, "median": 82.0}
    assert s["outputs_identical"] is True


def test_summarize_without_the_ray_floor_leaves_its_ratios_none_and_reports_a_differing_output():
    runs = [_run("one_call", 0, 70.0, 30.0), _run("pipeline", 0, 90.0, 36.0, {"a": "x", "b": "z"})]
    s = peers_bench.summarize(runs)
    assert s["pipeline_wall_vs_ray_one_call"] is None and s["ray_one_call_wall_vs_lmms_eval"] is None
    assert s["outputs_identical"] is False and s["output_differences"] == ["pipeline round 0: b"]
