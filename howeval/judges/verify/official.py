r"""Each source's own criterion, as its official scorer applies it (issue 41; SPEC §1: "following each source
task's own criteria").

The answer-type rules (``choice.py``, ``numbers.py``, ``free_form.py``) decide first. Where a source
publishes its scorer, :func:`apply_source_criterion` then applies that scorer's rule as its code does, on the
rows the rules leave open or where the scorer decides otherwise by design, and says so on the row
(``VerifyResult.method``):

- ``"nearest_option"``: MathVista maps an extraction that is no option letter to its **nearest choice by
  Levenshtein distance** and scores that choice (``get_most_similar`` in ``evaluation/calculate_score.py``,
  github.com/lupantech/MathVista @ 53d5258a): a verdict reached this way is ``method="nearest_option"`` and its
  reason names the extraction, the choice and the distance.
- ``"source_rule"``: any other verdict taken from a source's scorer: MathVista's integer/float normalization
  (``int(float(x))``, ``round(float(x), precision)``, then string equality, ``safe_equal``), MATH-Vision's
  answer extraction and ``is_equal`` (``evaluation/evaluate.py`` and ``evaluation/utils.py``,
  github.com/mathllm/MATH-V @ a1f5cc3a).

Sources with a criterion here (:data:`SOURCE_CRITERIA`, keyed by :func:`source_key`): MathVista, MATH-Vision,
TabMWP (PromptPG ``extract_prediction`` / ``normalize_answer``, github.com/lupantech/PromptPG @ 914db772, on the
rows the rules leave open; its number rule is also the ``integer_number`` / ``decimal_number`` rule of
``numbers.py``). PuzzleVQA's scorer (declare-lab/LLM-PuzzleTest @ beea2300, ``PuzzleVQA/prompting.py``) asks the
model a second extraction question and reads the last ``(X)`` of that reply: without that call the answer-type
rules read the response. Bingo and CRYSTAL: no rule scorer (Bingo is judged by people / GPT-4); the rules apply. The departures that remain are listed in
``docs/metrics.md`` ("Each source's own criterion").
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from howeval.judges.verify.answer import find_candidate, strip_trailing
from howeval.judges.verify.choice import as_options, option_letter
from howeval.judges.verify.mathexpr import math_equal
from howeval.judges.verify.numbers import lenient_number
from howeval.judges.verify.result import METHOD_RULE, VerifyResult
from howeval.parsing.answers import last_sentence
from howeval.parsing.text import NUMBER_WORDS

__all__ = [
    "METHOD_NEAREST_OPTION",
    "METHOD_SOURCE_RULE",
    "SOURCE_CRITERIA",
    "apply_source_criterion",
    "levenshtein",
    "mathv_extract",
    "mathv_find_math_answer",
    "mathv_is_equal",
    "mathvista_most_similar",
    "tabmwp_extract",
    "tabmwp_normalize",
    "tabmwp_similarity",
    "row_source",
    "source_key",
]

METHOD_NEAREST_OPTION = "nearest_option"
"""A verdict reached by mapping the extraction to its nearest option (MathVista ``get_most_similar``)."""
METHOD_SOURCE_RULE = "source_rule"
"""A verdict taken from a source's own scorer code (MathVista normalization, MATH-Vision ``evaluate.py``)."""

MAX_EXTRACTION_CHARS = 400
"""Longer extractions are not mapped to an option (MathVista's GPT extraction is a short answer; a longer text
here means the rules found no answer): they stay unresolved for the LLM judge."""

MATHVISTA_REF = "lupantech/MathVista@53d5258a evaluation/calculate_score.py"
MATHV_REF = "mathllm/MATH-V@a1f5cc3a evaluation/evaluate.py"


def source_key(source: str | None) -> str | None:
    """The criterion key of a source name, or None: lower case, letters and digits only, ``[...]`` suffixes
    and a ``testmini`` / ``test`` split dropped.

    >>> source_key("MathVista"), source_key("MATH-Vision testmini"), source_key("math-v"), source_key("TabMWP test1k")
    ('mathvista', 'mathvision', 'mathvision', 'tabmwp')
    >>> source_key("PuzzleVQA") is None
    True
    """
    if not source:
        return None
    k = re.sub(r"[^a-z0-9]", "", re.sub(r"\b(testmini|test\w*|dev\w*|val|train)\b", "", source.lower()))
    k = {"mathv": "mathvision"}.get(k, k)
    return k if k in SOURCE_CRITERIA else None


