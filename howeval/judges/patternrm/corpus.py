"""PatternRM's offline training corpus: real texts plus controlled pattern injections with known labels.

The paper's corpus (SPEC section 2) is three LLM judges' unanimous 4-label vectors
(``howeval.ray_jobs.build_corpus``); that path needs LLM judges. This module builds the one that runs here,
from the real samples in ``../shared/data`` and the demo set, with no model call. Pure functions, no I/O
besides reading the given files; deterministic (a seeded ``random.Random``). The recipe and its limits
are written up in ``docs/patternrm_corpus.md`` (the dataset card).

**Bases** (:func:`load_bases`):

- *clean* texts, all four labels known to be 0: written gold solutions (TabMWP ``solution``, MATH-Vision
  ``solution``, PuzzleVQA caption + explanation + deduction, MR-GSM8K ``reference_solution``, the demo
  set's and CRYSTAL's reference steps joined), each ending with an answer line, and bare answers;
- *wrong chains*: MR-GSM8K model solutions with a human-labelled first error step: ``pr = 1`` (a step
  whose result does not follow from what precedes it, the hand-label guide's "the step does not follow"),
  the other labels unknown;
- *model* responses (``responses/*.jsonl``) except every response in the evaluation set
  (``howeval/judges/patternrm/data/human_labels.jsonl``): labels unknown, used only as carriers of injections.

**Injections** (:data:`INJECTORS`), each with several wordings and positions (no single template per label):

- ``cot``: leaked drafts ("First attempt: ... Actually, no."), self-corrections ("Wait, let me re-check"),
  leaked ``<think>`` fragments and planning talk. A draft value that differs from the final one is *not*
  labelled ``con``: the CoT-priority rule (SPEC section 1) counts that evidence as CoT only.
- ``rep``: a sentence repeated verbatim or with a connective, the conclusion restated 2-3 times.
- ``con``: a second incompatible value for a quantity already stated, or an answer line that names a
  different value than the one the text computed.
- ``pr``: the derivation replaced by an unsupported wrapper ("By analysing the figure carefully, it is
  clear that ..."), or an invented premise asserted without support before the conclusion.

A record: ``{"question", "response", "labels": {cot, rep, con, pr: 0 | 1 | None}, "origin", "recipe"}``;
``None`` = unknown (masked out of the loss). Labels of injected records: the injected label 1, the base's
known labels kept (a clean base's others stay 0; a model base's stay unknown).
"""
from __future__ import annotations

import ast
import bisect
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from howeval.judges.patternrm.layout import LAYOUTS, layout_of, render
from howeval.records import LABELS
from howeval.store import read_jsonl

__all__ = ["Base", "load_bases", "heldout_keys", "build_offline_corpus", "balance_cells", "clean_twin", "INJECTORS", "corpus_counts"]


@dataclass
class Base:
    """A text to learn from or to inject into. ``labels`` values: 0/1 known, None unknown."""

    uid: str
    question: str
    text: str
    answer: str
    origin: str
    labels: dict[str, int | None] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return all(self.labels.get(k) == 0 for k in LABELS)


CLEAN = {k: 0 for k in LABELS}
UNKNOWN: dict[str, int | None] = {k: None for k in LABELS}


def _listish(v: Any) -> list[str]:
    if isinstance(v, list):
        return [str(x) for x in v]
    if isinstance(v, str) and v.strip().startswith("["):
        try:
            return [str(x) for x in ast.literal_eval(v)]
        except (ValueError, SyntaxError):
            return []
    return []


_ANSWER_LINES = ("The answer is {a}.", "So the answer is {a}.", "Answer: {a}", "Therefore, the answer is \\boxed{{{a}}}.",
                 "The final answer is {a}.", "Hence the answer is {a}.")


def heldout_keys(human_labels: str | Path) -> set[str]:
    """``source|id|model`` keys of the hand-labelled evaluation responses (never used for training)."""
    return {f"{r['source']}|{r['id']}|{r.get('model') or ''}" for r in read_jsonl(Path(human_labels))}


