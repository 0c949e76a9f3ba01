"""Job: SFT of PatternRM with TRL's SFTTrainer, then a calibration pass on a labelled file (SPEC section 2).

    python -m howeval.ray_jobs.train_patternrm --config configs/patternrm/smoke.yaml          # CPU, a few steps
    accelerate launch --num_processes 8 -m howeval.ray_jobs.train_patternrm --config configs/patternrm/gpu-zero3.yaml

The corpus is ``howeval.ray_jobs.build_corpus`` output (``sft_direct.jsonl`` or ``sft_thinking.jsonl``): chat
records ``{"messages": [system, user, assistant]}``, turned into TRL's conversational prompt-completion
form so the loss is on the assistant turn only. ``sft:`` in the config holds ``trl.SFTConfig`` fields,
passed through unchanged (TRL's names, not redefined here; a DeepSpeed config is ``sft.deepspeed``).

After training the checkpoint is saved to ``<output_dir>/checkpoint`` and, when ``calibration.path`` is
set, read back through ``howeval.judges.patternrm.model.PatternRM`` (kind ``checkpoint``, the same parser the reward
server uses) on that labelled JSONL (``{question, response, labels}`` rows, e.g. ``heldout.jsonl``).
Its predictions are written as ``<output_dir>/calibration/patternrm_predictions.jsonl`` (judge
``patternrm``; an unparseable output is a row with ``judge_error`` and no labels, never a clean label)
and scored by the calibration job (``howeval.ray_jobs.calibrate --labels FILE --predictions ...``): per-label
precision / recall / F1 and macro averages in ``<output_dir>/calibration/calibration.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from howeval.config import StrictModel, load_yaml_config
from howeval.store import read_jsonl

log = logging.getLogger("howeval")


class CalibrationConfig(StrictModel):
    path: str | None = Field(None, description="Labelled JSONL ({question, response, labels}); None skips calibration.")
    max_items: int | None = Field(None, ge=1, description="Score at most this many rows (smoke runs).")
    batch_size: int = Field(8, ge=1, description="Rows per generate call.")
    max_new_tokens: int = Field(24, ge=4, description="Decode budget (direct format ~16 tokens; thinking needs more).")


class TrainPatternRMConfig(StrictModel):
    """PatternRM SFT job."""

    model: str | None = Field(None, description="Base model folder or hub id (offline: a local folder); None = the embedded SmolLM2 fp32 copy; "
                                     "embedded:tiny-lm = the random 3.2M-parameter test policy (format checks only).")
    corpus: str = Field(..., description="SFT JSONL from howeval.ray_jobs.build_corpus (sft_direct.jsonl is the served variant).")
    output_dir: str = Field(..., description="Trainer output; the final model goes to <output_dir>/checkpoint.")
    max_rows: int | None = Field(None, ge=1, description="Use at most this many corpus rows (smoke runs).")
    sft: dict[str, Any] = Field(default_factory=dict, description="trl.SFTConfig fields, passed through (e.g. max_steps, learning_rate, use_cpu, bf16, deepspeed).")
    calibration: CalibrationConfig = Field(default_factory=CalibrationConfig)


def load_config(path: str, overrides: dict[str, Any] | None = None) -> TrainPatternRMConfig:
    """Read and validate the job's YAML (``howeval.config.load_yaml_config``; errors name each key path)."""
    return load_yaml_config(path, TrainPatternRMConfig, overrides)


def to_prompt_completion(rec: dict) -> dict:
    """``{"messages": [..., assistant]}`` -> ``{"prompt": [...], "completion": [assistant]}`` (loss on the answer only)."""
    msgs = rec.get("messages")
    if not isinstance(msgs, list) or len(msgs) < 2 or msgs[-1].get("role") != "assistant":
        raise ValueError(f"corpus record must have messages ending with an assistant turn; got {str(rec)[:160]}")
    return {"prompt": msgs[:-1], "completion": msgs[-1:]}


