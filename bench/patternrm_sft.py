"""PatternRM in the paper's form: SmolLM2-135M SFT'd on the offline corpus, against the MiniLM head.

    python bench/patternrm_sft.py [--epochs 1] [--max-steps N] [--out bench/results/patternrm_sft.json]

Issue 13 asks for both forms' figures before choosing one. This script

1. builds the same offline corpus as ``make patternrm`` (``howeval.judges.patternrm.corpus``; the 47
   hand-labelled responses are left out) and keeps the records whose four labels are all known (the
   head's masked loss can use the others, an SFT target cannot);
2. writes them as direct-target SFT records (``howeval.judges.patternrm.format.sft_record``: system + user
   turn, assistant ``LABELS: cot=. rep=. con=. pr=.``);
3. trains the embedded SmolLM2-135M (fp32 copy) with ``ray_jobs.train_patternrm`` (TRL ``SFTTrainer``,
   CPU), ``--epochs`` over them (or ``--max-steps``);
4. labels the 47 hand-labelled responses with the checkpoint through ``PatternRM(kind="checkpoint")``
   (the reward server's parser; an unparseable answer is an error row, counted apart) and scores it
   with ``howeval.judges.calibration.score_judge``, next to the head's figures from
   ``bench/results/patternrm_calibration.json``.

Output JSON: corpus counts, training seconds, the SFT checkpoint's per-label P/R/F1, Trigger and
macro F1 over the answers it could parse, the same macro F1 over all 47 with an unparseable answer counted
as "no pattern", unparseable answers, labelling seconds, and the head's macro F1 for comparison.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimizer steps (-1 = epochs)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--max-length", type=int, default=384)
    p.add_argument("--max-chars", type=int, default=700,
                   help="keep at most this many characters of each response (head and tail), in training and in "
                        "labelling, so that the LABELS line fits in --max-length (TRL drops rows whose completion "
                        "is truncated away)")
    p.add_argument("--workdir", default=None, help="where the corpus and checkpoint go (default: a temp folder)")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "patternrm_sft.json"))
    a = p.parse_args(argv)

    import yaml
    from patternrm_calibration import load_eval

    from howeval.judges.calibration import score_judge
    from howeval.judges.patternrm.corpus import build_offline_corpus, corpus_counts, load_bases
    from howeval.judges.patternrm.format import sft_record
    from howeval.judges.patternrm.head import default_sources
    from howeval.judges.patternrm.model import PatternRM
    from howeval.records import LABELS
    from ray_jobs.train_patternrm import main as train_main

    src = default_sources()
    records = build_offline_corpus(load_bases(src["data_root"], src["human_labels"], src["demo_manifest"], seed=0), seed=0)
    full = [r for r in records if all(r["labels"][k] is not None for k in LABELS)]
    work = Path(a.workdir or tempfile.mkdtemp(prefix="patternrm-sft-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "sft_direct.jsonl"
    with corpus.open("w") as f:
        for r in full:
            f.write(json.dumps(sft_record(r["question"], r["response"], {k: bool(r["labels"][k]) for k in LABELS},
                                          max_chars=a.max_chars)) + "\n")
    cfg = {"model": None, "corpus": str(corpus), "output_dir": str(work / "run"),
           "sft": {"use_cpu": True, "num_train_epochs": a.epochs, "max_steps": a.max_steps,
                   "per_device_train_batch_size": a.batch_size, "learning_rate": a.lr, "max_length": a.max_length,
                   "logging_steps": 10, "save_strategy": "no", "report_to": "none", "bf16": False,
                   "dataloader_num_workers": 0, "seed": 0, "lr_scheduler_type": "cosine", "warmup_steps": 5}}
    (work / "sft.yaml").write_text(yaml.safe_dump(cfg))
    print(f"[sft] {len(full)} of {len(records)} corpus records have all four labels -> {corpus}", flush=True)
    t0 = time.perf_counter()
    rc = train_main(["--config", str(work / "sft.yaml")])
    train_s = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"train_patternrm exited {rc}")
    ckpt = work / "run" / "checkpoint"

    human, texts = load_eval(Path(src["data_root"]))
    keys = sorted(human)
    rm = PatternRM("checkpoint", path=str(ckpt), max_response_chars=a.max_chars)
    t1 = time.perf_counter()
    res = rm.label_batch([{"question": "", "response": texts[k]} for k in keys])
    label_s = time.perf_counter() - t1
    errors = [r["error"] for r in res if r.get("error")]
    preds = {k: r["labels"] for k, r in zip(keys, res) if r.get("labels") is not None}
    s = score_judge({k: human[k] for k in preds}, preds) if preds else None
    # the head never fails to answer: for a like-for-like figure an unparseable answer counts as "no pattern"
    s_all = score_judge(human, {k: preds.get(k) or {lab: False for lab in LABELS} for k in keys})
    head = json.loads((REPO / "bench" / "results" / "patternrm_calibration.json").read_text())
    out = {
        "form": "SmolLM2-135M-Instruct, direct-target SFT (ray_jobs.train_patternrm, TRL SFTTrainer, CPU)",
        "corpus": {"records": len(records), "all_labels_known": len(full), "counts": corpus_counts(full)},
        "sft": {**{k: cfg["sft"][k] for k in ("num_train_epochs", "max_steps", "per_device_train_batch_size",
                                             "learning_rate", "max_length")}, "max_response_chars": a.max_chars},
        "train_seconds": round(train_s, 1),
        "n_items": len(keys), "unparseable": len(errors), "first_error": errors[0] if errors else None,
        "label_seconds": round(label_s, 2),
        "sft_checkpoint": None if s is None else {
            "labels": {k: {m: s["labels"][k][m] for m in ("precision", "recall", "f1", "support", "predicted")} for k in LABELS},
            "trigger": {m: s["trigger"][m] for m in ("precision", "recall", "f1", "support", "predicted")},
            "macro_f1": s["macro"]["f1"]},
        "macro_f1_all_47_unparseable_as_no_pattern": s_all["macro"]["f1"],
        "trigger_recall_all_47": s_all["trigger"]["recall"],
        "head_macro_f1": head["patternrm"]["macro_f1"], "rules_macro_f1": head["rules"]["macro_f1"],
        "all_positive_macro_f1": head["baselines"]["all_positive"]["macro_f1"],
    }
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
