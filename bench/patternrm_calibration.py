"""PatternRM calibration: the trained PatternRM and the rule judge against the 47 hand-labelled responses.

    python bench/patternrm_calibration.py [--path HEAD_DIR] [--out bench/results/patternrm_calibration.json]

Texts come from ``../shared/data/responses`` (``HOWEVAL_SHARED_DATA`` overrides the data root), matched by
``source``/``id``/``model`` to ``tests/fixtures/human_labels.jsonl``. None of these 47 responses is in the
training corpus (``howeval.judges.patternrm.corpus.load_bases`` leaves them out). Scores:
``howeval.judges.calibration.score_judge`` (per-label precision / recall / F1, macro over the labels the
humans marked at least once: cot has no positive here, so its recall and F1 are undefined).

Output: ``{"patternrm": {"labels": {label: {precision, recall, f1, ...}}, "trigger": {...}, "macro_f1": x},
"rules": {...}, "n_items": 47, "baselines": {"all_positive": {...}}}`` (``all_positive``: marks every label
on every response, the floor a real judge must beat: macro F1 rewards recall on this positive-heavy set).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]


def load_eval(data_root: Path) -> tuple[dict[str, dict], dict[str, str]]:
    from howeval.judges.calibration import item_key, labels_of
    from howeval.store import read_jsonl

    human, texts = {}, {}
    rows = read_jsonl(REPO / "tests" / "fixtures" / "human_labels.jsonl")
    recorded: dict[str, str] = {}
    for f in sorted((data_root / "responses").glob("*.jsonl")):
        for r in read_jsonl(f):
            recorded[item_key({"source": f.name, "id": r["id"], "model": r.get("model")})] = r["response"]
    for r in rows:
        k = item_key(r)
        human[k] = labels_of(r)
        texts[k] = recorded[k]
    return human, texts


def markdown_table(d: dict) -> str:
    """The README table: PatternRM beside the rule judge, per label, Trigger and macro F1."""
    f = lambda x: "–" if x is None else f"{x:.2f}"  # noqa: E731
    rows = ["| label | PatternRM P | R | F1 | rules P | R | F1 | human + | PatternRM + | rules + |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for k in ("cot", "rep", "con", "pr", "trigger"):
        a = d["patternrm"]["trigger"] if k == "trigger" else d["patternrm"]["labels"][k]
        b = d["rules"]["trigger"] if k == "trigger" else d["rules"]["labels"][k]
        rows.append(f"| {k} | {f(a['precision'])} | {f(a['recall'])} | {f(a['f1'])} | {f(b['precision'])} | "
                    f"{f(b['recall'])} | {f(b['f1'])} | {a['support']} | {a['predicted']} | {b['predicted']} |")
    rows.append(f"| **macro F1** (rep, con, pr) | | | **{d['patternrm']['macro_f1']:.3f}** | | | {d['rules']['macro_f1']:.3f} | | | |")
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--path", default=None, help="trained head folder (default: the embedded one, trained if absent)")
    p.add_argument("--out", default="bench/results/patternrm_calibration.json")
    a = p.parse_args()
    from howeval.judges.calibration import score_judge
    from howeval.judges.patternrm.model import PatternRM
    from howeval.records import LABELS

    data_root = Path(os.environ.get("HOWEVAL_SHARED_DATA") or REPO.parent / "shared" / "data")
    if not (data_root / "responses").is_dir():
        print(f"patternrm calibration: the 47 hand-labelled responses are read from {data_root}/responses, not found "
              "here: set HOWEVAL_SHARED_DATA=/path/to/shared/data", file=sys.stderr)
        return 2
    human, texts = load_eval(data_root)
    keys = sorted(human)
    items = [{"question": "", "response": texts[k]} for k in keys]
    preds: dict[str, dict] = {}
    versions: dict[str, str] = {}
    for name, kind, kw in (("patternrm", "trained", {"path": a.path}), ("rules", "rules", {})):
        rm = PatternRM(kind, **kw)
        t0 = time.perf_counter()
        res = rm.label_batch(items)
        print(f"{name}: {len(items)} responses labelled in {time.perf_counter() - t0:.2f} s ({rm.version})")
        preds[name] = {k: r["labels"] for k, r in zip(keys, res)}
        versions[name] = rm.version
    preds["all_positive"] = {k: {lab: True for lab in LABELS} for k in keys}
    out: dict = {"n_items": len(keys), "source": "tests/fixtures/human_labels.jsonl (47 hand-labelled real responses)"}
    for name, pr in preds.items():
        s = score_judge(human, pr)
        where = out.setdefault("baselines", {}) if name == "all_positive" else out
        where[name] = {"version": versions.get(name, "baseline"),
                     "labels": {k: {m: s["labels"][k][m] for m in ("precision", "recall", "f1", "support", "predicted")} for k in LABELS},
                     "trigger": {m: s["trigger"][m] for m in ("precision", "recall", "f1", "support", "predicted")},
                     "macro_f1": s["macro"]["f1"], "macro_n": s["macro"]["f1_n"]}
        print(f"{name:13s} macro F1 {s['macro']['f1']:.3f}  trigger recall {s['trigger']['recall']:.2f}  "
              + "  ".join(f"{k} P/R/F1 {s['labels'][k]['precision']}/{s['labels'][k]['recall']}/{s['labels'][k]['f1']}" for k in LABELS))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(markdown_table(out))
    print(f"-> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
