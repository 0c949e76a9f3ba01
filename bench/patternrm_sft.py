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
import re
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


WAIT = "Wait, let me check that again."
_SENT = re.compile(r"(?<=[.!?])\s+")


def learnable_rule(text: str) -> dict:
    """The learnable labelling (issue 42): labels a rule decides exactly from the text alone. ``cot`` = the text
    holds the self-correction sentence :data:`WAIT`; ``rep`` = some sentence (>= 12 characters) occurs twice
    verbatim; ``con`` and ``pr`` = 0. ``{label: bool}``.

    >>> learnable_rule("The value of A is 2. Wait, let me check that again. The value of A is 2.")
    {'cot': True, 'rep': True, 'con': False, 'pr': False}
    """
    sents = [x.strip() for x in _SENT.split(text) if len(x.strip()) >= 12]
    return {"cot": WAIT in text, "rep": len(sents) != len(set(sents)), "con": False, "pr": False}


LOOP_SENTENCES = (
    "Let me recompute the total.",
    "So the result stays the same.",
    "I will double-check this step.",
    "This gives the same value again.",
    "Now I add the numbers together.",
    "The answer follows from this.",
    "We keep the same reasoning here.",
    "That matches what we found before.",
)
"""The closing sentences of the learnable smoke (``rep_from="loop"``): the filler a response stuck in a loop repeats."""


def learnable_rows(records: list[dict], n: int, salt: str, max_chars: int = 200, repeats: int = 2,
                   rep_from: str = "loop", negatives: str = "once") -> list[dict]:
    """``n`` rows for the learnable smoke from the real responses of ``records``: each keeps its first
    sentences (at most ``max_chars`` characters, no sentence repeated), then gets, each with probability 1/2
    by a hash of its uid, :data:`WAIT` inserted after the first sentence (``cot``) and a closing sentence said
    ``repeats`` more times right after itself (``rep``: the loop form of repetition, a response stuck on one
    sentence). Labels are :func:`learnable_rule` of the text (equal to the construction); ``evidence`` holds the
    sentence each positive label is decided by (:data:`WAIT`, the repeated sentence), which the thinking target
    quotes as the real corpus quotes the step a human flagged.

    ``rep_from="loop"``: every row closes on one of :data:`LOOP_SENTENCES` (by the hash), said once, or
    ``1 + repeats`` times when ``rep``: a row with and a row without the label differ only in how often that
    sentence is said, so only the repetition decides it. ``rep_from="own"``: the row's own last sentence is
    said again (no closing sentence otherwise); with ``repeats`` 1 or 2 SmolLM2-135M did not learn it in 120
    CPU steps (5-6 December, ``bench/results/patternrm_sft.json``).

    ``negatives="distinct"`` (``loop`` only; the length control): a row without ``rep`` closes on ``1 + repeats``
    different loop sentences instead of one, as long as a row with it, so length and the presence of loop
    sentences decide nothing; rows with ``rep`` and every other row are the same as with ``"once"``.

    Raises:
        ValueError: ``rep_from`` is neither ``"loop"`` nor ``"own"``, or ``negatives`` neither ``"once"`` nor
            ``"distinct"`` (``"distinct"`` needs ``rep_from="loop"``).
    """
    import hashlib

    if rep_from not in ("loop", "own"):
        raise ValueError(f"rep_from={rep_from!r}: use 'loop' or 'own'")
    if negatives not in ("once", "distinct") or (negatives == "distinct" and rep_from != "loop"):
        raise ValueError(f"negatives={negatives!r}: use 'once', or 'distinct' with rep_from='loop'")
    out = []
    for r in records:
        if len(out) == n:
            break
        sents, seen = [], set()
        for x in _SENT.split(" ".join(r["response"].split())):
            x = x.strip()
            if not x or x in seen or x == WAIT or x in LOOP_SENTENCES or len(" ".join(sents + [x])) > max_chars:
                break
            sents.append(x)
            seen.add(x)
        if len(sents) < 2 or len(sents[0]) < 12:
            continue
        h = hashlib.sha256(f"{salt}:{r['uid']}".encode()).digest()
        cot, rep = h[0] % 2 == 1, h[1] % 2 == 1
        closing = LOOP_SENTENCES[h[2] % len(LOOP_SENTENCES)] if rep_from == "loop" else sents[-1]
        if rep:
            tail = [closing] * (repeats + (rep_from == "loop"))
        elif rep_from == "own":
            tail = []
        elif negatives == "distinct":
            i = LOOP_SENTENCES.index(closing)
            tail = [LOOP_SENTENCES[(i + j) % len(LOOP_SENTENCES)] for j in range(1 + repeats)]
        else:
            tail = [closing]
        body = [sents[0], *([WAIT] if cot else []), *sents[1:], *tail]
        text = " ".join(body)
        lab = learnable_rule(text)
        if lab["cot"] != cot or lab["rep"] != rep:  # the rule must decide the construction exactly
            continue
        out.append({"uid": r["uid"], "question": r["question"][-100:], "response": text, "labels": lab,
                    "evidence": {"cot": WAIT if cot else None, "rep": closing if rep else None}})
    return out