def row_source(row: dict) -> str | None:
    """The source a response row's criterion follows: its ``source``, else its ``sample_id`` prefix when that
    names a source with a criterion (``"mathvista:12"``, ``"math-vision:4"``), else its ``benchmark``.

    >>> row_source({"sample_id": "math-vision:4", "benchmark": "demo"}), row_source({"benchmark": "demo"})
    ('math-vision', 'demo')
    """
    if row.get("source"):
        return str(row["source"])
    prefix = str(row.get("sample_id") or "").split(":")[0]
    if source_key(prefix):
        return prefix
    b = row.get("benchmark")
    return None if b is None else str(b)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute; each cost 1), as ``Levenshtein.distance``.

    >>> levenshtein("kitten", "sitting"), levenshtein("", "ab"), levenshtein("97", "97")
    (3, 2, 0)
    """
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def mathvista_most_similar(extraction: str, choices: Sequence[str]) -> tuple[int, str, int]:
    """MathVista's ``normalize_extracted_answer`` for a ``multi_choice`` item: ``(choice index, how, distance)``.

    As the official code: the first ``(X)`` letter in the extraction replaces it; a letter among A.. (one per
    choice) picks that choice (distance 0); otherwise the choice at the least Levenshtein distance, the first
    on ties (``get_most_similar``).

    >>> mathvista_most_similar("92.5", ["97", "102", "107", "122"])
    (0, 'nearest option', 3)
    >>> mathvista_most_similar("(C) Yes (D) No", ["Yes", "No"])
    (1, 'nearest option', 2)
    >>> mathvista_most_similar("(B) 102", ["97", "102"])
    (1, 'letter', 0)
    """
    if not choices:
        raise ValueError("no choices to map to")
    ext = extraction.strip()
    letters = re.findall(r"\(([a-zA-Z])\)", ext)
    if letters:
        ext = letters[0].upper()
    seq = [option_letter(i) for i in range(len(choices))]
    if ext in seq:
        return seq.index(ext), "letter", 0
    dists = [levenshtein(ext, c) for c in choices]
    i = dists.index(min(dists))
    return i, "nearest option", dists[i]


_BOILERPLATE_RE = re.compile(
    r"^\W*(?:do you have (?:any )?other questions|is there anything else|let me know|i hope (?:this|that|it) helps"
    r"|feel free|please let me know|if you have (?:any )?(?:other|more|further) questions)", re.IGNORECASE)
_DECLINE_RE = re.compile(
    r"\b(?:cannot|can\s?not|can't|unable to|impossible to|not possible to)\s+(?:be\s+)?(?:provide|answer|determin|tell"
    r"|calculat|find|solv|giv|identif|deduc)|\bnot (?:enough|sufficient) (?:information|context)\b"
    r"|\binformation (?:provided |given )?is (?:insufficient|not sufficient)\b|\bnot (?:an|one of the) options?\b"
    r"|\bnone of the (?:options|choices)\b|\b(?:option|answer) is not (?:available|among|in|listed)\b"
    r"|\bmistake in the (?:question|problem|options|choices)\b", re.IGNORECASE)
_NUM_TOKEN_RE = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?(?![\w])|(?<![\w.])[-+]?\.\d+%?(?![\w])")
_BOUND_RE = re.compile(r"\b(?:less|more|greater|fewer|larger|smaller|higher|lower)\s+than\s*$|\bat\s+(?:least|most)\s*$"
                       r"|\b(?:over|under|above|below|exceed(?:s|ing)?)\s*$|[<>≤≥]\s*$", re.IGNORECASE)
_NUMBER_WORD_RE = re.compile(r"\b(?:" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_ZH_ANSWER_RE = re.compile(r"答案(?:是|为)[:：]?\s*(.+?)\s*[。.]?\s*$", re.MULTILINE)


def final_text(response: str) -> str:
    """The response without trailing conversational lines ("Do you have other questions or requests?",
    "I hope this helps"): the part whose last sentence states the answer.

    >>> final_text("The answer is **46%**.\\n\\nDo you have other questions or requests?")
    'The answer is **46%**.'
    """
    lines = [ln for ln in response.strip().splitlines()]
    while lines and (not lines[-1].strip() or _BOILERPLATE_RE.match(lines[-1])):
        lines.pop()
    return "\n".join(lines).strip()


def declines(response: str) -> bool:
    """True when the response's last paragraph says the question cannot be answered or no option fits ("The
    solution cannot be provided as ...", "31 is not an option in the choices", "There might be a mistake in
    the question").

    >>> declines("The solution cannot be provided as the function is not given."), declines("It is 4.")
    (True, False)
    """
    last = final_text(response).split("\n\n")[-1]
    return _DECLINE_RE.search(last) is not None


def sentence_value(response: str) -> str | None:
    """The value the response's final sentence states, in the manner of MathVista's extraction demos
    (``evaluation/prompts/ext_ans.py``: "The number missing in the sequence is 14." -> 14; "Luca needs $1.45 to
    buy ..." -> 1.45): the sentence's only number (a bound it restates, "less than 8", "at least 60", is not one;
    with no other number, its only number word: "two" -> 2), else the number that follows its last "is" / "=" /
    "are" / "was", else None.

    >>> sentence_value("The value of f(4) is 3."), sentence_value("So 81 - 35 = **46%**.")
    ('3', '46%')
    >>> sentence_value("It rose between 2007 and 2008.") is None, sentence_value("Both score less than 8.") is None
    (True, True)
    >>> sentence_value("There are two people who did at least 60 push-ups.")
    '2'

    """
    last = last_sentence(final_text(response)) or ""
    last = last.replace("**", "").replace("$", "")
    nums = list(_NUM_TOKEN_RE.finditer(last))
    # "less than 8", "at least one": a bound the sentence restates, not the value it states
    free = [m for m in nums if not _BOUND_RE.search(last[: m.start()])]
    if len(nums) == 1 and free:
        return nums[0].group(0)
    if not free:  # no digits, or only bounds: the one number word left ("There are two people who did at least 60")
        words = [m for m in _NUMBER_WORD_RE.finditer(last) if not _BOUND_RE.search(last[: m.start()])]
        if len(words) == 1:
            return str(NUMBER_WORDS[words[0].group(0).lower()])
    m = re.search(r"(?:\bis|\bare|\bwas|\bequals|=|≈)\s*(?:approximately\s+|about\s+)?([^\s,;]+)[\s.]*$", last)
    if m and _NUM_TOKEN_RE.fullmatch(m.group(1).rstrip(".")):
        return m.group(1).rstrip(".")
    return None


def _mathvista_extraction(response: str, rule: VerifyResult) -> tuple[str | None, str]:
    """``(extraction, how)`` the MathVista criterion maps: the rules' extracted answer; else the quick
    extractions of ``evaluation/extract_answer.py`` (``The answer is "(.*)".``), a Chinese "答案是 X" (GeoQA+
    items), a candidate of the trailing-boilerplate-free text, the final sentence's value
    (:func:`sentence_value`, after the extraction demos); else, for an echoed option list, the last sentence;
    else ``(None, why)`` (MathVista asks GPT here)."""
    if rule.extracted:
        return rule.extracted, "rules"
    r = response.strip()
    m = re.search(r'The answer is "(.*)"\.', r)
    if m:
        return m.group(1), "quick extraction"
    m = _ZH_ANSWER_RE.search(r)
    if m:
        return m.group(1), "答案是"
    cand, _src = find_candidate(final_text(r))
    if cand:
        return cand, "final text"
    if declines(r):
        return None, "declines"
    val = sentence_value(r)
    if val:
        return val, "final sentence value"
    if "ambiguous: names options" in rule.reason:
        return strip_trailing(last_sentence(r) or ""), "echoed option list"
    return None, "no extraction"


def _declined(rule: VerifyResult, gold: str, ref: str) -> VerifyResult:
    return VerifyResult(False, None, METHOD_SOURCE_RULE,
                        f"declines: the response says the question cannot be answered or no option fits; scored "
                        f"wrong as a refusal (gold {gold!r}; rules: {rule.reason}) [{ref}]")


def _mathvista(response: str, gold: str | None, answer_type: str, options: Sequence[str] | None,
               rule: VerifyResult, meta: dict) -> VerifyResult:
    """MathVista (lupantech/MathVista @ 53d5258a, ``evaluation/calculate_score.py``): where the rules name no
    option, the extraction's nearest choice; integer and float answers normalized as the scorer does."""
    if gold is None or rule.method != METHOD_RULE:
        return rule
    if answer_type == "multiple_choice":
        opts = as_options(list(options) if options else None)
        if not opts or (rule.correct is not None and rule.reason.startswith("picked ")):
            return rule  # the rules named an option (letter or exact text: the official mapping too)
        if rule.correct is False and rule.extracted is None:
            return rule  # empty response / refusal: MathVista's empty extraction maps to the shortest choice; not copied
        ext, how_ext = _mathvista_extraction(response, rule)
        if how_ext == "declines":
            return _declined(rule, gold, MATHVISTA_REF)
        if not ext or len(ext) > MAX_EXTRACTION_CHARS:
            return rule
        i, how, d = mathvista_most_similar(ext, opts)
        gi = _gold_index(gold, opts)
        ok = opts[i] == opts[gi] if gi is not None else opts[i] == gold
        method = METHOD_NEAREST_OPTION if how == "nearest option" and d > 0 else METHOD_SOURCE_RULE
        return VerifyResult(ok, ext, method,
                            f"MathVista: extraction ({how_ext}) {ext[:80]!r} -> {option_letter(i)} ({opts[i]}) by "
                            f"{how}{f' (Levenshtein {d})' if how == 'nearest option' else ''}; gold {gold!r}; "
                            f"rules: {rule.reason} [{MATHVISTA_REF}]")
    if answer_type in ("integer_number", "decimal_number"):
        ext, how_ext = rule.extracted, "rules"
        if ext is None and rule.correct is None:
            ext, how_ext = _mathvista_extraction(response, rule)
            if how_ext == "declines":
                return _declined(rule, gold, MATHVISTA_REF)
        if ext is None:
            return rule
        num = lenient_number(ext)
        if num is None:
            return rule
        x = float(num[0])
        if answer_type == "integer_number":
            pred, how = str(int(x)), "int(float(x))"
        else:
            prec = meta.get("precision")
            try:
                places = int(float(prec)) if prec not in (None, "", "None") else None
            except (TypeError, ValueError):
                places = None
            if places is None:
                return rule  # no precision given: the rules' rounding (to the gold's places) stands
            pred, how = str(round(x, places)), f"round(float(x), {places})"
        ok = pred == gold
        if how_ext == "rules" and ok == rule.correct:
            return rule
        return VerifyResult(ok, ext, METHOD_SOURCE_RULE,
                            f"MathVista: extraction ({how_ext}) {ext[:80]!r}, {how} = {pred!r} "
                            f"{'==' if ok else '!='} gold {gold!r} (rules: {rule.reason}) [{MATHVISTA_REF}]")
    if answer_type == "free_form" and rule.correct is None and re.fullmatch(r"\[.*\]", gold.strip()):
        # a 'list' answer: str(extraction) == answer; the extraction demo reads "between 2007 and 2008" as
        # [2007, 2008]: the final sentence's numbers, in order, as a Python list
        last = (last_sentence(final_text(response)) or "").replace("**", "").replace("$", "")
        nums = [m.group(0) for m in _NUM_TOKEN_RE.finditer(last)]
        if len(nums) < 2:
            return rule
        pred = "[" + ", ".join(nums) + "]"
        ok = pred == gold.strip()
        return VerifyResult(ok, pred, METHOD_SOURCE_RULE,
                            f"MathVista: list extraction (final sentence) {pred!r} {'==' if ok else '!='} gold "
                            f"{gold!r} (rules: {rule.reason}) [{MATHVISTA_REF}]")
    return rule


