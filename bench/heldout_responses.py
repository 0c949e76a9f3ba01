"""Build the held-out verifier set: real MathVista and MATH-Vision responses that no one here wrote (issue 41).

The responses are the official ones the two benchmarks publish beside their scorers, with the scorer's own
verdict on each:

- MathVista (github.com/lupantech/MathVista @ 53d5258a, ``results/<model>/output_*.json``): ``{pid: {question,
  choices, unit, precision, answer, question_type, answer_type, response, extraction, prediction, true_false}}``;
  ``true_false`` is ``evaluation/calculate_score.py``'s verdict on the GPT-extracted answer.
- MATH-Vision (github.com/mathllm/MATH-V @ a1f5cc3a, ``outputs/**/<model>.jsonl``): ``{id, model, response,
  model_answer, correct}`` over ``data/test.jsonl`` items; ``correct`` is ``evaluation/evaluate.py``'s verdict.

Sampling (deterministic): per MathVista model the 100 testmini pids with the smallest sha1(model/pid); per MATH-V
model the 48 testmini ids with the smallest sha1(model/id) among those *not* in ``../shared/data`` (whose 48 ids
are the project's fixtures). Models: MathVista bard, gpt4 (2-shot solution), LLaVA-LLaMA-2-13B; MATH-V
Gemini-Pro-CoT, LLaVA-v1.5-13B, SPHINX-MoE, ShareGPT4V-13B: 300 + 192 = 492 rows.

Output: one JSON line per response, ``{source, id, model, question, response, answer, answer_type, options,
precision, unit, official_correct, official_extraction}`` where ``answer_type`` / ``options`` / ``answer`` are
what :mod:`howeval.benchmarks.released` (MathVista) and the shared manifest (MATH-V: letter gold with options)
give the verifier. Written outside the repository (the responses keep their sources' licenses): default
``../heldout/mathvista_mathv_heldout.jsonl`` beside the checkout.

Usage: ``python bench/heldout_responses.py --mathvista REPO --mathv REPO [--second] [--out FILE]``, where REPO is a checkout
or a bare git directory of each repository (read with ``git show HEAD:<path>``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

MATHVISTA_FILES = {"bard": "results/bard/output_bard.json",
                   "gpt4-2shot-solution": "results/gpt4/output_gpt4_2shot_solution.json",
                   "llava-llama-2-13b": "results/llava/output_llava_llama_2_13b.json"}
MATHV_FILES = {"Gemini-Pro-CoT": "outputs/closed-source/Gemini/Gemini-Pro-CoT.jsonl",
               "LLaVA-v1.5-13B": "outputs/open-source/LLavA/LLaVA-v1.5-13B.jsonl",
               "SPHINX-MoE": "outputs/open-source/Sphinx/SPHINX-MoE.jsonl",
               "ShareGPT4V-13B": "outputs/open-source/ShereGPT4V/ShareGPT4V-13B.jsonl"}
PER_MATHVISTA_MODEL, PER_MATHV_MODEL = 100, 48
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "heldout" / "mathvista_mathv_heldout.jsonl"

SECOND = {"mathvista": {"chatgpt-2shot-solution": "results/chatgpt/output_chatgpt_2shot_solution.json",
                        "claude-2shot-solution": "results/claude/output_claude_2shot_solution.json",
                        "idefics-9b": "results/idefics/output_idefics_9b_instruct.json",
                        "minigpt4": "results/minigpt4/output_minigpt4_llama2.json",
                        "mplugowl": "results/mplugowl/output_mplugowl_7b_ft.json"},
          "mathv": {"Gemini-Pro": "outputs/closed-source/Gemini/Gemini-Pro.jsonl",
                    "Qwen-VL-Plus": "outputs/closed-source/Qwen/Qwen-VL-Plus.jsonl",
                    "InternLM-XComposer2-VL-CoT": "outputs/open-source/Internlm/InternLM-XComposer2-VL-CoT.jsonl",
                    "SPHINX-v2": "outputs/open-source/Sphinx/SPHINX-v2.jsonl",
                    "ShareGPT4V-7B": "outputs/open-source/ShereGPT4V/ShareGPT4V-7B.jsonl"},
          "per": (60, 40)}
"""The second sample (``--second``): other models (MathVista 5 x 60, MATH-V 5 x 40 = 500 rows), to check that the
criteria were not fitted to the first: ``../heldout/mathvista_mathv_second.jsonl``."""
SECOND_OUT = DEFAULT_OUT.with_name("mathvista_mathv_second.jsonl")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def read_repo_file(repo: str, path: str) -> str:
    """The text of ``path`` in ``repo`` (a checkout, else a git directory read at HEAD).

    Raises:
        FileNotFoundError: neither a file in the checkout nor an object at HEAD.
    """
    p = Path(repo) / path
    if p.is_file():
        return p.read_text(encoding="utf-8")
    r = subprocess.run(["git", f"--git-dir={repo}", "show", f"HEAD:{path}"], capture_output=True)
    if r.returncode != 0 or not r.stdout:
        raise FileNotFoundError(f"{path} not in {repo}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode("utf-8")


def _h(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()


def mathvista_rows(repo: str, files: dict[str, str] | None = None, per: int = PER_MATHVISTA_MODEL) -> list[dict]:
    """The MathVista part (module docstring): ``per`` responses per model, with the official verdict."""
    from howeval.benchmarks.released import mathvista_row

    out = []
    for model, path in (files or MATHVISTA_FILES).items():
        d = json.loads(read_repo_file(repo, path))
        for pid in sorted(d, key=lambda p: _h(model, p))[:per]:
            r = d[pid]
            row, err = mathvista_row({**r, "image": r.get("image") or "images/x.jpg"}, 0, "testmini")
            if err:
                raise ValueError(f"MathVista {pid}: {err}")
            tf = r.get("true_false")
            out.append({"source": "MathVista", "id": pid, "model": model, "question": r.get("question"),
                        "response": r.get("response") or "", "answer": row["answer"],
                        "answer_type": row["answer_type"], "options": row["options"],
                        "precision": r.get("precision"), "unit": r.get("unit"),
                        "official_correct": tf if isinstance(tf, bool) else str(tf) == "True",
                        "official_extraction": r.get("extraction")})
    return out


def mathv_rows(repo: str, shared: Path = SHARED, files: dict[str, str] | None = None, per: int = PER_MATHV_MODEL
               ) -> list[dict]:
    """The MATH-Vision part (module docstring): ``per`` responses per model on testmini items not in ``shared``."""
    items = {str(x["id"]): x for x in map(json.loads, read_repo_file(repo, "data/test.jsonl").splitlines()) if x}
    mini = [str(json.loads(x)["id"]) for x in read_repo_file(repo, "data/testmini.jsonl").splitlines() if x.strip()]
    taken: set[str] = set()
    sub = shared / "vqa" / "mathv_testmini_subset.jsonl"
    if sub.is_file():
        taken = {str(json.loads(x)["id"]) for x in sub.read_text().splitlines() if x.strip()}
    else:
        print(f"warning: {sub} absent: the fixture's 48 MATH-V ids cannot be left out, so this sample differs from the "
              "one measured in bench/results/verify_heldout.md", file=sys.stderr)
    pool = [i for i in mini if i not in taken]
    out = []
    for model, path in (files or MATHV_FILES).items():
        resp = {str(x["id"]): x for x in map(json.loads, read_repo_file(repo, path).splitlines()) if x}
        for i in sorted((i for i in pool if i in resp), key=lambda i: _h(model, i))[:per]:
            it, r = items[i], resp[i]
            mc = bool(it.get("options"))
            out.append({"source": "MATH-Vision", "id": i, "model": model, "question": it["question"],
                        "response": r.get("response") or "", "answer": str(it["answer"]),
                        "answer_type": "multiple_choice" if mc else "free_form",
                        "options": list(it["options"]) if mc else None, "precision": None, "unit": None,
                        "official_correct": bool(r.get("correct")), "official_extraction": r.get("model_answer")})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mathvista", required=True, help="lupantech/MathVista checkout or git directory")
    p.add_argument("--mathv", required=True, help="mathllm/MATH-V checkout or git directory")
    p.add_argument("--out", default=None, help="output JSONL (default ../heldout/mathvista_mathv_heldout.jsonl, "
                   "or ..._second.jsonl with --second)")
    p.add_argument("--second", action="store_true", help="the second sample (SECOND: other models)")
    a = p.parse_args(argv)
    if a.second:
        rows = (mathvista_rows(a.mathvista, SECOND["mathvista"], SECOND["per"][0])
                + mathv_rows(a.mathv, files=SECOND["mathv"], per=SECOND["per"][1]))
    else:
        rows = mathvista_rows(a.mathvista) + mathv_rows(a.mathv)
    a.out = a.out or str(SECOND_OUT if a.second else DEFAULT_OUT)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