def load_bases(data_root: str | Path, human_labels: str | Path, demo_manifest: str | Path | None = None,
               seed: int = 0) -> list[Base]:
    """All bases from ``data_root`` (``../shared/data``) and the demo manifest, evaluation set left out.

    Raises:
        FileNotFoundError: a source file is missing (the message names it).
    """
    root = Path(data_root)
    rng = random.Random(seed)
    held = heldout_keys(human_labels)
    out: list[Base] = []

    def add_clean(uid: str, q: str, body: str, ans: str, origin: str) -> None:
        body = body.strip()
        if not body:
            return
        if ans and ans not in body[-80:]:
            body = body + "\n" + rng.choice(_ANSWER_LINES).format(a=ans)
        out.append(Base(uid, q, body, ans, origin, dict(CLEAN)))

    for src in _base_sources(root, demo_manifest):
        if isinstance(src, Base):
            out.append(src)
        else:
            add_clean(*src)
    out += _bare_answers(out, rng)
    out += _model_response_carriers(root, held)
    return out


def _base_sources(root: Path, demo_manifest: str | Path | None) -> Iterator[Base | tuple[str, str, str, str, str]]:
    """In :func:`load_bases`'s order: ``(uid, question, body, answer, origin)`` of each clean worked solution
    (TabMWP, MATH-Vision, PuzzleVQA, GSM8K references, CRYSTAL reference steps, the demo manifest's steps),
    and, as a ready :class:`Base`, each wrong GSM8K chain (PR by construction, other labels unknown)."""
    for r in read_jsonl(root / "vqa" / "tabmwp_subset.jsonl"):
        q = r["question"] + ("\n" + r["table_text"] if r.get("table_text") else "")
        yield f"tabmwp:{r['id']}", q, r.get("solution") or "", str(r["answer"]), "tabmwp_solution"
    for r in read_jsonl(root / "vqa" / "mathv_testmini_subset.jsonl"):
        if r.get("solution") not in (None, "None", ""):
            yield f"mathv:{r['id']}", r["question"], r["solution"], str(r["answer"]), "mathv_solution"
    for r in read_jsonl(root / "vqa" / "puzzlevqa_subset.jsonl"):
        body = "\n".join(str(r.get(k) or "") for k in ("caption", "explanation", "deduction"))
        yield f"puzzlevqa:{r['id']}", r["question"], body, str(r["answer"]), "puzzlevqa_chain"
    gsm = read_jsonl(root / "steps" / "mr_gsm8k_labeled_wrong_solutions.jsonl")
    for r in gsm:
        yield f"gsm8k:{r['uuid']}", r["question"], r["reference_solution"], str(r["reference_answer"]), "gsm8k_reference"
        steps = _listish(r.get("model_output_steps"))
        if steps and str(r.get("solution_correctness")) == "wrong":
            yield Base(f"gsm8k-wrong:{r['uuid']}", r["question"], "\n".join(steps), "", "gsm8k_wrong_chain",
                       {"cot": None, "rep": None, "con": None, "pr": 1})
    crystal = json.loads((root / "steps" / "crystal_examples.json").read_text(encoding="utf-8"))
    for i, ex in enumerate(crystal):
        steps = _listish(ex.get("reference_steps")) if isinstance(ex, dict) else []
        if steps:
            yield f"crystal:{i}", str(ex.get("question") or ""), "\n".join(steps), str(ex.get("answer") or ""), "crystal_reference"
    if demo_manifest is not None:
        for r in read_jsonl(Path(demo_manifest)):
            steps = _listish(r.get("reference_steps"))
            if steps:
                yield r["uid"], r["question"], " ".join(steps), str(r["answer"]), "demo_reference"


def _bare_answers(bases: list[Base], rng: random.Random) -> list[Base]:
    """Up to 60 bare answers ("The answer is 7.", a box, ...) of clean bases with an answer: clean by
    construction (nothing to repeat, contradict or leave unsupported)."""
    answers = [b for b in bases if b.answer and b.clean]
    out = []
    for b in rng.sample(answers, min(60, len(answers))):
        form = rng.choice(["{a}", "The answer is {a}.", "\\boxed{{{a}}}", "Answer: {a}", "There are {a}.", "It is {a}."])
        out.append(Base(b.uid + ":bare", b.question, form.format(a=b.answer), b.answer, "bare_answer", dict(CLEAN)))
    return out


def _model_response_carriers(root: Path, held: set[str]) -> list[Base]:
    """The real model responses of ``root/responses``, the evaluation set (``held``) left out: carriers only
    (labels unknown)."""
    out = []
    for fname in ("mathv_model_responses.jsonl", "tabmwp_gpt3_cot_responses.jsonl"):
        for r in read_jsonl(root / "responses" / fname):
            if f"{fname}|{r['id']}|{r.get('model') or ''}" in held:
                continue
            ans = str(r.get("model_answer") or r.get("prediction") or "")
            out.append(Base(f"{fname}:{r['id']}:{r.get('model')}", "", r["response"], ans, "model_response", dict(UNKNOWN)))
    return out


