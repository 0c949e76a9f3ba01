"""The import contracts of pyproject.toml (issue 30) catch what they forbid.

Each test runs ``lint-imports`` with the project's own pyproject.toml (the contracts as written, not a copy)
on a small package tree in ``tmp_path`` that mirrors the house's names: the clean tree keeps every contract,
and one planted import breaks the contract under test. A contract added to pyproject.toml without a planted
violation here fails ``test_every_contract_has_a_planted_violation``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"

CORE_LAYERS = ["training", "rewards", "report", "benchmarks", "judges", "engines", "embed", "config", "metrics",
               "store", "parsing", "records"]
SHARED_WIRING = ["common", "plan", "execute", "progress", "stages", "outcome", "placement"]

# A tree that keeps every contract: one job (sweep) uses all the shared wiring (each ignore_imports line of the
# independence contract must match an import), another (judge) uses some; Ray appears only where it may.
CLEAN_TREE: dict[str, str] = {
    **{f"howeval/{m}.py": "" for m in CORE_LAYERS},
    "howeval/__init__.py": "",
    "howeval/judges.py": "import howeval.parsing\n",
    "actors/__init__.py": "",
    "actors/policy.py": "import howeval.engines\n",
    "reward_server/__init__.py": "",
    "reward_server/app.py": "import ray\nimport howeval.rewards\n",
    "ray_jobs/__init__.py": "",
    **{f"ray_jobs/{m}.py": "" for m in SHARED_WIRING},
    "ray_jobs/common.py": "import ray\nimport ray_jobs.execute\n",
    "ray_jobs/plan.py": "import actors.policy\n",
    "ray_jobs/execute.py": "import ray\nimport ray_jobs.plan\nimport ray_jobs.progress\n",
    "ray_jobs/stages.py": "import ray_jobs.execute\nimport ray_jobs.plan\n",
    "ray_jobs/sweep.py": "".join(f"import ray_jobs.{m}\n" for m in SHARED_WIRING) + "import howeval.report\n",
    "ray_jobs/judge.py": "import ray_jobs.common\nimport ray_jobs.stages\nimport actors.policy\n",
}

# contract id -> (what the planted import does, {file: content to append})
PLANTED: dict[str, list[tuple[str, dict[str, str]]]] = {
    "outer-layers": [
        ("the reward server imports an actor", {"reward_server/app.py": "import actors.policy\n"}),
        ("an actor imports the reward server", {"actors/policy.py": "import reward_server.app\n"}),
    ],
    "core-ray-free": [
        ("the core imports ray", {"howeval/records.py": "import ray\n"}),
        ("the core imports an actor", {"howeval/judges.py": "import actors.policy\n"}),
    ],
    "actors-ray-free": [
        ("an actor imports ray", {"actors/policy.py": "import ray\n"}),
        ("the pipeline declarations import ray", {"ray_jobs/plan.py": "import ray\n"}),
        ("an actor reaches ray through a job's wiring", {"actors/policy.py": "import ray_jobs.common\n"}),
    ],
    "no-job-imports": [
        ("the reward server imports a job", {"reward_server/app.py": "import ray_jobs.sweep\n"}),
        ("an actor imports the jobs' wiring", {"actors/policy.py": "import ray_jobs.progress\n"}),
    ],
    "jobs-independent": [
        ("a job imports another", {"ray_jobs/judge.py": "import ray_jobs.sweep\n"}),
        ("a new job, listed nowhere, imports another", {"ray_jobs/train_new.py": "import ray_jobs.judge\n"}),
        ("the shared wiring imports a job", {"ray_jobs/stages.py": "import ray_jobs.judge\n"}),
    ],
    "core-layers": [
        ("a lower core layer imports a higher one", {"howeval/parsing.py": "import howeval.judges\n"}),
        ("the config imports the engines", {"howeval/config.py": "import howeval.engines\n"}),
    ],
}


def _contract_ids() -> list[str]:
    with PYPROJECT.open("rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    return [c["id"] for c in contracts]


def _write_tree(root: Path, extra: dict[str, str]) -> None:
    for rel, text in CLEAN_TREE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for rel, text in extra.items():
        p = root / rel
        p.write_text((p.read_text() if p.exists() else "") + text)


def _lint(root: Path, contract: str | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` on the tree under ``root`` (only it on the path: the real packages stay out)."""
    args = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--config", str(PYPROJECT), "--no-cache"]
    if contract:
        args += ["--contract", contract]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(root)}
    return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_contract_has_a_planted_violation():
    assert sorted(_contract_ids()) == sorted(PLANTED)


def test_the_clean_tree_keeps_every_contract(tmp_path):
    _write_tree(tmp_path, {})
    r = _lint(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Contracts: {len(PLANTED)} kept, 0 broken." in r.stdout


@pytest.mark.parametrize("contract,why,extra", [(c, why, extra) for c, cases in PLANTED.items() for why, extra in cases],
                         ids=[f"{c}: {why}" for c, cases in PLANTED.items() for why, _ in cases])
def test_a_planted_import_breaks_the_contract(tmp_path, contract, why, extra):
    _write_tree(tmp_path, extra)
    r = _lint(tmp_path, contract)
    assert r.returncode == 1, f"{why}: not caught\n{r.stdout}{r.stderr}"
    assert "Contracts: 0 kept, 1 broken." in r.stdout, r.stdout + r.stderr
    planted = next(iter(extra.values())).split()[-1]  # the imported module shows in the broken chain
    assert planted in r.stdout, r.stdout


def test_the_library_names_no_path_in_the_test_tree():
    """The library never reads ``tests/`` (issue 30: the PatternRM head once found its hand labels in
    ``tests/fixtures``; they are package data now): no source file spells a path into it."""
    import re

    # a path segment or a path inside a string literal; prose in docstrings (``tests/cpu/...``) is not a path
    pattern = re.compile(r"""["'](?:tests|fixtures)["']|["'][^"'\s`]*tests/""")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for pkg in ("howeval", "actors", "ray_jobs", "reward_server")
                 for p in sorted((ROOT / pkg).rglob("*.py"))
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert offenders == []
    assert pattern.search('REPO / "tests" / "fixtures" / "x.jsonl"')  # what it would catch
    assert pattern.search('open("../tests/fixtures/x.jsonl")')
    assert not pattern.search("checked by ``tests/cpu/engines/test_hf_options.py``")