def _gold_index(gold: str, opts: Sequence[str]) -> int | None:
    g = gold.strip()
    if len(g) == 1 and "A" <= g.upper() <= option_letter(len(opts) - 1):
        return ord(g.upper()) - ord("A")
    return opts.index(g) if g in opts else None


# --- MATH-Vision: evaluation/evaluate.py and evaluation/utils.py, as the code does ---------------------------------

def _mathv_remove_right_units(s: str) -> str:
    return s.split("\\text{ ")[0]


def _mathv_fix_sqrt(s: str) -> str:
    if "\\sqrt" not in s:
        return s
    parts = s.split("\\sqrt")
    out = parts[0]
    for p in parts[1:]:
        out += ("\\sqrt{" + p[0] + "}" + p[1:]) if p and p[0] != "{" else "\\sqrt" + p
    return out


def _mathv_fix_fracs(s: str) -> str:
    subs = s.split("\\frac")
    out = subs[0]
    for sub in subs[1:]:
        out += "\\frac"
        if sub and sub[0] == "{":
            out += sub
            continue
        if len(sub) < 2:
            return s
        a, b = sub[0], sub[1]
        if b != "{":
            out += "{" + a + "}{" + b + "}" + sub[2:]
        else:
            out += "{" + a + "}" + b + sub[2:]
    return out


