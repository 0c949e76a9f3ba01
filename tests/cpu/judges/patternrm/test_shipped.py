"""The served PatternRM head ships inside the package: it loads and scores with no ../shared and no cache."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

SCRIPT = r"""
import json
from howeval.judges.patternrm.model import PatternRM
from howeval.judges.patternrm.head import embedded_patternrm
rm = PatternRM()
rows = rm.label_batch([
    {"question": "What is 2 + 3?", "response": "2 + 3 = 5. The answer is 5."},
    {"question": "What is 2 + 3?", "response": "The sum is 5. The sum is 5. The sum is 5. The sum is 5. The answer is 5. The answer is 5."},
])
print(json.dumps({"path": embedded_patternrm(), "version": rm.version, "rows": rows}))
"""


def test_default_patternrm_loads_and_scores_without_shared_data_or_cache(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOWEVAL_")}
    env.update({"HOWEVAL_SHARED_DATA": "/nonexistent", "HOME": str(home), "HOWEVAL_CACHE": str(home / ".cache" / "howeval"),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    pkg = REPO / "howeval" / "judges" / "patternrm" / "weights"
    assert Path(out["path"]).resolve().parent == pkg.resolve()
    clean, rep = out["rows"]
    assert clean["error"] is None and rep["error"] is None
    assert set(clean["labels"]) == {"cot", "rep", "con", "pr"}
    assert rep["probs"]["rep"] > clean["probs"]["rep"]  # literal repetition scores higher than none
    assert not list(home.rglob("*"))  # nothing was trained or cached under the empty HOME


def test_shipped_meta_states_provenance_and_is_small():
    from howeval.judges.patternrm.head import HEAD_VERSION, embedded_patternrm

    path = Path(embedded_patternrm())
    meta = json.loads((path / "meta.json").read_text())
    assert meta["head_version"] == HEAD_VERSION
    prov = meta["provenance"]
    assert prov["sources"] and all(isinstance(v, str) and v for v in prov["sources"].values())
    assert "recipe" in prov and "commit" in prov and "trained_utc" in prov
    assert sum(f.stat().st_size for f in path.iterdir()) < 400_000


def test_library_reads_no_test_fixtures():
    hits = [str(f) for f in (REPO / "howeval").rglob("*.py") if "tests/fixtures" in f.read_text(encoding="utf-8")]
    assert hits == []
    from howeval.judges.patternrm.head import HUMAN_LABELS_FILE, default_sources

    assert Path(default_sources()["human_labels"]) == HUMAN_LABELS_FILE and HUMAN_LABELS_FILE.is_file()
    rows = [json.loads(x) for x in HUMAN_LABELS_FILE.read_text().splitlines() if x.strip()]
    assert len(rows) == 47 and all(set(r["labels"]) == {"cot", "rep", "con", "pr"} for r in rows)
