"""Job: calibrate pattern judges against human labels (per-label precision, recall, F1, macro), or draw a calibration set.

    python -m howeval.ray_jobs.calibrate --labels human.jsonl [--run DIR | --predictions preds.jsonl | --judges YAML]
                                 [--responses DIR_OR_FILE ...] [--manifest FILE] --out DIR
    python -m howeval.ray_jobs.calibrate --sample N (--run DIR | --predictions preds.jsonl) [--ratio 0.7]
                                 [--target-trigger 0.7] [--seed 0] --out DIR

Predictions come from one of: a run's judgments Parquet (``--run``: every judge id in it; human rows keyed
``sample_id``/``config``/``mode``), a JSONL of predictions (``--predictions``: rows with the item key,
``judge`` and the labels, ``judge_error`` allowed), or judges run here in-process (default: the rule
judge; ``--judges`` YAML with a ``judges:`` block or a ``pattern:`` list selects others). In-process
judges need the response texts: a ``response`` field in the label row, or the recorded-response files
given by ``--responses`` (default ``../shared/data/responses``), matched by ``source``/``id``/``model``;
the question (for option letters) comes from ``--manifest`` by the row's ``uid``.

Writes ``<out>/calibration.json`` and ``<out>/calibration.md`` (or ``calibration_set.jsonl`` and
``calibration_set.json`` with ``--sample``). No Ray cluster is needed: the work is small.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import yaml

from howeval.config import ConfigError, JudgesConfig, RulesJudgeConfig, validate
from howeval.judges.calibration import (
    calibration_scores,
    calibration_table,
    item_key,
    labels_of,
    load_human,
    predictions_from_jsonl,
    sample_calibration_set,
)
from howeval.judges.verdict import PatternVerdict, make_verdict
from howeval.records import JUDGMENT_SCHEMA
from howeval.store import join, read_jsonl, read_table, write_json, write_text

log = logging.getLogger("howeval")

DEFAULT_RESPONSES = "../shared/data/responses"
DEFAULT_MANIFEST = "../shared/data/manifest.jsonl"


def predictions_from_run(run: str) -> dict[str, dict[str, dict | None]]:
    """judge id -> item key -> labels (None on judge_error) from ``<run>/judgments``; a success wins over an error."""
    table, _ = read_table(join(run, "judgments"), JUDGMENT_SCHEMA)
    out: dict[str, dict[str, dict | None]] = {}
    for j in table.to_pylist():
        preds = out.setdefault(j["judge"], {})
        k = item_key(j)
        labs = labels_of(j)
        if labs is not None or k not in preds:
            preds[k] = labs
    if not out:
        raise FileNotFoundError(f"no judgments under {join(run, 'judgments')}")
    return out


def recorded_texts(paths: list[str]) -> dict[str, str]:
    """item key (``source|id|model``) -> response text, from recorded-response JSONL files or folders of them."""
    files: list[Path] = []
    for p in paths:
        pp = Path(p)
        files += sorted(pp.glob("*.jsonl")) if pp.is_dir() else [pp]
    out = {}
    for f in files:
        for r in read_jsonl(str(f)):
            if "response" in r and r.get("id") is not None:
                out[item_key({"source": f.name, "id": r["id"], "model": r.get("model")})] = r["response"]
    return out


def judge_items(judges: JudgesConfig, items: list[dict]) -> dict[str, dict[str, dict | None]]:
    """Run each configured pattern judge in-process over ``items`` (``key``, ``question``, ``response``)."""
    from howeval.judges.pipeline import Judger, judge_id

    judger = Judger(judges)
    rows = [{"question": it.get("question") or "", "response": it["response"], "error": None, "truncated": False}
            for it in items]
    out = {}
    for jc in judger.judge_cfgs:
        verdicts = judger.pattern_rows(jc.name, rows)
        out[judge_id(jc)] = {it["key"]: dict(v.labels) if v is not None and v.ok else None
                             for it, v in zip(items, verdicts)}
    return out


def load_judges(path: str | None) -> JudgesConfig:
    """The judges to run in-process: a YAML with ``judges:`` or ``pattern:``; default the rule judge."""
    if path is None:
        return JudgesConfig(pattern=[RulesJudgeConfig(name="rules")])
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    doc = doc.get("judges", doc) if isinstance(doc, dict) else doc
    return validate(JudgesConfig, doc, path)


def calibrate(labels: str, out: str, run: str | None = None, predictions: str | None = None,
              judges: str | None = None, responses: list[str] | None = None, manifest: str | None = DEFAULT_MANIFEST) -> dict:
    """Score judges against the human labels in ``labels``; write ``calibration.json`` / ``.md`` under ``out``."""
    human, rows = load_human(labels)
    source: dict = {"labels": labels}
    if run:
        preds = predictions_from_run(run)
        source["run"] = run
    elif predictions:
        preds = predictions_from_jsonl(predictions)
        source["predictions"] = predictions
    else:
        # recorded texts only for label rows without an inline ``response`` (or when --responses is given)
        need_texts = responses or any("response" not in r for r in rows.values())
        if need_texts and not responses and not Path(DEFAULT_RESPONSES).exists():
            raise FileNotFoundError(f"labelled items without an inline `response` need the recorded responses: "
                                    f"{DEFAULT_RESPONSES} not found here; give --responses DIR_OR_FILE")
        texts = recorded_texts(responses or [DEFAULT_RESPONSES]) if need_texts else {}
        questions = {}
        if manifest and Path(manifest).exists():
            questions = {r["uid"]: r.get("question") for r in read_jsonl(manifest)}
        items, unresolved = [], []
        for k, r in rows.items():
            text = r.get("response", texts.get(k))
            if text is None:
                unresolved.append(k)
                continue
            items.append({"key": k, "response": text, "question": questions.get(r.get("uid"), r.get("question"))})
        if unresolved:
            raise ValueError(f"{len(unresolved)} labelled item(s) have no response text (give --responses): {unresolved[:5]}")
        jc = load_judges(judges)
        preds = judge_items(jc, items)
        source.update({"judges": [j.model_dump() for j in jc.pattern], "responses": responses or [DEFAULT_RESPONSES]})
    scores = calibration_scores(human, preds)
    scores["inputs"] = source
    write_json(join(out, "calibration.json"), json.dumps(scores, indent=2, sort_keys=True))
    write_text(join(out, "calibration.md"), "# Judge calibration\n\n" + calibration_table(scores) + "\n")
    return scores


def _verdict(name: str, labs: dict | None) -> PatternVerdict:
    if labs is None:
        return PatternVerdict.failed(name, "?", "judge_error")
    return make_verdict(labs, None, name, "?")


def sample(n: int, out: str, run: str | None = None, predictions: str | None = None, ratio: float = 0.7,
           target_trigger: float = 0.7, seed: int = 0) -> dict:
    """Draw a calibration set from several judges' predictions; write ``calibration_set.jsonl`` / ``.json``."""
    preds = predictions_from_run(run) if run else predictions_from_jsonl(predictions)  # type: ignore[arg-type]
    if len(preds) < 2:
        raise ValueError(f"the sampler needs at least 2 judges to tell consensus from dispute, got {sorted(preds)}")
    by_item: dict[str, dict[str, PatternVerdict]] = {}
    for judge, items in preds.items():
        for k, labs in items.items():
            by_item.setdefault(k, {})[judge] = _verdict(judge, labs)
    res = sample_calibration_set(by_item, n, consensus_ratio=ratio, target_trigger=target_trigger, seed=seed)
    write_text(join(out, "calibration_set.jsonl"), "".join(json.dumps(it) + "\n" for it in res["items"]))
    summary = {k: v for k, v in res.items() if k != "items"} | {"judges": sorted(preds)}
    write_json(join(out, "calibration_set.json"), json.dumps(summary, indent=2))
    return res


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.calibrate", description=__doc__.split("\n")[0])
    p.add_argument("--labels", help="JSONL of human 4-label vectors (scoring mode)")
    p.add_argument("--sample", type=int, metavar="N", help="draw a calibration set of N items instead of scoring")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--run", help="a run's output URI: judge predictions from its judgments Parquet")
    src.add_argument("--predictions", help="JSONL of judge predictions")
    src.add_argument("--judges", help="YAML of judges to run in-process (default: the rule judge)")
    p.add_argument("--responses", nargs="+", help=f"recorded-response JSONL files or folders (default {DEFAULT_RESPONSES})")
    p.add_argument("--manifest", default=DEFAULT_MANIFEST, help="manifest with the questions, matched by the label row's uid")
    p.add_argument("--ratio", type=float, default=0.7, help="consensus share of the calibration set (--sample)")
    p.add_argument("--target-trigger", type=float, default=0.7, help="predicted trigger rate to aim for (--sample)")
    p.add_argument("--seed", type=int, default=0, help="seed of the calibration-set draw (--sample; default 0)")
    p.add_argument("--out", required=True, help="output folder")
    args = p.parse_args(argv)
    try:
        if args.sample is not None:
            if not (args.run or args.predictions):
                p.error("--sample needs --run or --predictions (several judges' labels)")
            res = sample(args.sample, args.out, args.run, args.predictions, args.ratio, args.target_trigger, args.seed)
            print(json.dumps({k: res[k] for k in ("n", "n_consensus", "n_disputed", "achieved_ratio",
                                                   "predicted_trigger_rate", "shortfall")}))
            return 0
        if not args.labels:
            p.error("give --labels (scoring) or --sample N (sampling)")
        scores = calibrate(args.labels, args.out, args.run, args.predictions, args.judges, args.responses, args.manifest)
    except (ConfigError, FileNotFoundError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(calibration_table(scores))
    print(f"wrote {join(args.out, 'calibration.json')} and calibration.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