def macro_f1(cells: dict, labels: tuple[str, ...]) -> float:
    return round(float(np.mean([cells[k]["f1"] for k in labels])), 4)


def inference_forms(a: argparse.Namespace) -> tuple[tuple[str, int], ...]:
    """The two forms every checkpoint is labelled in, with their new-token budgets: ``(form, max_new_tokens)``."""
    return (("direct", 24), ("thinking", a.thinking_tokens))


def label_rows(ckpt: str, rows: list[dict], form: str, tokens: int, max_chars: int) -> tuple[list[dict], int, float]:
    """The checkpoint's labels for ``rows`` in ``form`` (unparseable: all False, counted); ``(preds, bad, seconds)``."""
    from howeval.judges.patternrm.model import PatternRM
    from howeval.records import LABELS

    rm = PatternRM("checkpoint", path=ckpt, max_response_chars=max_chars, max_new_tokens=tokens, form=form)
    t = time.perf_counter()
    preds, bad = [], 0
    for j in range(0, len(rows), 8):
        for r in rm.label_batch([{"question": x["question"], "response": x["response"]} for x in rows[j:j + 8]]):
            bad += r["labels"] is None
            preds.append(r["labels"] or {k: False for k in LABELS})
    return preds, bad, round(time.perf_counter() - t, 1)


def run_sft(work: Path, corpus_rows: list[dict], a: argparse.Namespace, steps: int, lr: float) -> tuple[str, dict, float]:
    """Write the SFT mixture file and run ``howeval.ray_jobs.train_patternrm`` (the GPU recipe's code: TRL
    ``SFTTrainer`` on an ``AutoModelForCausalLM`` folder) on the embedded SmolLM2-135M, CPU. Returns
    ``(checkpoint, sft settings, seconds)``."""
    import yaml

    from howeval.ray_jobs.train_patternrm import main as train_main

    corpus = work / "sft_mixture.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in corpus_rows))
    cfg = {"model": None, "corpus": str(corpus), "output_dir": str(work / "run"),
           "sft": {"use_cpu": True, "max_steps": steps, "per_device_train_batch_size": a.batch_size,
                   "learning_rate": lr, "max_length": a.max_length, "logging_steps": 4, "save_strategy": "no",
                   "report_to": "none", "bf16": False, "dataloader_num_workers": 0, "seed": 0,
                   "lr_scheduler_type": "cosine", "warmup_steps": 2}}
    (work / "sft.yaml").write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    if train_main(["--config", str(work / "sft.yaml")]) != 0:
        raise SystemExit("train_patternrm failed")
    return str(work / "run" / "checkpoint"), cfg["sft"], round(time.perf_counter() - t0, 1)