# ------------------------------------------------------------------------------------------ injections

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(])|\n+")
_NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s and s.strip()]


def _other_number(v: str, rng: random.Random) -> str:
    try:
        x = float(v)
    except ValueError:
        return str(rng.randint(2, 30))
    delta = rng.choice([1, 2, 3, 5, 10, -1, -2])
    y = x + delta if x + delta != x else x + 1
    return str(int(y)) if float(y).is_integer() and "." not in v else f"{y:g}"


_COT_OPENERS = [
    "Wait, let me re-check that.", "Hmm, actually I should double-check this.", "Let me think about this again.",
    "Okay, so the user wants the answer to this question. Let me work through it.", "Wait, no, that's not right.",
    "Hold on, I think I made a mistake above.", "Let me reconsider the previous step.",
    "Actually, wait. Let me recount.", "Hmm, let me verify this once more before answering.",
    "First, I need to figure out what the question is asking.", "Let me restart the calculation.",
    "Oh wait, I misread that. Let me redo it.", "I think the answer might be different; let me check.",
    "Okay, let's see. I'll try a different approach.", "Hmm, is that correct? Let me verify.",
]
_COT_DRAFTS = [
    "First attempt: I get {w}. Actually, no, that's wrong.", "My first guess was {w}, but let me recompute.",
    "Initially I thought it was {w}. Wait, let me redo this.", "Draft: {w}? No, I made an arithmetic slip.",
    "So it's {w}... hmm, no. Let me recount carefully.", "I'll say {w}. Wait, that doesn't match; recalculating.",
    "I got {w} the first time through, then redid the sum below.", "{w} was my first count; the count below replaces it.",
]
_THINK = ["<think>\nOkay, let me figure this out. The question asks for the value.\n</think>\n",
          "<think>Let me see... I need to count carefully.</think>\n",
          "(thinking: the user asks a question; I should compute it step by step)\n"]


def inject_cot(b: Base, rng: random.Random) -> tuple[str, dict[str, int | None]] | None:
    """Leaked draft, self-correction or thinking fragment; a draft's wrong value is CoT, not Con (priority rule)."""
    sents = _sentences(b.text)
    style = rng.random()
    if style < 0.35 and b.answer:
        piece = rng.choice(_COT_DRAFTS).format(w=_other_number(b.answer, rng))
    elif style < 0.5:
        piece = rng.choice(_THINK).rstrip("\n")
        return piece + "\n" + b.text, {"cot": 1, "con": 0 if b.labels.get("con") == 0 else None}
    else:
        piece = rng.choice(_COT_OPENERS)
        if rng.random() < 0.4:
            piece += " " + rng.choice(_COT_OPENERS)
    pos = rng.randint(0, max(0, len(sents) - 1)) if sents else 0
    new = sents[:pos] + [piece] + sents[pos:]
    return "\n".join(new), {"cot": 1, "con": 0 if b.labels.get("con") == 0 else None}


_REP_CONNECTIVES = ["", "", "Again, ", "As stated, ", "To repeat, ", "In other words, ", "Once more, "]
_RESTATE = ["So the answer is {a}.", "Thus the answer is {a}.", "Therefore, the answer is {a}.", "The answer is {a}.",
            "Hence, the final answer is {a}."]


def inject_rep(b: Base, rng: random.Random) -> tuple[str, dict[str, int | None]] | None:
    """Repeat a sentence (verbatim or with a connective) or restate the conclusion several times."""
    sents = _sentences(b.text)
    if rng.random() < 0.35 and b.answer:
        k = rng.choice([2, 3])
        extra = [rng.choice(_RESTATE).format(a=b.answer) for _ in range(k)]
        return "\n".join(sents + extra), {"rep": 1}
    long = [s for s in sents if len(s) > 25]
    if not long:
        return None
    s = rng.choice(long)
    copies = rng.choice([1, 1, 2])
    new = list(sents)
    for _ in range(copies):
        pos = rng.randint(sents.index(s) + 1, len(new))
        c = rng.choice(_REP_CONNECTIVES)
        new.insert(pos, (c + s[0].lower() + s[1:]) if c else s)
    return "\n".join(new), {"rep": 1}


