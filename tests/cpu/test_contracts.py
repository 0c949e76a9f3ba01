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
SHARED_WIRING = ["common", "outcome"]

# A tree that keeps every contract: one job (sweep) uses all the shared wiring (each ignore_imports line of the
# independence contracts must match an import), another (judge) uses some; Ray appears only where it may; the
# runtime reads the plug-ins' declarations and registry only, and each plug-in only those.
CLEAN_TREE: dict[str, str] = {
    **{f"howeval/{m}.py": "" for m in CORE_LAYERS},
    "howeval/__init__.py": "",
    "howeval/judges.py": "import howeval.parsing\n",
    "howeval/actors/__init__.py": "",
    "howeval/actors/policy.py": "import howeval.engines\n",
    "howeval/reward_server/__init__.py": "",
    "howeval/reward_server/app.py": "import ray\nimport howeval.rewards\n",
    "howeval/plugins/__init__.py": "",
    "howeval/plugins/pipeline.py": "",
    "howeval/plugins/registry.py": "import howeval.plugins.pipeline\n",
    "howeval/plugins/sweepcore.py": "import howeval.plugins.pipeline\nimport howeval.plugins.registry\nimport howeval.actors.policy\n",
    "howeval/plugins/steps.py": "import howeval.plugins.pipeline\nimport howeval.plugins.registry\nimport howeval.report\n",
    "howeval/runtime/__init__.py": "",
    "howeval/runtime/execute.py": "import ray\nimport howeval.plugins.pipeline\nimport howeval.runtime.progress\n",
    "howeval/runtime/progress.py": "import howeval.report\n",
    "howeval/runtime/run.py": "import howeval.plugins.pipeline\nimport howeval.plugins.registry\nimport howeval.runtime.execute\n",
    "howeval/ray_jobs/__init__.py": "",
    **{f"howeval/ray_jobs/{m}.py": "" for m in SHARED_WIRING},
    "howeval/ray_jobs/common.py": "import howeval.runtime.run\nimport howeval.plugins.sweepcore\n",
    "howeval/ray_jobs/sweep.py": "".join(f"import howeval.ray_jobs.{m}\n" for m in SHARED_WIRING) + "import howeval.runtime.run\nimport howeval.plugins\n",
    "howeval/ray_jobs/judge.py": "import howeval.ray_jobs.common\nimport howeval.runtime.cluster\n",
    "howeval/runtime/cluster.py": "import ray\n",
}

# contract id -> (what the planted import does, {file: content to append})
PLANTED: dict[str, list[tuple[str, dict[str, str]]]] = {
    "outer-layers": [
        ("the reward server imports an actor", {"howeval/reward_server/app.py": "import howeval.actors.policy\n"}),
        ("an actor imports the reward server", {"howeval/actors/policy.py": "import howeval.reward_server.app\n"}),
        ("a plug-in imports the runtime", {"howeval/plugins/steps.py": "import howeval.runtime.execute\n"}),
        ("the core imports a job", {"howeval/report.py": "import howeval.ray_jobs.sweep\n"}),
    ],
    "core-ray-free": [
        ("the core imports ray", {"howeval/records.py": "import ray\n"}),
        ("the core imports an actor", {"howeval/judges.py": "import howeval.actors.policy\n"}),
        ("the core imports a plug-in", {"howeval/judges.py": "import howeval.plugins.registry\n"}),
    ],
    "actors-ray-free": [
        ("an actor imports ray", {"howeval/actors/policy.py": "import ray\n"}),
        ("the pipeline declarations import ray", {"howeval/plugins/pipeline.py": "import ray\n"}),
        ("a new plug-in imports ray", {"howeval/plugins/new_bench.py": "import ray\n"}),
        ("an actor reaches ray through the runtime", {"howeval/actors/policy.py": "import howeval.runtime.cluster\n"}),
    ],
    "no-job-imports": [
        ("the reward server imports a job", {"howeval/reward_server/app.py": "import howeval.ray_jobs.sweep\n"}),
        ("the runtime imports the jobs' wiring", {"howeval/runtime/run.py": "import howeval.ray_jobs.common\n"}),
    ],
    "runtime-knows-no-benchmark": [
        ("the runtime imports a benchmark plug-in", {"howeval/runtime/run.py": "import howeval.plugins.sweepcore\n"}),
        ("the runtime imports the plug-ins' package (and so every registration)", {"howeval/runtime/execute.py": "import howeval.plugins\n"}),
    ],
    "benchmarks-independent": [
        ("a plug-in imports another", {"howeval/plugins/steps.py": "import howeval.plugins.sweepcore\n"}),
        ("a new plug-in, listed nowhere, imports another", {"howeval/plugins/new_bench.py": "import howeval.plugins.steps\n"}),
    ],
    "jobs-independent": [
        ("a job imports another", {"howeval/ray_jobs/judge.py": "import howeval.ray_jobs.sweep\n"}),
        ("a new job, listed nowhere, imports another", {"howeval/ray_jobs/train_new.py": "import howeval.ray_jobs.judge\n"}),
        ("the shared wiring imports a job", {"howeval/ray_jobs/common.py": "import howeval.ray_jobs.judge\n"}),
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
    offenders = [f"{p.relative_to(ROOT)}:{i}" for pkg in ("howeval",)
                 for p in sorted((ROOT / pkg).rglob("*.py"))
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert offenders == []
    assert pattern.search('REPO / "tests" / "fixtures" / "x.jsonl"')  # what it would catch
    assert pattern.search('open("../tests/fixtures/x.jsonl")')
    assert not pattern.search("checked by ``tests/cpu/engines/test_hf_options.py``")