def length_only_f1(rows: list[dict], label: str) -> float:
    """The best F1 a response-length threshold reaches on ``rows`` for ``label`` (``len >= t`` flags; the
    threshold chosen on these same rows, so an upper bound for the length-only baseline). Range [0, 1]."""
    y = np.array([r["labels"][label] for r in rows])
    n = np.array([len(r["response"]) for r in rows])
    return max(prf(n >= t, y)["f1"] for t in sorted(set(n.tolist())))


def learnable_smoke(records: list[dict], a: argparse.Namespace, mix: tuple[int, int]) -> dict:
    """The SFT path on a labelling a rule decides exactly (:func:`learnable_rule`): train on the mixture of
    ``--learn-train`` rows, label ``--learn-eval`` other rows in both forms; F1 per label and macro, against
    the all-positive floor and the length-only baseline. A pipeline that learns reaches macro F1 >= 0.9 here.
    ``controls``: the same evaluation texts with every row without ``rep`` as long as a row with it
    (``learnable_rows(negatives="distinct")``), labelled by the same checkpoint: a model that learned the length
    or the loop sentences instead of the repetition flags them."""
    from howeval.judges.patternrm.format import mixture_targets, sft_record

    pool = [r for r in records if r["permissive"] and r["source"] != "human47"]
    pool = sorted(pool, key=lambda r: __import__("hashlib").sha256(r["uid"].encode()).hexdigest())
    rows = learnable_rows(pool, a.learn_train + a.learn_eval, salt="learnable", repeats=a.learn_repeats,
                          rep_from=a.learn_rep_from)
    ev, train = rows[:a.learn_eval], rows[a.learn_eval:]  # evaluation rows first: a short pool shrinks training, not them
    forms = mixture_targets([r["uid"] for r in train], mix)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="patternrm-learnable-")) / "learnable"
    work.mkdir(parents=True, exist_ok=True)
    recs = [sft_record(r["question"], r["response"], r["labels"], target=f, evidence=r["evidence"], max_chars=a.max_chars)
            for r, f in zip(train, forms)]
    print(f"[sft] learnable: {len(train)} rows ({forms.count('thinking')} thinking, {forms.count('direct')} direct), "
          f"{len(ev)} eval rows", flush=True)
    ckpt, sft, secs = run_sft(work, recs, a, a.learn_steps, a.learn_lr)
    table: dict = {}
    labs = ("cot", "rep")
    for form, tokens in inference_forms(a):
        preds, bad, s = label_rows(ckpt, ev, form, tokens, a.max_chars)
        cells = {k: prf(np.array([bool(x[k]) for x in preds]), np.array([r["labels"][k] for r in ev])) for k in labs}
        floor = {k: round(2 * float(np.mean([r["labels"][k] for r in ev])) / (1 + float(np.mean([r["labels"][k] for r in ev]))), 4)
                 for k in labs}
        table[form] = {"labels": cells, "macro_f1": macro_f1(cells, labs), "floor_all_positive_f1": floor,
                       "unparseable": bad, "seconds": s}
        print(f"[sft] learnable {form}: {json.dumps(table[form])}", flush=True)
    controls: dict = {}
    if a.learn_rep_from == "loop":
        ctl = learnable_rows(pool, a.learn_eval, salt="learnable", repeats=a.learn_repeats, negatives="distinct")
        y = np.array([r["labels"]["rep"] for r in ctl])
        controls = {"rows": len(ctl), "rep_positives": int(y.sum()),
                    "length_only_f1": {"rep": length_only_f1(ctl, "rep")}}
        for form, tokens in inference_forms(a):
            preds, bad, s = label_rows(ckpt, ctl, form, tokens, a.max_chars)
            pred = np.array([bool(x["rep"]) for x in preds])
            controls[form] = {"rep": prf(pred, y), "flagged_without_rep": int((pred & ~y).sum()),
                              "unparseable": bad, "seconds": s}
            print(f"[sft] learnable controls {form}: {json.dumps(controls[form])}", flush=True)
    return {"rule": learnable_rule.__doc__.split("\n\n")[0].replace("\n", " ").strip(),
            "train_rows": len(train), "rows_thinking": forms.count("thinking"), "rows_direct": forms.count("direct"),
            "eval_rows": len(ev), "rep_repeats": a.learn_repeats, "rep_from": a.learn_rep_from, "evidence_quoted": True, "sft": sft, "train_seconds": secs, "table4": table,
            "length_only_f1": {k: length_only_f1(ev, k) for k in labs}, "controls": controls,
            "goal": {"macro F1 >= 0.9 (both forms)": all(v["macro_f1"] >= 0.9 for v in table.values())}}