def _mathv_fix_a_slash_b(s: str) -> str:
    if len(s.split("/")) != 2:
        return s
    a, b = s.split("/")
    try:
        ia, ib = int(a), int(b)
    except ValueError:
        return s
    return f"\\frac{{{ia}}}{{{ib}}}" if s == f"{ia}/{ib}" else s


def _mathv_strip_string(s: str) -> str:
    s = s.replace("\n", "").replace("\\!", "").replace("\\\\", "\\").replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "").replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "")
    s = _mathv_remove_right_units(s)
    s = s.replace("\\%", "").replace("\\%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    if len(s.split("=")) == 2:
        s = s.split("=")[-1]
    if len(s.split("\\approx")) == 2:
        s = s.split("\\approx")[-1]
    if "sqrt" in s:
        s = _mathv_fix_sqrt(s)
    s = s.replace(" ", "")
    if "sqrt" in s:
        s = _mathv_fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _mathv_fix_a_slash_b(s)


def mathv_find_math_answer(s: str) -> str:
    r"""MATH-Vision's ``find_math_answer`` (``evaluation/utils.py``): the last ``\boxed{...}`` (greedy, as the
    code's ``oxed{(.*)}``), else the whole string, lower-cased and stripped of LaTeX decorations and units.

    >>> mathv_find_math_answer(r"so \boxed{15^{\circ}}"), mathv_find_math_answer("x = 0.5")
    ('15', '\\frac{1}{2}')
    """
    s = s.lower()
    if "{}" in s:
        s = s.replace("{}", "")
    found = re.findall(r"oxed{(.*)}", s, flags=re.S)
    ans = found[-1] if found else s
    if ans.find("}") != -1 and (ans.find("{") == -1 or ans.find("}") < ans.find("{")):
        ans = ans.split("}")[0]
    ans = ans.split("=")[-1].split("\\approx")[-1]
    ans = ans.replace(" ", "").replace("\\,", "").replace("∞", "\\infty")
    ans = ans.replace("+\\infty", "\\infty").replace("\\\\", "\\").replace("\n", "")
    ans = ans.replace("\\text", "").replace("\\mbox", "").replace("bmatrix", "pmatrix")
    ans = ans.replace("\\left", "").replace("\\right", "").replace("^{\\circ}", "")
    ans = ans.replace("^\\circ", "").replace("{m}^3", "").replace("m^3", "")
    ans = ans.replace("{units}", "").replace("units", "").replace("{km}", "").replace("km", "")
    return _mathv_strip_string(ans)


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def mathv_extract(response: str) -> str:
    """MATH-Vision's ``model_answer`` of a response (``evaluate.py``, ``regen_answer=True``), as the code does:
    a trailing/leading option letter, a number after the last "is ", the text after "the (final|correct) answer
    is / should be" (its first line and sentence) unless a ``\\boxed`` is present (then the last box), then
    :func:`mathv_find_math_answer` and the ``(a)`` -> ``a`` clean-up.

    >>> mathv_extract("The bike with the highest price is bike A.\\n\\\\boxed{A}")
    'a'
    >>> mathv_extract("Therefore, the answer is 60.")
    '60'
    """
    m = response.strip()
    for c in "ABCDE":
        if (m.endswith(f" {c}.") or m.endswith(f" ({c}).") or m.startswith(f"{c}\n") or m.startswith(f"({c})\n")
                or m.startswith(f"({c}) {c}\n")):
            m = c
    if _is_number(m.split("is ")[-1].rstrip(".")):
        m = m.split("is ")[-1].rstrip(".")
    if "oxed{" not in m:
        for flag in ["the final answer is", "the answer is", "the correct answer is", "the answer should be"]:
            raw = m
            m = m.split(flag)[-1].strip()
            if flag in raw:
                m = m.split("\n")[0].split(". ")[0]
            flag = flag.replace("the", "The")
            raw = m
            m = m.split(flag)[-1].strip()
            if flag in raw:
                m = m.split("\n")[0].split(". ")[0]
    elif m.count("oxed{") > 1:
        m = "\\boxed{" + m.split("oxed{")[-1]
    m = mathv_find_math_answer(m)
    for x in "abcde":
        m = m.replace(f"({x})", x).replace("{" + x + "}", x)
    return m.rstrip(".").lstrip(":").strip()


def mathv_is_equal(asw: str, gt: str) -> bool:
    """MATH-Vision's ``is_equal(asw, gt_asw)``: lower-cased, stripped string equality; then numeric equality to
    2 decimals. The official code evaluates both sides with ``latex2sympy`` and ``eval``; here a side is read
    by the project's number reader, and a non-number pair by guarded math-verify equivalence (a departure:
    ``docs/metrics.md``). ``eval_tuple`` (tuples rounded element-wise) is not ported: tuples compare as text.

    >>> mathv_is_equal("a", "A"), mathv_is_equal("0.333", "\\\\frac{1}{3}"), mathv_is_equal("", "3")
    (True, True, False)
    """
    a, g = asw.lower(), gt.lower()
    if not a.replace(" ", "") or not g.replace(" ", ""):
        return False
    if a.strip() == g.strip():
        return True
    na, ng = lenient_number(a), lenient_number(g)
    if na is not None and ng is not None and not na[1] and not ng[1]:
        return round(float(na[0]), 2) == round(float(ng[0]), 2)
    if len(a) <= 60 and len(g) <= 60:
        try:
            return bool(math_equal(g, a))
        except Exception:  # noqa: BLE001 - the official code's bare except: any failure is "not equal"
            return False
    return False


_IMAGE_TOKEN_RE = re.compile(r"(?:<image\s*\d*>\s*)+", re.IGNORECASE)


def _mathv(response: str, gold: str | None, answer_type: str, options: Sequence[str] | None,
           rule: VerifyResult, meta: dict) -> VerifyResult:
    """MATH-Vision (mathllm/MATH-V @ a1f5cc3a, ``evaluation/evaluate.py``): decides what the rules leave open.

    The official scorer gives every response a verdict: ``correct = is_equal(gold, model_answer) or
    is_equal(gold option value, model_answer)``. Applied to the rows the rules leave unresolved (rules decide
    first: they also accept ``15^\\circ`` for option ``$15^{\\circ}$``, which the official comparison refuses).
    """
    if gold is None or rule.correct is not None or rule.method != METHOD_RULE:
        return rule
    if "program artefact" in rule.reason and not _IMAGE_TOKEN_RE.fullmatch(response.strip()):
        return rule  # a failed call upstream, never scored as an answer (an echoed "<image1>" is the model's text)
    model_answer = mathv_extract(response)
    opts = as_options(list(options) if options else None)
    gi = _gold_index(gold, opts) if opts else None
    gold_value = opts[gi] if gi is not None else ""
    ok = mathv_is_equal(model_answer, gold) or (bool(gold_value) and mathv_is_equal(model_answer, gold_value))
    shown = model_answer if len(model_answer) <= 80 else model_answer[:77] + "..."
    return VerifyResult(ok, model_answer or None, METHOD_SOURCE_RULE,
                        f"MATH-Vision: model_answer {shown!r} {'matches' if ok else 'matches neither'} gold "
                        f"{gold!r}{f' / {gold_value!r}' if gold_value else ''} (rules: {rule.reason}) [{MATHV_REF}]")


# --- TabMWP: PromptPG run_gpt3/utilities.py extract_prediction and run_gpt3.py normalize_answer --------------------

TABMWP_REF = "lupantech/PromptPG@914db772 run_gpt3/utilities.py"
_TABMWP_MC = [r"^\(([A-Za-z])\)$", r"^([A-Za-z])$", r"^([A-Za-z]). ", r"[Th]he answer is ([A-Z])",
              r"^\(([A-Za-z])\) [\s\S]+$", r"[Th]he answer is \(([A-Za-z])\) [\s\S]+$"]
_TABMWP_FREE = [r"[Th]he answer is ([\s\S]+)$", r"[Th]he table shows that ([\d\$\.\,\/\:]+) ",
                r" = ([\d\$\.\,\/\:]+)", r"(?<= be| is) ([\-\d\$\.\,\/\:]{0,}[\d]+)",
                r"(?<= are| was) ([\-\d\$\.\,\/\:]{0,}[\d]+)", r"(?<= were) ([\-\d\$\.\,\/\:]{0,}[\d]+)",
                r" ([\d\$\.\,\/\:]+ [AP]\.M\.)", r"([\-\d\$\.\,\/\:]{0,}[\d]+)"]


def tabmwp_similarity(a: str, b: str) -> float:
    """PromptPG's ``score_string_similarity``: 2 for equal strings, else the share of shared words (over the longer)
    when either has a space, else 0.

    >>> tabmwp_similarity("April", "April"), tabmwp_similarity("the answer is April", "April is")
    (2.0, 0.5)
    """
    if a == b:
        return 2.0
    if " " in a or " " in b:
        sa, sb = a.split(" "), b.split(" ")
        return len(set(sa) & set(sb)) / max(len(sa), len(sb))
    return 0.0


def tabmwp_extract(output: str, options: Sequence[str] | None) -> tuple[str | None, str]:
    """PromptPG's ``extract_prediction`` (``run_gpt3/utilities.py``): ``(prediction, how)``.

    With options: the first letter pattern that matches ("(B)", "B", "The answer is B", ...) picks its option; else
    the option of greatest word overlap (``how`` names the score). A letter past the options (PromptPG picks a random
    option) and a best overlap of 0 (``argmax`` picks the first option) give ``(None, why)`` here. Without options:
    the last match of the first pattern that matches ("The answer is X", "= X", "is X", a number), else the output.

    >>> tabmwp_extract("The answer is B", ["9", "10"]), tabmwp_extract("He will pay $1.40 in all", None)
    (('10', 'letter'), ('$1.40', 'pattern'))
    """
    out = re.sub(r"\$?\\frac\{([\d\.\,\-]+)\}\{([\d\.\,]+)\}\$?", r"\1/\2", output)
    out = re.sub(r"(?<![AP]\.M)\.$", "", out)
    out = re.sub(r"(?<=\d)[\=](?=[\-\$\d])", " = ", out)
    out = out.replace("\u2212", "-")
    if options:
        for pat in _TABMWP_MC:
            res = re.findall(pat, out)
            if res:
                i = ord(res[0].upper()) - ord("A")
                if 0 <= i < 6:
                    if i >= len(options):
                        return None, f"letter {res[0].upper()} past the options (PromptPG picks one at random)"
                    return options[i], "letter"
        scores = [tabmwp_similarity(str(o), out) for o in options]
        best = max(scores)
        if best <= 0:
            return None, "no option shares a word (PromptPG's argmax picks the first option)"
        return options[scores.index(best)], f"nearest option (word overlap {best:.2f})"
    for pat in _TABMWP_FREE:
        res = re.findall(pat, out)
        if res:
            pred = res[-1].strip()
            return (pred[:-1] if pred.endswith(".") and ".M." not in pred else pred), "pattern"
    return out, "whole output"


def tabmwp_normalize(text: str, unit: str | None = None) -> str:
    """PromptPG's ``normalize_answer`` (``run_gpt3/run_gpt3.py``): a number to its canonical string (fractions and
    decimals rounded to 3 places), a text without its unit.

    >>> tabmwp_normalize("$1,000"), tabmwp_normalize("3/4"), tabmwp_normalize("56.4500")
    ('1000', '0.75', '56.45')
    """
    text = re.sub(r"^[\$]", "", text)
    text = re.sub(r"[\,\.\,\/]$", "", text)
    if re.match(r"^[-+]?[\d,./]+$", text) is not None:
        text = text.replace(",", "")
        try:
            if re.match(r"[-+]?\d+$", text) is not None:
                number = str(int(text))
            elif "/" in text:
                a, b = text.split("/")[:2]
                number = str(round(float(a) / float(b), 3))
            else:
                number = str(round(float(text), 3))
        except (ValueError, ZeroDivisionError):
            return text
        return re.sub(r"\.[0]+$", "", number)
    return text.replace(unit, "").strip() if unit else text


def _tabmwp(response: str, gold: str | None, answer_type: str, options: Sequence[str] | None,
            rule: VerifyResult, meta: dict) -> VerifyResult:
    """TabMWP (lupantech/PromptPG @ 914db772): on rows the rules leave open, PromptPG's extraction (letter patterns,
    else the option of greatest word overlap; free answers by its pattern cascade) and its normalized comparison."""
    if gold is None or rule.correct is not None or rule.method != METHOD_RULE or "program artefact" in rule.reason:
        return rule
    opts = [str(o) for o in options] if options else None
    pred, how = tabmwp_extract(response.strip(), opts)
    if pred is None:
        return VerifyResult(None, None, METHOD_RULE, f"{rule.reason}; TabMWP: {how} [{TABMWP_REF}]")
    g = gold
    if opts and len(gold) == 1 and "A" <= gold.upper() <= option_letter(len(opts) - 1):
        g = opts[ord(gold.upper()) - ord("A")]
    ok = tabmwp_normalize(pred).lower() == tabmwp_normalize(g).lower()
    method = METHOD_NEAREST_OPTION if how.startswith("nearest option") else METHOD_SOURCE_RULE
    shown = pred if len(pred) <= 80 else pred[:77] + "..."
    return VerifyResult(ok, pred, method, f"TabMWP: prediction {shown!r} by {how} {'==' if ok else '!='} gold {g!r} "
                                          f"(rules: {rule.reason}) [{TABMWP_REF}]")


CriterionFn = Callable[[str, "str | None", str, "Sequence[str] | None", VerifyResult, dict], VerifyResult]
SOURCE_CRITERIA: dict[str, CriterionFn] = {"mathvista": _mathvista, "mathvision": _mathv, "tabmwp": _tabmwp}
"""Source key (:func:`source_key`) -> criterion ``fn(response, gold, answer_type, options, rule verdict, meta)``."""


def apply_source_criterion(response: str, gold: str | None, answer_type: str, options: Sequence[str] | None,
                           source: str | None, rule: VerifyResult, meta: dict | None = None) -> VerifyResult:
    """The verdict after the source's own criterion: ``rule`` itself when the source has none
    (:data:`SOURCE_CRITERIA`) or it changes nothing, else a new verdict whose ``method`` is
    ``"nearest_option"`` or ``"source_rule"`` and whose reason cites the official code and the rules' reason.

    Args:
        meta: source fields the criterion reads: ``precision`` (MathVista ``float`` answers; None: the rules'
            rounding stands).
    """
    fn = SOURCE_CRITERIA.get(source_key(source) or "")
    if fn is None:
        return rule
    return fn(response, gold, answer_type, options, rule, dict(meta or {}))
