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
