"""build_corpus on a small Parquet run with three judges: consensus filter, join, oversampling, records."""
from __future__ import annotations

import json

import pytest

from howeval.judges.patternrm.format import parse_label_output
from howeval.ray_jobs.build_corpus import build_corpus, main

from fakes.judged_run import JUDGES, make_run


def test_counts_and_records(tmp_path, capsys):
    run = make_run(tmp_path)
    c = build_corpus(str(run), None, str(tmp_path / "corpus"), min_rate=0.25, max_copies=2, seed=0)
    assert c["consensus"] == {"responses": 12, "missing_judge": 1, "judge_error": 1, "disagree": 1, "unanimous": 9}
    assert c["joined"]["truncated"] == 1 and c["joined"]["kept"] == 8
    assert c["labels_before"] == {"n": 8, "clean": 6, "cot": 2, "rep": 1, "con": 0, "pr": 0}
    after = c["labels_after"]
    assert after["rep"] / after["n"] >= 0.25 or after["rep"] == 3  # rep: 1 row, at most 2 extra copies
    assert after["cot"] >= 2 and after["n"] > 8
    out = capsys.readouterr().out
    for step in ("read", "consensus", "joined", "labels before", "labels after", "written"):
        assert f"[build_corpus] {step}" in out
    direct = [json.loads(x) for x in (tmp_path / "corpus" / "sft_direct.jsonl").read_text().splitlines()]
    thinking = [json.loads(x) for x in (tmp_path / "corpus" / "sft_thinking.jsonl").read_text().splitlines()]
    assert len(direct) == len(thinking) == after["n"]
    for d, t in zip(direct, thinking):
        assert [m["role"] for m in d["messages"]] == ["system", "user", "assistant"]
        assert parse_label_output(d["messages"][-1]["content"]) == d["labels"]
        assert parse_label_output(t["messages"][-1]["content"]) == t["labels"]
        assert t["messages"][-1]["content"].startswith("<analysis>")
    s6 = next(t for t in thinking if t["sample_id"] == "s6")
    assert 'cot: present, e.g. "Wait,"' in s6["messages"][-1]["content"]
    assert {d["sample_id"] for d in direct} == {f"s{i}" for i in (0, 1, 2, 3, 4, 5, 6, 7)}


def test_holdout_and_cli_errors(tmp_path):
    run = make_run(tmp_path)
    c = build_corpus(str(run), list(JUDGES), str(tmp_path / "c2"), holdout=0.5, seed=1)
    assert c["split"]["train"] + c["split"]["heldout"] == 8 and c["split"]["heldout"] > 0
    held = [json.loads(x) for x in (tmp_path / "c2" / "heldout.jsonl").read_text().splitlines()]
    assert len(held) == c["split"]["heldout"] and set(held[0]["labels"]) == {"cot", "rep", "con", "pr"}
    assert main(["--run", str(run), "--out", str(tmp_path / "c3"), "--judges", "a@1", "b@1", "c@1"]) == 2
    with pytest.raises(ValueError, match="exactly 3"):
        build_corpus(str(run), list(JUDGES[:2]), str(tmp_path / "c4"))


def test_offline_corpus_written_without_judges(tmp_path, shared_data):
    """--offline: every record in offline.jsonl; SFT records only where all four labels are known; the
    47 hand-labelled responses are in none of them."""
    from howeval.judges.patternrm.corpus import heldout_keys
    from howeval.judges.patternrm.format import parse_label_output
    from howeval.ray_jobs.build_corpus import main

    assert main(["--offline", "--out", str(tmp_path), "--targets", "direct"]) == 0
    recs = [json.loads(x) for x in (tmp_path / "offline.jsonl").read_text().splitlines()]
    sft = [json.loads(x) for x in (tmp_path / "sft_direct.jsonl").read_text().splitlines()]
    counts = json.loads((tmp_path / "counts.json").read_text())
    assert counts["written"] == {"offline.jsonl": len(recs), "sft_direct.jsonl": len(sft)} and 0 < len(sft) < len(recs)
    # unknown labels: the carriers' own, or masked by the cell balance (corpus recipe v3, listed in balanced_out)
    assert all(v is not None or k in r["balanced_out"] for r in recs if r["origin"] != "model_response"
               and r["origin"] != "gsm8k_wrong_chain" for k, v in r["labels"].items())
    for s in sft[:50]:
        assert parse_label_output(s["messages"][-1]["content"]) == s["labels"]
    held = {k.split("|")[0] + ":" + k.split("|")[1] + ":" + k.split("|")[2] for k in heldout_keys("howeval/judges/patternrm/data/human_labels.jsonl")}
    assert not held & {r["uid"] for r in recs}
    for label in ("cot", "rep", "con", "pr"):
        assert counts["corpus"]["labels"][label]["pos"] > 100