def target_labels(r: dict) -> dict:
    from howeval.records import LABELS

    out = {}
    for k in LABELS:
        v = r["gold"][k] if r["gold"][k] is not None else r["weak"][k]
        out[k] = bool(v) if v is not None else False
    return out


def real_labels(records: list[dict], a: argparse.Namespace, mix: tuple[int, int]) -> dict:
    """The SFT path on the human labels: train on the permissive label records outside the evaluation rows
    (mixture ``mix``), label the 47 and ROSCOE's outer fold 0 in both forms (Table 4 layout)."""
    from howeval.judges.patternrm.format import mixture_targets, sft_record
    from howeval.judges.patternrm.recipe import outer_folds
    from howeval.records import LABELS

    folds = outer_folds(records)
    ev_h = [i for i, r in enumerate(records) if r["source"] == "human47"]
    ev_r = [i for i, r in enumerate(records) if r["source"] == "roscoe" and folds[i] == 0][:a.roscoe_eval]
    held = set(ev_h) | {i for i, r in enumerate(records) if folds[i] == 0}
    train = [i for i, r in enumerate(records) if i not in held and r["permissive"] and r["source"] != "human47"]
    forms = mixture_targets([records[i]["uid"] for i in train], mix)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="patternrm-sft-")) / "real"
    work.mkdir(parents=True, exist_ok=True)
    recs = [sft_record(records[i]["question"][-a.max_chars:], records[i]["response"], target_labels(records[i]), target=form,
                       evidence=records[i]["evidence"], max_chars=a.max_chars) for i, form in zip(train, forms)]
    print(f"[sft] real labels: {len(train)} rows ({forms.count('thinking')} thinking, {forms.count('direct')} direct)", flush=True)
    ckpt, sft, secs = run_sft(work, recs, a, a.max_steps, a.lr)
    table: dict = {}
    for form, tokens in inference_forms(a):
        row: dict = {}
        bad = 0
        t = 0.0
        for name, idx, labs in (("human47", ev_h, LABELS), ("roscoe", ev_r, ("con", "rep"))):
            rows = [{"question": records[i]["question"][-a.max_chars:], "response": records[i]["response"]} for i in idx]
            preds, b, sec = label_rows(ckpt, rows, form, tokens, a.max_chars)
            bad, t = bad + b, t + sec
            row[name] = {}
            for k in labs:
                y = np.array([bool(records[i]["gold"][k]) for i in idx])
                if y.any():
                    row[name][k] = prf(np.array([bool(x[k]) for x in preds]), y)
            if name == "human47":
                y = np.array([any(records[i]["gold"][k] for k in LABELS) for i in idx])
                row[name]["trigger"] = prf(np.array([any(x.values()) for x in preds]), y)
                row[name]["macro_f1"] = macro_f1(row[name], tuple(k for k in LABELS if k in row[name]))
        row["unparseable"], row["seconds"] = bad, round(t, 1)
        table[form] = row
        print(f"[sft] {form}: {json.dumps(row)}", flush=True)
    targets = [target_labels(records[i]) for i in train]
    pos = {k: sum(t[k] for t in targets) for k in LABELS}
    pos["any"] = sum(any(t.values()) for t in targets)
    out = {"mix": {"rows_thinking": forms.count("thinking"), "rows_direct": forms.count("direct")}, "sft": sft,
           "train_rows": len(train), "train_positives": pos, "train_seconds": secs,
           "eval_rows": {"human47": len(ev_h), "roscoe": len(ev_r)}, "table4": table}
    if not any(c.get("predicted") for row in table.values() for part in row.values() if isinstance(part, dict)
               for c in part.values() if isinstance(c, dict)):
        out["why_all_zero"] = (f"nothing flagged in either form: every label's majority answer in the {len(train)} training rows is "
                               f"'no' (positives {pos}), and {a.max_steps} steps of batch {a.batch_size} see "
                               f"{a.max_steps * a.batch_size} rows; the learnable smoke shows the same code learning a "
                               f"rule-decided label, so this zero is the labels and the steps, not the pipeline")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mix", default="34547:23031", help="thinking:direct target counts (their ratio is used)")
    p.add_argument("--parts", nargs="+", choices=("learnable", "real"), default=["learnable", "real"],
                   help="which runs (a part not run keeps its previous entry in --out)")
    p.add_argument("--learn-train", type=int, default=160, help="learnable smoke: training rows")
    p.add_argument("--learn-eval", type=int, default=48, help="learnable smoke: evaluation rows (other texts)")
    p.add_argument("--learn-steps", type=int, default=120, help="learnable smoke: SFT steps (120 = 3 epochs of 160 rows at batch 4; 40 learned nothing, 5 December)")
    p.add_argument("--learn-lr", type=float, default=5e-4)
    p.add_argument("--learn-repeats", type=int, default=2, help="learnable smoke: times a rep row's closing sentence is said again")
    p.add_argument("--learn-rep-from", choices=("loop", "own"), default="loop",
                   help="learnable smoke: the repeated sentence is a loop filler every row closes on, or the row's own last sentence")
    p.add_argument("--max-steps", type=int, default=24, help="real labels: SFT steps")
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

    from howeval.judges.patternrm.head import default_sources
    from howeval.judges.patternrm.labelsets import LabelSourceMissing, load_label_sources

    try:
        records = load_label_sources(default_sources()["data_root"])
    except LabelSourceMissing as e:
        print(f"patternrm sft: {e}", file=sys.stderr)
        return 2
    outp = Path(a.out)
    out = json.loads(outp.read_text()) if outp.is_file() else {}
    out = {k: v for k, v in out.items() if k.startswith(("learnable_smoke", "real_labels"))}  # earlier runs stay, dated
    out["form"] = ("SmolLM2-135M-Instruct (embedded fp32 copy), SFT by howeval.ray_jobs.train_patternrm (TRL SFTTrainer on an "
                   "AutoModelForCausalLM folder: the code configs/patternrm/gpu-zero3.yaml runs), CPU")
    out["mix"] = {"thinking": mix[0], "direct": mix[1]}
    if "learnable" in a.parts:
        out["learnable_smoke"] = learnable_smoke(records, a, mix)  # type: ignore[arg-type]
    if "real" in a.parts:
        out["real_labels"] = real_labels(records, a, mix)  # type: ignore[arg-type]
    cal = REPO / "bench" / "results" / "patternrm_calibration.json"
    if cal.is_file():
        c = json.loads(cal.read_text())
        out["head"] = {"source": "bench/results/patternrm_calibration.json (out-of-fold; all rows of each source)",
                       "by_source_f1": {s: {k: e["f1"] for k, e in labs.items()} for s, labs in c["by_source"].items()},
                       "trigger": c["trigger"]}
    outp.parent.mkdir(parents=True, exist_ok=True)
    outp.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "head"}, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