_CON_TEMPLATES = [
    "So the value is {v}.", "This gives {v}.", "That means there are {v}.", "Therefore it equals {v}.",
    "Hence the result is {v}.",
]


def inject_con(b: Base, rng: random.Random) -> tuple[str, dict[str, int | None]] | None:
    """A second incompatible value: change the answer line, or assert another value for a stated quantity."""
    sents = _sentences(b.text)
    if not sents:
        return None
    if b.answer and _NUM.fullmatch(b.answer.strip()) and rng.random() < 0.5:
        w = _other_number(b.answer.strip(), rng)
        line = rng.choice(["The answer is {w}.", "So the final answer is {w}.", "Answer: {w}", "Therefore, the answer is \\boxed{{{w}}}."])
        return "\n".join(sents + [line.format(w=w)]), {"con": 1}
    nums = [(i, m) for i, s in enumerate(sents) for m in _NUM.finditer(s)]
    if not nums:
        return None
    i, m = rng.choice(nums)
    w = _other_number(m.group(), rng)
    claim = rng.choice(_CON_TEMPLATES).format(v=w)
    pos = rng.randint(i + 1, len(sents))
    return "\n".join(sents[:pos] + [claim] + sents[pos:]), {"con": 1}


_PR_WRAPPERS = [
    "By analyzing the figure carefully, it is clear that the answer is {a}.",
    "Based on the pattern, we can conclude that the answer is {a}.",
    "After careful consideration of all the elements, the answer is {a}.",
    "Looking at the structure as a whole, it becomes evident that the answer must be {a}.",
    "By examining the relationships between the parts, we can determine that the result is {a}.",
    "Using logical reasoning and the given information, the answer is {a}.",
    "Considering the overall arrangement, the correct answer is {a}.",
    "Through a systematic analysis of the problem, we find that the answer is {a}.",
    # without the cue words the builder tends to give pr (issue 21: each pattern with and without its surface features)
    "The total is {a}.", "So there are {a}.", "The missing value is {a}.", "That gives {a} as the result.",
]
_PR_PREMISES = [
    "Since each group must contain the same number of items, the total follows directly.",
    "It is well known that this kind of figure always has this property.",
    "Because the pattern continues in the same way, the missing value is determined.",
    "Clearly, the arrangement implies the result.", "Obviously, the remaining parts are equal.",
    "By symmetry, all the other parts must match.", "As the shape is regular, the answer follows immediately.",
    "Each row has the same number of items as the first one.", "The other two parts are the same size as this one.",
    "The remaining pieces add up to the same amount.",
]