def train(cfg: TrainPatternRMConfig) -> str:
    """Run SFT; returns the checkpoint folder."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from datasets import Dataset
    from howeval.config.engines import HFOptions
    from howeval.engines.hf import resolve_model_path

    model = resolve_model_path(cfg.model, HFOptions())
    rows = [to_prompt_completion(r) for r in read_jsonl(cfg.corpus, limit=cfg.max_rows)]
    if not rows:
        raise ValueError(f"corpus {cfg.corpus} has no records")
    log.info("PatternRM SFT: %d records from %s, base model %s", len(rows), cfg.corpus, model)
    try:
        args = SFTConfig(output_dir=cfg.output_dir, **cfg.sft)
    except TypeError as e:
        raise ValueError(f"sft: {e} (keys must be trl.SFTConfig fields)") from None
    tok = AutoTokenizer.from_pretrained(model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    trainer.train()
    ckpt = str(Path(cfg.output_dir) / "checkpoint")
    trainer.save_model(ckpt)
    tok.save_pretrained(ckpt)
    return ckpt


def calibrate(ckpt: str, cal: CalibrationConfig, out_dir: str) -> dict:
    """Label the calibration file with the checkpoint (PatternRM parser), then score it as ``howeval.ray_jobs.calibrate``
    does (``howeval.judges.calibration``; ``calibration.json`` / ``.md`` under ``out_dir``).

    Returns the calibration job's scores for judge ``patternrm`` plus ``parse_failures``.
    """
    from howeval.judges.calibration import calibration_scores, calibration_table, load_human, predictions_from_jsonl
    from howeval.judges.patternrm.model import PatternRM

    rows = read_jsonl(cal.path, limit=cal.max_items)
    if not rows:
        raise ValueError(f"calibration file {cal.path} has no rows")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels_file = out / "labels.jsonl"  # the rows scored (max_items may cut the file)
    labels_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    rm = PatternRM("checkpoint", path=ckpt, max_new_tokens=cal.max_new_tokens)
    preds, failures = [], 0
    for i in range(0, len(rows), cal.batch_size):
        chunk = rows[i:i + cal.batch_size]
        for x, r in zip(chunk, rm.label_batch([{"question": x.get("question") or "", "response": x["response"]} for x in chunk])):
            key = {k: x[k] for k in ("sample_id", "config", "mode", "source", "id", "model") if k in x}
            failures += r["labels"] is None
            preds.append({**key, "judge": "patternrm", "labels": r["labels"], "judge_error": r["error"], "raw": r["raw"]})
    pred_file = out / "patternrm_predictions.jsonl"
    pred_file.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds))
    scores = calibration_scores(load_human(str(labels_file))[0], predictions_from_jsonl(str(pred_file)))
    scores["inputs"] = {"labels": str(labels_file), "predictions": str(pred_file)}
    (out / "calibration.json").write_text(json.dumps(scores, indent=2, sort_keys=True))
    (out / "calibration.md").write_text("# Judge calibration\n\n" + calibration_table(scores) + "\n")
    return {"scores": scores["judges"]["patternrm"], "n": len(rows), "parse_failures": failures, "checkpoint": ckpt}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.train_patternrm", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="PatternRM SFT YAML (see configs/patternrm/)")
    p.add_argument("--corpus", help="override corpus")
    p.add_argument("--output-dir", help="override output_dir")
    p.add_argument("--calibration", help="override calibration.path")
    a = p.parse_args(argv)
    try:
        over: dict[str, Any] = {}
        if a.corpus:
            over["corpus"] = a.corpus
        if a.output_dir:
            over["output_dir"] = a.output_dir
        cfg = load_config(a.config, over)
        if a.calibration:
            cfg = cfg.model_copy(update={"calibration": cfg.calibration.model_copy(update={"path": a.calibration})})
        ckpt = train(cfg)
        out = {"checkpoint": ckpt}
        if cfg.calibration.path:
            res = calibrate(ckpt, cfg.calibration, str(Path(cfg.output_dir) / "calibration"))
            out["calibration"] = {"macro": res["scores"].get("macro"), "parse_failures": res["parse_failures"], "n": res["n"]}
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
