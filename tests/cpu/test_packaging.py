"""The installed distribution is one top-level package, ``howeval`` (issue 40).

PyPI has packages named ``actors`` and ``runtime``; when this project put its house (jobs, runtime, plug-ins,
actors, reward server) at the top of site-packages, installing it beside either overwrote one of the two. The
test builds the real wheel (setuptools, from a copy of the sources so no ``build/`` is left in the checkout) and
lists what it would put at the top of site-packages.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_installs_one_top_level_package(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "howeval", src / "howeval", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [wheel] = out.glob("howeval-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names} - {n.split("/")[0] for n in names if ".dist-info/" in n}
    assert top == {"howeval"}
    # the house is inside it, with the entry points' modules
    for module in ("howeval/ray_jobs/sweep.py", "howeval/runtime/execute.py", "howeval/plugins/registry.py",
                   "howeval/actors/policy.py", "howeval/reward_server/app.py"):
        assert module in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "howeval-sweep = howeval.ray_jobs.sweep:main" in text
