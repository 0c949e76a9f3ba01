"""howeval.ray_jobs.report: the command line over a stored run (no Ray, no model)."""
from __future__ import annotations

from fakes.runs import make_run


def test_main_writes_every_report_file_and_names_a_bad_judge(tmp_path, capsys):
    from howeval.ray_jobs.report import main

    run = make_run(tmp_path / "r")
    assert main(["--run", str(run)]) == 0
    for f in ("metrics.json", "report.md", "index.html", "samples.jsonl", "samples.parquet", "tables/patterneval.csv",
              "tables/patterneval_categories.tex", "plots/radar_NT.png", "plots/length_sextiles.png"):
        assert (run / f).exists(), f
    printed = capsys.readouterr().out.splitlines()  # a line per file, as it is written
    assert printed[0] == f"wrote {run / 'metrics.json'}" and printed[-1] == f"wrote {run / 'samples.parquet'}"
    assert f"wrote {run / 'plots' / 'radar_NT.png'}" in printed and len(printed) >= 12
    assert main(["--run", str(run), "--judge", "nope"]) == 2
    assert "judge 'nope' not in the run's judges ['rules', 'other']" in capsys.readouterr().err
    assert main(["--run", str(tmp_path / "missing")]) == 2