def inject_pr(b: Base, rng: random.Random) -> tuple[str, dict[str, int | None]] | None:
    """An unsupported reasoning wrapper instead of the derivation, or an invented premise before the conclusion."""
    sents = _sentences(b.text)
    if not b.answer:
        return None
    if rng.random() < 0.55 or len(sents) < 3:
        head = sents[:1] if sents and rng.random() < 0.5 and len(sents) > 2 else []
        text = "\n".join(head + [rng.choice(_PR_WRAPPERS).format(a=b.answer)])
        # the derivation is gone: nothing left to repeat or contradict
        return text, {"pr": 1, "rep": 0, "con": 0, "cot": 0 if b.labels.get("cot") == 0 else None}
    k = rng.randint(1, max(1, len(sents) // 2))
    kept = sents[:k] + [rng.choice(_PR_PREMISES)] + [rng.choice(_PR_WRAPPERS).format(a=b.answer)]
    return "\n".join(kept), {"pr": 1}


INJECTORS: dict[str, Callable[[Base, random.Random], tuple[str, dict[str, int | None]] | None]] = {
    "cot": inject_cot, "rep": inject_rep, "con": inject_con, "pr": inject_pr,
}


def _record(b: Base, text: str, labels: Mapping[str, int | None], recipe: str, layout: str | None = None) -> dict[str, Any]:
    if layout is not None:
        text = render(text, layout)
    return {"uid": b.uid, "question": b.question, "response": text, "labels": {k: labels.get(k) for k in LABELS},
            "origin": b.origin, "recipe": recipe, "layout": layout_of(text)}


_NEUTRAL = [
    "We use the values given in the problem.", "All the numbers below come from the question.",
    "The quantities are read from the problem statement.", "We now combine these values.",
    "This is the only quantity we still need.", "We keep the units the same throughout.",
    "Each value is used once in the calculation.", "The next line uses the result above.",
    "First, we note what the question asks for.", "We write down each quantity before using it.",
    "Nothing else in the problem changes the result.", "We work through the quantities in order.",
    "The same units are used in every line.", "Each line below follows from the one before it.",
    "We read the needed values carefully.", "We only need the values that the question mentions.",
    "Let us organise the given information.", "We set up the calculation from the given data.",
    "The values are combined in the order the question gives them.", "Now we can compute the result.",
    "This step uses only the numbers stated above.", "We check that every value has been used.",
    "The result of this step is used in the final line.", "Here is how the quantities fit together.",
]
_GIVEN = ["The problem says: {s}", "We are told: {s}", "From the question: {s}", "Given: {s}"]
_HARD_NEG = ["Clearly, ", "Obviously, ", "So, ", "Then, "]
_EQ = re.compile(r"\d\s*[-+*/×x÷]\s*\d.*=|=\s*-?\d")


def _pad(sents: list[str], target_chars: int, question: str, rng: random.Random) -> list[str]:
    """``sents`` with neutral sentences (never a repeat, a value or a cue) and restated parts of the question
    inserted before the last sentence until about ``target_chars`` long (each padding sentence used once)."""
    out = list(sents)
    given = [g for g in (x.strip() for x in re.split(r"\n+|(?<=[.?!])\s+", question or "")) if 8 <= len(g) <= 200
             and "<image" not in g and not g.endswith("?")]
    pool = [rng.choice(_GIVEN).format(s=g) for g in given[:6]] + rng.sample(_NEUTRAL, len(_NEUTRAL))
    while sum(len(x) + 1 for x in out) < target_chars * 0.97 and pool:
        gap = target_chars - sum(len(x) + 1 for x in out)
        fit = [i for i, x in enumerate(pool) if len(x) + 1 <= gap * 1.3]
        if not fit:
            break
        out.insert(rng.randint(0, max(0, len(out) - 1)), pool.pop(fit[-1]))
    return out


def clean_twin(b: Base, target_chars: int, rng: random.Random) -> str | None:
    """A clean text from a clean base, about ``target_chars`` long (issue 21: clean records matched in
    length to the flawed ones): neutral sentences and restated parts of the question added (never a
    repeat, a second value or a leaked draft) when the base is shorter; a supported short form (the base's
    last computation, then its answer line, padded) when the target is shorter. Sometimes a cue word
    ("Clearly, ") on a supported step (a hard negative: the cue alone is not a pattern). None when the
    base has no answer or no computation to keep.
    """
    sents = _sentences(b.text)
    if not sents or not b.answer:
        return None
    if target_chars < len(b.text) * 0.7:
        eqs = [x for x in sents if _EQ.search(x)]
        if not eqs:
            return None
        out = _pad([eqs[-1], rng.choice(_ANSWER_LINES).format(a=b.answer)], target_chars, b.question, rng)
    else:
        out = _pad(sents, target_chars, b.question, rng)
    if rng.random() < 0.3:
        idx = [i for i, x in enumerate(out) if _EQ.search(x)]
        if idx:
            i = rng.choice(idx)
            out[i] = rng.choice(_HARD_NEG) + out[i][0].lower() + out[i][1:]
    return "\n".join(out)


def _item_key(b: Base) -> str | None:
    """The item a base is about (``tabmwp:ID``, ``mathv:ID``, ``gsm8k:UUID``): a model response, a wrong chain
    and the item's gold solution share it (the source of a carrier's clean twin)."""
    u = b.uid
    if u.startswith("tabmwp_gpt3_cot_responses.jsonl:"):
        return "tabmwp:" + u.split(":")[1]
    if u.startswith("mathv_model_responses.jsonl:"):
        return "mathv:" + u.split(":")[1]
    if u.startswith("gsm8k-wrong:"):
        return "gsm8k:" + u.split(":", 1)[1]
    return u


def _cells(records: Sequence[Mapping[str, Any]], n_chars: int, n_lines: int) -> list[tuple[str, int, int]]:
    """Each record's (detected layout, length bin, line-count bin); bins are corpus quantiles."""
    ch = [math.log1p(len(r["response"])) for r in records]
    # characters per line (log): the line count beside the length (a linear mix of the two is the check's reach)
    ln = [c - math.log1p(sum(1 for x in r["response"].splitlines() if x.strip())) for r, c in zip(records, ch)]

    def edges(v: list[float], n: int) -> list[float]:
        s = sorted(v)
        return [s[int(len(s) * i / n)] for i in range(1, n)]

    ec, el = edges(ch, n_chars), edges(ln, n_lines)
    return [(layout_of(r["response"]), bisect.bisect_right(ec, c), bisect.bisect_right(el, n))
            for r, c, n in zip(records, ch, ln)]


def balance_cells(records: Sequence[Mapping[str, Any]], n_chars: int = 8, n_lines: int = 3,
                  seed: int = 0) -> list[dict[str, Any]]:
    """Per label, the same positive rate in every (layout, length, line-count) cell (recipe v3, issue 21).

    Cells: the layout as detected (:func:`layout.layout_of`) x ``n_chars`` quantile bins of the length in
    characters x ``n_lines`` quantile bins of the number of lines (the features of the corpus's
    length+layout shortcut check). For each label, the target rate is its positive share over the records
    where it is known; in a cell above it, randomly chosen positives have that label set unknown
    (``None``: masked out of the loss, never flipped), below it negatives; a cell with only positives or
    only negatives is masked whole (a label known in one class only over the whole corpus is left as it
    is). Texts and other labels are untouched; each masked label is listed in
    the record's ``balanced_out``. A label's known records then carry no information in their length or
    layout cell.

    Returns:
        new records (copies), same order.
    """
    rng = random.Random(seed + 2)
    out = [{**r, "labels": dict(r["labels"]), "balanced_out": list(r.get("balanced_out") or [])} for r in records]
    cells = _cells(records, n_chars, n_lines)
    for k in LABELS:
        known = [i for i, r in enumerate(out) if r["labels"][k] is not None]
        if not known:
            continue
        rate = sum(out[i]["labels"][k] for i in known) / len(known)
        if rate in (0.0, 1.0):  # one class only: nothing a cell could predict
            continue
        by: dict[tuple[str, int, int], tuple[list[int], list[int]]] = {}
        for i in known:
            by.setdefault(cells[i], ([], []))[out[i]["labels"][k]].append(i)
        for cell in sorted(by):
            neg, pos = by[cell]
            if not neg or not pos:
                drop = neg + pos
            elif len(pos) / (len(pos) + len(neg)) > rate:
                keep = max(1, round(len(neg) * rate / (1 - rate)))
                drop = rng.sample(pos, len(pos) - keep) if keep < len(pos) else []
            else:
                keep = max(1, round(len(pos) * (1 - rate) / rate))
                drop = rng.sample(neg, len(neg) - keep) if keep < len(neg) else []
            for i in drop:
                out[i]["labels"][k] = None
                out[i]["balanced_out"].append(k)
    return out


def build_offline_corpus(bases: Sequence[Base], per_base: int = 3, pair_rate: float = 0.25, seed: int = 0,
                         layouts: bool = True, twins: bool = True, carrier_twins: bool = True,
                         balance: bool = True) -> list[dict[str, Any]]:
    """The corpus: each base as is (when any label is known) plus ``per_base`` injected variants.

    Each variant injects one pattern (chosen round-robin from a seeded shuffle); with probability
    ``pair_rate`` a second, different pattern is injected on top (labels of both are 1). The labels of a
    variant start from the base's known labels and are overridden by what the injections set.

    Recipes (issue 21; v1 = ``layouts=False, twins=False, carrier_twins=False, balance=False``; v2 =
    ``carrier_twins=False, balance=False``: twins only for clean bases, each in a layout of its own; v3 =
    the default):

    - ``layouts``: every record is rendered in a layout (``layout.LAYOUTS``: prose, ``Step N:``,
      markdown, code block) drawn independently of its labels, so layout predicts no label;
    - ``twins``: every injected variant of a clean base gets a clean twin; ``carrier_twins`` (v3): every
      injected variant of any base, and every wrong chain, gets a clean twin of about the same length
      in the *same* layout (:func:`clean_twin`): from the base itself when it is clean, else from the gold
      solution of the same item (a model response's TabMWP / MATH-Vision solution, a wrong chain's
      MR-GSM8K reference), else from a clean base drawn at random;
    - ``balance``: :func:`balance_cells` masks labels so each (layout, length, line-count) cell has the
      same positive rate per label.

    Returns:
        records ``{uid, question, response, labels: {label: 0|1|None}, origin, recipe, layout}``
        (+ ``balanced_out``: the labels masked by ``balance``).
    """
    rng = random.Random(seed)
    lay = random.Random(seed + 1)
    v3 = twins and carrier_twins  # v3's twins: every carrier, same layout as the sibling
    clean_by_item = {b.uid: b for b in bases if b.clean and b.answer and b.origin != "bare_answer"}
    clean_pool = sorted(clean_by_item)

    def pick() -> str | None:
        return lay.choice(LAYOUTS) if layouts else None

    def add_twin(b: Base, text: str, layout: str | None) -> None:
        tb = _twin_base(b, v3, clean_by_item, clean_pool, rng) if twins else None
        if tb is None:
            return
        twin = clean_twin(tb, len(text), rng)
        if twin is not None:
            out.append({**_record(b, twin, CLEAN, "twin", layout if v3 else pick()), "twin_of": tb.uid})

    out: list[dict[str, Any]] = []
    for b in bases:
        if any(v is not None for v in b.labels.values()):
            lay_b = pick()
            out.append(_record(b, b.text, b.labels, "none", lay_b))
            if v3 and not b.clean:  # a wrong chain: its item's reference, same length and layout
                add_twin(b, out[-1]["response"], lay_b)
        kinds = list(LABELS)
        rng.shuffle(kinds)
        for j in range(per_base):
            got = _inject_variant(b, kinds[j % len(kinds)], pair_rate, rng)
            if got is None:
                continue
            text, labels, recipe = got
            lay_v = pick()
            out.append(_record(b, text, labels, recipe, lay_v))
            if b.clean or v3:
                add_twin(b, out[-1]["response"], lay_v)
    return balance_cells(out, seed=seed) if balance else out


def _twin_base(b: Base, v3: bool, clean_by_item: Mapping[str, Base], clean_pool: Sequence[str],
               rng: random.Random) -> Base | None:
    """The clean base a twin of ``b`` is cut from: ``b`` itself when clean; else (v3 only) the clean base of
    the same item, else one drawn from ``clean_pool``; None when there is none."""
    if b.clean:
        return b
    if not v3:
        return None
    own = clean_by_item.get(_item_key(b) or "")
    return own if own is not None else clean_by_item[rng.choice(clean_pool)] if clean_pool else None


def _inject_variant(b: Base, first: str, pair_rate: float, rng: random.Random
                    ) -> tuple[str, dict[str, int | None], str] | None:
    """One injected variant of ``b``: ``(text, labels, recipe)`` with pattern ``first`` injected and, with
    probability ``pair_rate``, a second one (not ``pr``) on top (``recipe`` "first+second"); the labels start
    from the base's and take what the injections set (the second's 1s, and the labels still unknown). None
    when ``first`` does not apply to ``b``."""
    got = INJECTORS[first](b, rng)
    if got is None:
        return None
    text, set1 = got
    labels = {**b.labels, **set1}
    recipe = first
    if rng.random() < pair_rate:
        second = rng.choice([k for k in LABELS if k != first and k != "pr"])
        got2 = INJECTORS[second](Base(b.uid, b.question, text, b.answer, b.origin, labels), rng)
        if got2 is not None:
            text, set2 = got2
            labels = {**labels, **{k: v for k, v in set2.items() if v == 1 or labels.get(k) is None}}
            recipe = f"{first}+{second}"
    return text, labels, recipe


def corpus_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"n", "by_origin", "by_recipe", "by_layout", "labels": {label: {"pos", "neg", "unknown"}}, "clean"}``."""
    recs = list(records)
    c: dict[str, Any] = {"n": len(recs), "by_origin": {}, "by_recipe": {}, "by_layout": {},
                         "labels": {k: {"pos": 0, "neg": 0, "unknown": 0} for k in LABELS}, "clean": 0}
    for r in recs:
        c["by_origin"][r["origin"]] = c["by_origin"].get(r["origin"], 0) + 1
        c["by_recipe"][r["recipe"]] = c["by_recipe"].get(r["recipe"], 0) + 1
        lay = r.get("layout") or "prose"
        c["by_layout"][lay] = c["by_layout"].get(lay, 0) + 1
        for k in LABELS:
            v = r["labels"][k]
            c["labels"][k]["unknown" if v is None else ("pos" if v else "neg")] += 1
        c["clean"] += all(r["labels"][k] == 0 for k in LABELS)
    return c
