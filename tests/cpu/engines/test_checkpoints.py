"""Tests for howeval.engines.checkpoints: the embedded model's fp32 copy made at install, looked up before the
cache, and converted on first use only when neither has it (issue 32). The conversion itself is stubbed."""
from __future__ import annotations

from pathlib import Path

import pytest

import howeval.engines.checkpoints as ck


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An empty install folder and an empty cache; the conversion writes a marker and counts its calls."""
    calls = []

    def convert(tmp: Path) -> None:
        calls.append(tmp)
        (tmp / "config.json").write_text('{"model_type": "llama"}')

    monkeypatch.setattr(ck, "EMBEDDED_TARGET", tmp_path / "venv" / "share" / "howeval" / "embedded")
    monkeypatch.setenv("HOWEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(ck, "_convert_embedded", convert)
    return tmp_path, calls


def test_install_converts_once_into_the_venv_and_first_use_then_converts_nothing(places, capsys):
    tmp_path, calls = places
    target = tmp_path / "venv" / "share" / "howeval" / "embedded"
    assert ck.main(["--target", str(target)]) == 0
    out = target / ck.EMBEDDED_FP32
    assert (out / "config.json").exists() and len(calls) == 1
    assert capsys.readouterr().out.startswith(f"embedded model (fp32): {out} (")
    assert ck.main(["--target", str(target)]) == 0 and len(calls) == 1  # a second make install keeps it
    assert ck.embedded_checkpoint() == str(out) and len(calls) == 1  # first use: the installed copy, no conversion
    assert not (tmp_path / "cache").exists()
    assert [p.name for p in target.iterdir()] == [ck.EMBEDDED_FP32]  # no temp folder left beside it


def test_without_the_installed_copy_first_use_converts_into_the_cache_once(places):
    tmp_path, calls = places
    first = ck.embedded_checkpoint()
    assert first == str(tmp_path / "cache" / ck.EMBEDDED_FP32) and len(calls) == 1
    assert ck.embedded_checkpoint() == first and len(calls) == 1


def test_a_failed_conversion_leaves_no_half_written_copy(places, monkeypatch):
    tmp_path, _ = places

    def broken(tmp: Path) -> None:
        (tmp / "model.safetensors").write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(ck, "_convert_embedded", broken)
    target = tmp_path / "t"
    with pytest.raises(OSError, match="disk full"):
        ck.install_embedded(target)
    assert list(target.iterdir()) == []


def test_a_build_that_writes_no_config_raises_and_caches_nothing(tmp_path):
    out = tmp_path / "m"
    with pytest.raises(RuntimeError, match=r"wrote no config.json \(files: \['tokenizer.json'\]\)"):
        ck.build_once(out, lambda tmp: (tmp / "tokenizer.json").write_text("{}"))
    assert list(tmp_path.iterdir()) == []


def test_an_incomplete_cached_copy_is_replaced_by_a_complete_build(tmp_path):
    """What transformers 5 left on a rank other than 0 before save_model_here: the tokenizer and no model.
    Such a folder made every later build fail with "Directory not empty"; it is now set aside and replaced."""
    out = tmp_path / "m"
    out.mkdir()
    (out / "tokenizer.json").write_text("{}")

    def build(tmp: Path) -> None:
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_text("w")

    assert ck.build_once(out, build) == str(out)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temp or stale folder left beside it


def test_every_rank_of_a_process_group_saves_its_own_copy(tmp_path):
    """Two gloo ranks (``torch.multiprocessing.spawn``, tests/rank_save_worker.py). transformers 5's
    ``save_pretrained`` writes the model on rank 0 only; ``save_model_here`` writes it on both, so a rank that
    builds a node-local checkpoint (the tiny LM, the embedded fp32 copy) gets a whole one."""
    import rank_save_worker as w
    import torch.multiprocessing as mp

    mp.spawn(w.worker, args=(2, str(tmp_path / "pg_init"), str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        assert {"config.json", "model.safetensors"} <= {p.name for p in (tmp_path / f"here-{rank}").iterdir()}
    assert (tmp_path / "plain-0" / "model.safetensors").exists()
    assert not (tmp_path / "plain-1" / "model.safetensors").exists()  # the behaviour save_model_here exists for
