"""PatternRM in the paper's form (issue 29): an LM SFT'd on a mixture of thinking-format and direct targets,
both inference forms compared on the same human labels (the paper's Table 4 layout), beside the head.

    python bench/patternrm_sft.py [--mix 34547:23031] [--max-steps 24] [--out bench/results/patternrm_sft.json]

1. SFT rows: the permissive-licence human-label records (``howeval.judges.patternrm.labelsets``: ROSCOE
   GSM8K + CosmosQA, PRM800K) outside the evaluation rows; each label's target is its gold label, else its
   weak proxy, else 0 (no human marked it); the thinking target quotes the step a human flagged
   (``evidence``). Each row gets the thinking or the direct target in the ratio ``--mix`` (thinking:direct,
   default the paper's 34,547:23,031; ``format.mixture_targets``), with the matching system prompt.
2. SFT: ``howeval.ray_jobs.train_patternrm`` (TRL ``SFTTrainer``) on the embedded SmolLM2-135M (fp32 copy), CPU,
   ``--max-steps`` steps (few: the machine is shared; the GPU recipe is in ``docs/patternrm.md``).
3. Evaluation rows, never trained on: the 47 hand-labelled responses (four gold labels) and ROSCOE's outer
   fold 0 (``recipe.outer_folds``; gold ``con``/``rep``), at most ``--roscoe-eval`` of them. The checkpoint
   labels each row twice, prompted for the direct and for the thinking form (``PatternRM(kind="checkpoint",
   form=...)``); an unparseable answer is an error row, counted apart and scored as "no pattern".
4. The head's figures on the same rows come from ``bench/results/patternrm_calibration.json`` when present
   (out-of-fold).

Output JSON: ``{"mix", "sft", "train_rows", "table4": {form: {source: {label: {precision, recall, f1,
support, predicted}}, "unparseable", "seconds"}}, "head": ...}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]


def prf(pred: np.ndarray, y: np.ndarray) -> dict:
    tp, fp, fn = int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * tp / max(1, 2 * tp + fp + fn), 4),
            "support": int(y.sum()), "predicted": int(pred.sum())}


def target_labels(r: dict) -> dict:
    from howeval.records import LABELS

    out = {}
    for k in LABELS:
        v = r["gold"][k] if r["gold"][k] is not None else r["weak"][k]
        out[k] = bool(v) if v is not None else False
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mix", default="34547:23031", help="thinking:direct target counts (their ratio is used)")
    p.add_argument("--max-steps", type=int, default=24)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--max-chars", type=int, default=700, help="response characters kept (head and tail) in training and labelling")
    p.add_argument("--roscoe-eval", type=int, default=40, help="ROSCOE evaluation rows (outer fold 0), at most")
    p.add_argument("--thinking-tokens", type=int, default=96)
    p.add_argument("--workdir", default=None)
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "patternrm_sft.json"))
    a = p.parse_args(argv)
    mix = tuple(int(x) for x in a.mix.split(":"))

    import yaml

    from howeval.judges.patternrm.format import mixture_targets, sft_record
    from howeval.judges.patternrm.head import default_sources
    from howeval.judges.patternrm.labelsets import LabelSourceMissing, load_label_sources
    from howeval.judges.patternrm.model import PatternRM
    from howeval.judges.patternrm.recipe import outer_folds
    from howeval.ray_jobs.train_patternrm import main as train_main
    from howeval.records import LABELS

    try:
        records = load_label_sources(default_sources()["data_root"])
    except LabelSourceMissing as e:
        print(f"patternrm sft: {e}", file=sys.stderr)
        return 2
    folds = outer_folds(records)
    ev_h = [i for i, r in enumerate(records) if r["source"] == "human47"]
    ev_r = [i for i, r in enumerate(records) if r["source"] == "roscoe" and folds[i] == 0][:a.roscoe_eval]
    held = set(ev_h) | {i for i, r in enumerate(records) if folds[i] == 0}
    train = [i for i, r in enumerate(records) if i not in held and r["permissive"] and r["source"] != "human47"]
    forms = mixture_targets([records[i]["uid"] for i in train], mix)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="patternrm-sft-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "sft_mixture.jsonl"
    with corpus.open("w") as f:
        for i, form in zip(train, forms):
            r = records[i]
            f.write(json.dumps(sft_record(r["question"][-a.max_chars:], r["response"], target_labels(r), target=form,
                                          evidence=r["evidence"], max_chars=a.max_chars)) + "\n")
    cfg = {"model": None, "corpus": str(corpus), "output_dir": str(work / "run"),
           "sft": {"use_cpu": True, "max_steps": a.max_steps, "per_device_train_batch_size": a.batch_size,
                   "learning_rate": a.lr, "max_length": a.max_length, "logging_steps": 4, "save_strategy": "no",
                   "report_to": "none", "bf16": False, "dataloader_num_workers": 0, "seed": 0,
                   "lr_scheduler_type": "cosine", "warmup_steps": 2}}
    (work / "sft.yaml").write_text(yaml.safe_dump(cfg))
    print(f"[sft] {len(train)} rows ({forms.count('thinking')} thinking, {forms.count('direct')} direct) -> {corpus}", flush=True)
    t0 = time.perf_counter()
    if train_main(["--config", str(work / "sft.yaml")]) != 0:
        raise SystemExit("train_patternrm failed")
    train_s = time.perf_counter() - t0
    ckpt = str(work / "run" / "checkpoint")

    table: dict = {}
    for form, tokens in (("direct", 24), ("thinking", a.thinking_tokens)):
        rm = PatternRM("checkpoint", path=ckpt, max_response_chars=a.max_chars, max_new_tokens=tokens, form=form)
        t1 = time.perf_counter()
        row: dict = {}
        bad = 0
        for name, idx, labs in (("human47", ev_h, LABELS), ("roscoe", ev_r, ("con", "rep"))):
            preds = []
            for j in range(0, len(idx), 8):
                res = rm.label_batch([{"question": records[i]["question"][-a.max_chars:], "response": records[i]["response"]}
                                      for i in idx[j:j + 8]])
                for r in res:
                    bad += r["labels"] is None
                    preds.append(r["labels"] or {k: False for k in LABELS})
            row[name] = {}
            for k in labs:
                y = np.array([bool(records[i]["gold"][k]) for i in idx])
                pr = np.array([bool(x[k]) for x in preds])
                if y.any():
                    row[name][k] = prf(pr, y)
            if name == "human47":
                y = np.array([any(records[i]["gold"][k] for k in LABELS) for i in idx])
                row[name]["trigger"] = prf(np.array([any(x.values()) for x in preds]), y)
        row["unparseable"] = bad
        row["seconds"] = round(time.perf_counter() - t1, 1)
        table[form] = row
        print(f"[sft] {form}: {json.dumps(row)}", flush=True)
    head = None
    cal = REPO / "bench" / "results" / "patternrm_calibration.json"
    if cal.is_file():
        c = json.loads(cal.read_text())
        head = {"source": "bench/results/patternrm_calibration.json (out-of-fold; all rows of each source)",
                "by_source_f1": {s: {k: e["f1"] for k, e in labs.items()} for s, labs in c["by_source"].items()},
                "trigger": c["trigger"]}
    out = {"form": "SmolLM2-135M-Instruct (embedded fp32 copy), SFT on a thinking/direct mixture (howeval.ray_jobs.train_patternrm, CPU)",
           "mix": {"thinking": mix[0], "direct": mix[1], "rows_thinking": forms.count("thinking"), "rows_direct": forms.count("direct")},
           "sft": cfg["sft"], "train_rows": len(train), "train_seconds": round(train_s, 1),
           "eval_rows": {"human47": len(ev_h), "roscoe": len(ev_r)}, "table4": table, "head": head}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
