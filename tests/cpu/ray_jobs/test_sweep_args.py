"""The sweep's command line: dot-list overrides (OmegaConf / Hydra style) validated with the file, recorded in
run_config.json and compared by the stale-resume check; no Ray is started."""
from __future__ import annotations

import json

import pytest
import yaml

from howeval.config import ConfigError, apply_dotlist, refuse_stale_resume
from howeval.ray_jobs.sweep import config_from_args, parse_args


def _config(tmp_path):
    (tmp_path / "m.jsonl").write_text("")
    cfg = {"output_uri": str(tmp_path / "run"), "benchmarks": [{"path": "m.jsonl"}],
           "models": [{"name": "smol", "engine": "hf", "modes": {"NT": {}, "T": {"max_tokens": 64}},
                       "sampling": {"max_tokens": 32, "temperature": 0.0}}]}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_positional_and_set_overrides_apply_in_order_and_are_recorded(tmp_path, monkeypatch):
    p = _config(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = parse_args(["--config", str(p), "models.0.sampling.temperature=0.7", "--limit", "3",
                       "--set", "models.0.options.attn_implementation=sdpa", "models.0.modes.T.max_tokens=null",
                       "crystal.tau=0.3", "benchmarks.0.name=demo"])
    cfg = config_from_args(args)
    m = cfg.models[0]
    assert (m.sampling.temperature, m.options, m.modes["T"].max_tokens) == (0.7, {"attn_implementation": "sdpa"}, None)
    assert (cfg.crystal.tau, cfg.crystal.alpha, cfg.benchmarks[0].name, cfg.benchmarks[0].limit) == (0.3, 0.5, "demo", 3)
    assert cfg.benchmarks[0].path == str(tmp_path / "m.jsonl")
    assert cfg.overrides == ["models.0.sampling.temperature=0.7", "models.0.modes.T.max_tokens=null", "crystal.tau=0.3",
                             "benchmarks.0.name=demo", "models.0.options.attn_implementation=sdpa", "--limit=3"]
    assert json.loads(cfg.model_dump_json())["overrides"] == cfg.overrides  # what run_config.json records


def test_override_errors_name_the_key_and_the_fix(tmp_path):
    p = _config(tmp_path)

    def err(*items):
        with pytest.raises(ConfigError) as e:
            config_from_args(parse_args(["--config", str(p), *items]))
        return str(e.value)

    msg = err("models.0.sampling.temperture=0.7")
    assert msg.splitlines() == [
        f"{p} with overrides models.0.sampling.temperture=0.7: 1 config error(s):",
        "  models.0.sampling.temperture: unknown key (got 0.7); did you mean 'temperature'? Accepted: max_tokens, "
        "temperature, top_p, top_k, min_p, presence_penalty, repetition_penalty, seed"]
    assert err("models.2.name=x") == ("override 'models.2.name=x': models is a list of 1 item(s); '2' is not an index "
                                      "of it (0..0)")
    assert err("models.0.name.x=1") == "override 'models.0.name.x=1': models.0.name is str 'smol', not a mapping; it has no key 'x'"
    assert err("models.0.sampling.temperature") == ("override 'models.0.sampling.temperature': expected key.path=value "
                                                    "(e.g. models.0.sampling.temperature=0.7, or ~key to delete)")
    assert err("~models.0.options.device_map") == ("override '~models.0.options.device_map': nothing to delete, "
                                                   "models.0 has no key 'options'")
    assert "models.0.sampling.top_p: Input should be less than or equal to 1 (got 2)" in err("models.0.sampling.top_p=2")


def test_apply_dotlist_reads_values_as_yaml_and_deletes():
    raw = {"a": {"b": 1, "c": [1, 2]}}
    assert apply_dotlist(raw, ["a.b=true", "a.c.1=[x, 2]", "d.e={f: 1}", "~a.c", "g=", "+h=0.5"]) == {
        "a": {"b": True}, "d": {"e": {"f": 1}}, "g": "", "h": 0.5}
    assert raw == {"a": {"b": 1, "c": [1, 2]}}  # not changed in place


def test_stale_resume_names_the_override_that_changed_a_setting_and_the_one_the_stored_run_had(tmp_path):
    p = _config(tmp_path)
    stored = config_from_args(parse_args(["--config", str(p), "models.0.sampling.temperature=0.7", "--max-tokens=8"]))
    out = tmp_path / "run"
    (out / "responses" / "smol").mkdir(parents=True)
    (out / "responses" / "smol" / "part.parquet").write_bytes(b"x")
    (out / "run_config.json").write_text(stored.model_dump_json())
    refuse_stale_resume(config_from_args(parse_args(["--config", str(p), "models.0.sampling.temperature=0.7",
                                                     "--max-tokens", "8"])))  # the same command resumes
    with pytest.raises(ConfigError) as e:
        refuse_stale_resume(config_from_args(parse_args(["--config", str(p), "models.0.sampling.top_p=0.9"])))
    lines = str(e.value).splitlines()
    assert lines[1:5] == [
        "  models.0.modes.T.max_tokens: stored None, now 64 (the stored run set it on its command line: "
        "--max-tokens=8; give it again to resume)",
        "  models.0.sampling.max_tokens: stored 8, now 32 (the stored run set it on its command line: "
        "--max-tokens=8; give it again to resume)",
        "  models.0.sampling.temperature: stored 0.7, now 0.0 (the stored run set it on its command line: "
        "models.0.sampling.temperature=0.7; give it again to resume)",
        "  models.0.sampling.top_p: stored None, now 0.9 (now set on the command line: models.0.sampling.top_p=0.9)"]


def test_every_row_bad_writes_bad_rows_json_and_prints_why(tmp_path, capsys):
    from howeval.ray_jobs.sweep import main

    p = _config(tmp_path)
    rows = [{"uid": "a", "question": "q?", "answer": "", "answer_type": "integer_number", "family": "VG"},
            {"uid": "b", "question": "q?", "answer_type": "integer_number", "family": "VG"},
            {"uid": "c", "question": "q?", "answer": "1", "answer_type": "number", "family": "VG"}]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["--config", str(p), "--skip-bad-rows"]) == 2  # stops before Ray starts
    err = capsys.readouterr().err.splitlines()
    out = tmp_path / "run"
    assert err[0] == "error: no samples to run: all 3 benchmark row(s) were bad and skipped (--skip-bad-rows):"
    assert err[1] == "  field 'answer': missing or empty: 2 row(s), e.g. m.jsonl:1 (uid 'a'), m.jsonl:2 (uid 'b')"
    assert err[2].startswith("  field 'answer_type': unknown value 'number'; known: [") and err[2].endswith("m.jsonl:3 (uid 'c')")
    assert err[3] == f"Every row with its reason: {out}/bad_rows.json"
    bad = json.loads((out / "bad_rows.json").read_text())
    assert [(b["uid"], b["line"], b["field"]) for b in bad] == [("a", 1, "answer"), ("b", 2, "answer"), ("c", 3, "answer_type")]
    assert not (out / "run_config.json").exists()
