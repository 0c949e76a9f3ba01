"""A deterministic, surface-cue pattern judge: CoT leakage, Repetition, Contradiction, Performative reasoning.

The rule judge reads only the user-facing response y_m (and, optionally, the question and its options, to
map option letters to values). It is a cheap, reproducible baseline and a sanity check for LLM judges;
it sees form, not meaning. See ``docs/rule_judge.md`` for the cue list and its blind spots.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from howeval.judges.base import JudgeItem, as_judge_items
from howeval.judges.budget import DEFAULT_ITEM_BUDGET_S, BudgetExceeded, CpuDeadline
from howeval.judges.claims import Claim, as_number, disagreeing_pair, extract_claims, options_from_list, parse_options
from howeval.judges.sentences import (
    Sentence,
    clip_text,
    mask_code_and_quotes,
    mask_template,
    norm_sentence,
    normalize_newlines,
    split_sentences,
    word_tokens,
)
from howeval.judges.verdict import LABELS, PatternVerdict, make_verdict
from howeval.parsing.limits import InputTooLarge, check_text
from howeval.parsing.text import NUMBER_WORDS, boxed_spans

RULES_VERSION = "rules-1.1"
"""Bump when a cue or threshold changes: verdicts of different versions are not comparable."""



# ----------------------------------------------------------------------------------------------------
# Cue tables
# ----------------------------------------------------------------------------------------------------

_THINK_TAG = re.compile(r"</?\s*think(?:ing)?\s*>|<\|?(?:begin|end)_of_thought\|?>|◁/?think▷", re.IGNORECASE)

# (name, pattern, is_self_correction). Self-corrections supersede earlier answer claims (CoT priority).
_COT_CUES: list[tuple[str, re.Pattern[str], bool]] = [
    (name, re.compile(p, re.IGNORECASE), sc)
    for name, p, sc in [
        ("wait", r"(?:^|[\s(\"'])(?:but\s+|oh\s+|no,?\s+)?wait\s*(?:[,.!:—-]|a\s+(?:second|minute|moment))", True),
        ("hold on", r"\bhold on\b", True),
        ("hmm", r"\b(?:hmm+|hm+m|umm+|uh+m?)\b", False),
        ("oops", r"\boops\b", True),
        ("actually no", r"\bactually,?\s+(?:no|that'?s (?:not|wrong)|i\b|it'?s not|wait)", True),
        ("no wait", r"\bno,?\s+(?:that'?s|this is) (?:not right|wrong|incorrect)", True),
        ("on second thought", r"\bon second thought\b", True),
        ("made a mistake", r"\bI\s+(?:think\s+I\s+)?(?:made|make)\s+(?:a|an)\s+(?:mistake|error)\b|\bI\s+was\s+wrong\b|\bI\s+mis(?:counted|read|calculated)\b", True),
        ("let me re-check", r"\blet\s+me\s+(?:re-?check|double[- ]?check|re-?examine|re-?evaluate|re-?consider|re-?think|re-?count|re-?calculate|re-?compute|re-?read|verify|check\s+again|look\s+again|try\s+again|start\s+over|correct)\b", True),
        ("let me think", r"\blet\s+me\s+(?:think|see|figure|try|recall|start|first)\b|\blet'?s\s+see\b", False),
        ("user narration", r"\b(?:okay|ok|alright|so),?\s+(?:so,?\s+)?the\s+user\b|\bthe\s+user\s+(?:is\s+asking|asks|asked|wants|provided|gave)\b", False),
        ("first I need to", r"\b(?:first|now|next|okay|ok|so),?\s+I\s+(?:need|have|should|must|will)\s+(?:to\s+)?(?:figure|find|determine|check|make sure|understand|look|count|calculate|compute|recall|verify)\b", False),
        ("maybe I should", r"\b(?:maybe|perhaps)\s+I\s+(?:should|need|misread|miscounted|made)\b", True),
        ("draft marker", r"(?:^|\n)\s*(?:draft|scratch(?:pad| work)?|thinking|thought process|internal notes?)\s*:", False),
    ]
]

_STAGED = re.compile(
    r"\blet'?s\s+(?:analyze|analyse|solve|think|break|work|go|examine|reason|approach|look)\b[^.\n]*?"
    r"(?:step[- ]by[- ]step|one by one|carefully|systematically)"
    r"|\b(?:let'?s|we will|I will)\s+(?:analyze|analyse|examine|think about|reason about)\b"
    r"|\bstep[- ]by[- ]step\b",
    re.IGNORECASE,
)
_ASSERTIVE = re.compile(
    r"\bbased\s+on\s+(?:(?:a|my|our|the|this)\s+)?(?:careful|thorough|detailed|close|above|comprehensive)?\s*(?:analysis|observation|examination|reasoning|inspection|consideration)\b"
    r"|\b(?:by|after|upon|through)\s+(?:carefully\s+|closely\s+)?(?:careful\s+|thorough\s+|close\s+|detailed\s+)?(?:analy[sz]ing|analysis|examining|examination|observing|observation|inspection|inspecting|comparing|consideration|considering)\b"
    r"|\bcomparing\s+(?:the|these|all|each)\b"
    r"|\bwe\s+can\s+(?:clearly\s+|easily\s+)?(?:see|conclude|observe|deduce|infer)\s+that\b"
    r"|\bit\s+is\s+(?:clear|obvious|evident|apparent)\s+that\b"
    r"|(?:^|[.\n]\s*)(?:clearly|obviously|evidently),",
    re.IGNORECASE,
)
_CONCLUSION = re.compile(r"\b(?:therefore|thus|hence|so|consequently|in fact|this means|which means)\b", re.IGNORECASE)
_QUANTITY_WORDS = {**NUMBER_WORDS, "twice": 2, "double": 2, "triple": 3}
"""Words that state a quantity in prose (value known); "half" also counts as support (no value used)."""
_ARITH = re.compile(r"\d\s*(?:[-+×*/÷−]|\\times|\\cdot|\\div)\s*\(?\$?\d|=|\\frac|\bsum\s+of\b|\bproduct\s+of\b", re.IGNORECASE)


def _has_support(s: str) -> bool:
    """Concrete support: a number (digits or a number word), an equation, or quoted text."""
    s = re.sub(r"\\boxed\s*\{[^{}]*\}", " ", s)
    s = re.sub(r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s+is\b.*", " ", s, flags=re.IGNORECASE)
    if re.search(r"\d", s) or "=" in s:
        return True
    if re.search(r"\"[^\"]{2,}\"|“[^”]{2,}”", s):
        return True
    return any(w in _QUANTITY_WORDS or w == "half" for w in word_tokens(s))


_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")


def _numbers(s: str) -> list[float]:
    s = re.sub(r"\\boxed\s*\{[^{}]*\}", " ", s)
    out = [float(x.replace(",", "")) for x in re.findall(r"(?<![A-Za-z_])\d+(?:,\d{3})*(?:\.\d+)?", s)]
    out += [float(v) for w in word_tokens(s) if (v := _QUANTITY_WORDS.get(w)) is not None]
    return out


# ----------------------------------------------------------------------------------------------------
# The judge
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Trace:
    """What the CoT rule attributed to leaked deliberation (CoT-priority attribution)."""

    sentences: set[int]
    superseded_before: int  # character offset: answer claims before it belong to the leaked trace
    think_end: int  # offset where a <think> block ends (0 when none)


class RuleJudge:
    """Deterministic surface-cue pattern judge over the user-facing response y_m (SPEC section 1).

    ``judge_batch(items)`` (the judge protocol) and ``judge(question, response, options=None)`` return a
    :class:`PatternVerdict` with the four labels and, per positive label, the evidence span. The same input
    always gives the same verdict.

    Cues, per label (thresholds are class attributes):

    - **cot** (CoT leakage): thinking tags (``<think>``, ``</think>``, ...); self-correction and
      deliberation markers in the answer ("wait,", "hold on", "hmm", "actually, no", "oops",
      "on second thought", "I made a mistake", "let me re-check / double-check / reconsider / recount",
      "let me think / let's see", "maybe I should"); narration of the task ("okay, so the user ...",
      "first, I need to figure out ..."); draft labels ("Draft:", "Scratch:").
      *Cannot see*: leaked deliberation written in polished prose without markers (redundant
      intermediate analysis, exploratory dead ends), which the paper also counts as CoT.
    - **rep** (Repetition): (1) the same sentence (normalized: case, punctuation, list markers; at
      least ``min_dup_words`` non-numeric words) twice or more; (2) ``min_template_repeats`` or more sentences of
      at least ``min_template_words`` words with the same template once numbers, single letters and
      inline math are masked (copy-paste structure); (3) a block of ``ngram_long`` tokens twice, or of
      ``ngram_short`` tokens ``min_template_repeats`` times; (4) the same final answer stated
      ``min_conclusion_repeats`` or more times, or the same ``\\boxed{}`` back to back (nothing but
      spaces or punctuation between) ``min_template_repeats`` or more times (``\\boxed{1} `` x 20,000:
      no sentence, no claim but the last, no token once boxes are masked). Stating a conclusion twice is
      treated as limited emphasis, not Rep. *Cannot see*: paraphrased repetition of the same content in different words.
    - **con** (Contradiction): two final-answer claims (the last ``\\boxed{}``, other boxes in a
      sentence that mentions the answer, "the answer is X", "answer: X") that are definitely
      different: different option letters, different numbers, different strings; an option letter is
      compared with a value only when the options are known (``options``, option lines in the question,
      or a short option list echoed in the response); otherwise the pair is not counted. Also a
      sentence and its negation both asserted ("X is possible" / "X is not possible"), and yes vs no as
      answers. *Cannot see*: semantic contradictions (a worked value that disagrees with the stated
      answer, "there are more grey squares" vs "1 more white square"), contradictions with the image,
      contradictions between intermediate values about the same object.
    - **pr** (Performative reasoning): (1) a staged-analysis wrapper ("let's analyze step by step")
      followed by a bare conclusion: at most ``max_bare_body_sentences`` body sentences and none with
      concrete support (a number, an equation, quoted text); (2) an assertive wrapper ("based on careful
      analysis", "by analyzing", "comparing the ...", "we can see that", "it is clear that") that states
      the conclusion while neither its sentence nor the preceding context carries concrete support;
      (3) a numeric final answer presented as a conclusion ("therefore", "so", "in fact") that appears
      nowhere in the reasoning, is not produced by any equation there, and is not a sum, difference,
      product or quotient of two quantities that do appear (nor their total, nor the number of
      enumerated items). *Cannot see*: image-grounded support
      (whether cited objects, positions, chart values actually exist in the image), evidence that is
      concrete but does not entail the conclusion, wrong arithmetic.

    CoT-priority attribution: sentences carrying CoT cues, the inside of a ``<think>`` block, and every
    answer claim stated before the last self-correction cue belong to the leaked trace; they are not
    used as Con or PR evidence. Rep is judged on the whole response (it may co-occur with CoT).

    Example:
        >>> v = RuleJudge().judge("", "Wait, let me re-check. The answer is 5. The answer is 6.")
        >>> v.as_vector()
        (True, False, True, False)
    """

    name = "rules"
    version = RULES_VERSION

    min_dup_words = 6
    min_template_words = 8
    min_template_repeats = 3
    ngram_long = 20
    ngram_short = 12
    min_conclusion_repeats = 3
    max_bare_body_sentences = 1
    time_budget_s = DEFAULT_ITEM_BUDGET_S
    """CPU seconds one response may take (:class:`~howeval.judges.budget.CpuDeadline`); over it the
    verdict fails with ``"judge_error: timeout after 2 s"``. Every step is linear in the response, so a
    response at the 200,000-character limit takes well under a second; the budget is the backstop."""

    def judge(
        self,
        question: str | None,
        response: str,
        options: Sequence[str] | None = None,
    ) -> PatternVerdict:
        """Label one user-facing response (the same argument order as every judge: question, then response).

        Args:
            question: the prompt, used only to read option lines (``(A) ...``); None or "" when unknown.
            response: y_m, the user-facing response (never the separate reasoning channel r_m).
            options: the option texts in order (A first), when the benchmark stores them apart.

        Returns:
            A verdict with all four labels and, for each positive label, its evidence span; a response
            over the limits of :mod:`howeval.parsing.limits` (200,000 characters, brackets nested 100
            deep) gives a failed verdict ``"judge_error: input too large: ..."`` (no labels); one over
            :attr:`time_budget_s` CPU seconds gives ``"judge_error: timeout after 2 s"``.

        Raises:
            TypeError: ``response`` is not a str.
        """
        if not isinstance(response, str):
            raise TypeError(f"response must be str, got {type(response).__name__}")
        try:
            check_text(response, "response")
            return self._judge(response, question, options, CpuDeadline(self.time_budget_s))
        except BudgetExceeded as e:
            return PatternVerdict.failed(self.name, self.version, f"judge_error: {e}")
        except InputTooLarge as e:
            return PatternVerdict.failed(self.name, self.version, f"judge_error: {e}")
        except RecursionError:
            return PatternVerdict.failed(self.name, self.version, "judge_error: input too large: nesting too deep")

    def _judge(self, response: str, question: str | None, options: Sequence[str] | None,
               deadline: CpuDeadline) -> PatternVerdict:
        text = normalize_newlines(response)
        sents = split_sentences(text)
        opts = options_from_list(options) or parse_options(question) or parse_options(text, strict=True)
        deadline.check()
        cot_ev, trace = self._cot(text, sents, deadline)
        deadline.check()
        rep_ev = self._rep(text, sents)
        deadline.check()
        # Con and PR read the text with code and quoted text blanked out (same offsets): "answers =
        # reader.read()" in a code block or "an answer is correct" in quotes is not a claim of the response
        masked = mask_code_and_quotes(text)
        msents = [Sentence(masked[s.start : s.start + len(s.text)], s.start, s.para, s.idx) for s in sents]
        con_ev = self._con(masked, msents, trace, opts, deadline)
        deadline.check()
        pr_ev = self._pr(masked, sents, trace, msents)
        deadline.check()
        evidence = {"cot": cot_ev, "rep": rep_ev, "con": con_ev, "pr": pr_ev}
        labels = {k: evidence[k] is not None for k in LABELS}
        return make_verdict(labels, evidence, self.name, self.version)

    def judge_batch(self, items: Sequence[JudgeItem | Mapping[str, Any]]) -> list[PatternVerdict]:
        """The judge protocol (:class:`howeval.judges.base.PatternJudge`): one verdict per item, in order.

        Items are :class:`~howeval.judges.base.JudgeItem` (or dicts with ``question``, ``response``,
        ``options``?); the image is not used.
        """
        return [self.judge(it.question, it.response, it.options) for it in as_judge_items(items)]

    # -- CoT ------------------------------------------------------------------------------------------

    def _cot(self, text: str, sents: list[Sentence], deadline: CpuDeadline | None = None) -> tuple[str | None, _Trace]:
        trace = _Trace(sentences=set(), superseded_before=0, think_end=0)
        first: str | None = None
        tags = list(_THINK_TAG.finditer(text))
        if tags:
            closes = [m for m in tags if m.group(0).lstrip("<◁").startswith("/") or "end_of" in m.group(0)]
            trace.think_end = closes[-1].end() if closes else len(text)
            trace.superseded_before = trace.think_end
            first = f"thinking tag {tags[0].group(0)!r}: " + clip_text(text[max(0, tags[0].start() - 60) : tags[0].end() + 120])
        for s in sents:
            if deadline is not None:
                deadline.check()
            if s.start + len(s.text) <= trace.think_end:
                trace.sentences.add(s.idx)
                continue
            for name, pat, self_correction in _COT_CUES:
                if pat.search(s.text):
                    trace.sentences.add(s.idx)
                    if self_correction:
                        trace.superseded_before = max(trace.superseded_before, s.start + len(s.text))
                    if first is None:
                        first = f"{name}: {clip_text(s.text)}"
                    break
        return first, trace

    # -- Rep ------------------------------------------------------------------------------------------

    def _rep(self, text: str, sents: list[Sentence]) -> str | None:
        seen: dict[str, Sentence] = {}
        for s in sents:
            n = norm_sentence(s.text)
            if sum(not w[0].isdigit() for w in n.split()) >= self.min_dup_words:
                if n in seen:
                    return f"repeated sentence: {clip_text(s.text)}"
                seen[n] = s
        groups: dict[str, list[Sentence]] = {}
        for s in sents:
            t = mask_template(s.text)
            if len(t.split()) >= self.min_template_words:
                groups.setdefault(t, []).append(s)
        for ss in groups.values():
            if len(ss) >= self.min_template_repeats:
                return f"same sentence template x{len(ss)}: {clip_text(ss[0].text, 160)} | {clip_text(ss[1].text, 160)}"
        toks = word_tokens(re.sub(r"\\boxed\s*\{[^{}]*\}", " ", text))
        for n, need in ((self.ngram_long, 2), (self.ngram_short, self.min_template_repeats)):
            hit = _repeated_ngram(toks, n, need)
            if hit:
                return f"{n}-token block x{need}: {hit}"
        run, prev = 1, None
        for a, b, content in boxed_spans(text):
            same = prev is not None and prev[2].strip() == content.strip() and not text[prev[1]:a].strip(" \t\n,.;:")
            run = run + 1 if same else 1
            if run >= self.min_template_repeats:
                return f"the same box back to back x{run}+: {clip_text(text[a:b], 80)}"
            prev = (a, b, content)
        claims = extract_claims(text)
        counts = Counter((c.letter, c.value) for c in claims)
        for c in claims:
            if counts[(c.letter, c.value)] >= self.min_conclusion_repeats:
                return f"conclusion stated x{counts[(c.letter, c.value)]}: {clip_text(c.source, 80)}"
        return None

    # -- Con ------------------------------------------------------------------------------------------

    def _con(self, text: str, sents: list[Sentence], trace: _Trace, opts: dict[str, str],
             deadline: CpuDeadline | None = None) -> str | None:
        in_trace = {s.idx for s in sents if s.idx in trace.sentences}
        trace_ranges = [(s.start, s.start + len(s.text)) for s in sents if s.idx in in_trace]
        claims = [
            c
            for c in extract_claims(text)
            if c.pos >= trace.superseded_before and not any(a <= c.pos < b for a, b in trace_ranges)
        ]
        distinct = list({(c.letter, c.value): c for c in reversed(claims)}.values())[::-1]  # first of each
        pair = disagreeing_pair(distinct, opts)
        if pair:
            a, b = pair
            return f"different final answers: {clip_text(a.source, 80)!r} vs {clip_text(b.source, 80)!r}"
        kept = [s for s in sents if s.idx not in in_trace and s.start >= trace.think_end]
        polar: dict[str, tuple[bool, Sentence]] = {}
        for s in kept:
            if deadline is not None:
                deadline.check()
            clause = re.sub(r"^(?:however|but|so|thus|hence|therefore|also|and|yet|still|then)\b,?\s*", "", s.text, flags=re.I)
            clause = re.sub(r"^[^,;:]{1,40},\s+(?=\S+(?:\s+\S+){3})", "", clause)  # short lead-in phrase
            toks = norm_sentence(clause.replace("cannot", "can not").replace("n't", " not")).split()
            if len(toks) < 5:
                continue
            neg = sum(t in ("not", "no", "never") for t in toks) % 2 == 1
            key = " ".join(t for t in toks if t not in ("not", "no", "never"))
            if key in polar and polar[key][0] != neg:
                return f"claim and its negation: {clip_text(polar[key][1].text, 120)!r} vs {clip_text(s.text, 120)!r}"
            polar.setdefault(key, (neg, s))
        return None

    # -- PR -------------------------------------------------------------------------------------------

    def _pr(self, text: str, sents: list[Sentence], trace: _Trace, msents: list[Sentence] | None = None) -> str | None:
        """PR cues, the first that fires: (1) staged analysis then a bare conclusion, (2) an assertive wrapper
        with no support, (3) a numeric conclusion nothing produces. ``text``/``msents``: code and quotes
        blanked (cues and claims are read there); ``sents``: the original sentences (concrete support, quotes
        included, is read there)."""
        kept = [s for s in sents if s.idx not in trace.sentences and s.start >= trace.think_end]
        if not kept:
            return None
        cue_text = {s.idx: s.text for s in (msents or sents)}
        return (self._pr_staged(kept, cue_text) or _pr_wrapper(kept, cue_text)
                or _pr_underived_conclusion(text, kept, cue_text, trace.superseded_before))

    def _pr_staged(self, kept: list[Sentence], cue_text: dict[int, str]) -> str | None:
        """PR cue (1): the first staged-analysis sentence ("First, ... Then, ...") followed by at most
        ``max_bare_body_sentences`` body sentences, none of them with concrete support."""
        for i, s in enumerate(kept):
            if _STAGED.search(cue_text[s.idx]):
                body = [b for b in kept[i + 1 :] if not _is_answer_sentence(b) and not _ASSERTIVE.search(cue_text[b.idx])]
                if len(body) <= self.max_bare_body_sentences and not any(_has_support(b.text) for b in body):
                    return f"staged analysis with no content: {clip_text(s.text)}"
                break
        return None


def _is_answer_sentence(s: Sentence) -> bool:
    """A sentence that states the answer (a box, the word "answer") or is two words or fewer."""
    return bool(re.search(r"\\boxed|\banswer\b", s.text, re.IGNORECASE)) or len(word_tokens(s.text)) <= 2


def _pr_wrapper(kept: list[Sentence], cue_text: dict[int, str]) -> str | None:
    """PR cue (2): an assertive wrapper (not a staged one) with no concrete support in its sentence or in the
    (up to 3) preceding sentences of its paragraph or the one before."""
    for i, s in enumerate(kept):
        cue = cue_text[s.idx]
        if _ASSERTIVE.search(cue) and not _STAGED.search(cue):
            context = [p for p in kept[max(0, i - 3) : i] if p.para >= s.para - 1]
            if not _has_support(s.text) and not any(_has_support(p.text) for p in context):
                return f"reasoning wrapper without support: {clip_text(s.text)}"
    return None


def _pr_underived_conclusion(text: str, kept: list[Sentence], cue_text: dict[int, str],
                             superseded_before: int) -> str | None:
    """PR cue (3): the last claim (at or after ``superseded_before``) is a number concluded in a conclusion
    sentence, after 2+ body sentences with no arithmetic, and no quantity of the body (nor the count of
    enumerated items) gives it by one operation (:func:`_derivable`)."""
    claims = [c for c in extract_claims(text) if c.pos >= superseded_before]
    if not claims:
        return None
    final = claims[-1]
    val = as_number(final.value) if final.letter is None else None
    if val is None:
        return None

    def holds_final(s: Sentence) -> bool:
        return s.start <= final.pos < s.start + len(s.text) + 1

    concl = next((s for s in kept if holds_final(s)), None)
    body = [s for s in kept if s is not concl and not holds_final(s) and not _is_answer_sentence(s)]
    if concl is None or not _CONCLUSION.search(cue_text[concl.idx]) or len(body) < 2:
        return None
    if any(_ARITH.search(s.text) for s in body):
        return None
    nums = [x for s in body for x in _numbers(s.text)]
    nums.append(float(sum(bool(_LIST_ITEM.match(s.text)) for s in body)))  # items enumerated
    if _derivable(val, nums):
        return None
    return f"conclusion {final.source!r} is not derived from any quantity given: {clip_text(concl.text)}"


def _repeated_ngram(toks: list[str], n: int, need: int) -> str | None:
    """The first token n-gram occurring ``need`` or more times without overlap, or None."""
    if len(toks) < n * need:
        return None
    where: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(toks) - n + 1):
        g = tuple(toks[i : i + n])
        lst = where.setdefault(g, [])
        if not lst or i - lst[-1] >= n:
            lst.append(i)
            if len(lst) >= need:
                return " ".join(g)
    return None


MAX_DERIVATION_NUMBERS = 300
"""Bound on the distinct quantities tried pairwise by PR cue (3) (keeps the check fast on long texts)."""


def _derivable(val: float, nums: list[float]) -> bool:
    """True when ``val`` is among ``nums`` or one binary operation (or the total) on them gives it."""

    def eq(a: float, b: float) -> bool:
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))

    if any(eq(val, x) for x in nums) or (len(nums) > 2 and eq(val, sum(nums))):
        return True
    uniq = sorted(set(nums))[:MAX_DERIVATION_NUMBERS]
    for a, b in combinations(uniq + [x for x in uniq if nums.count(x) > 1], 2):
        cands = [a + b, a - b, b - a, a * b]
        if b:
            cands.append(a / b)
        if a:
            cands.append(b / a)
        if any(eq(val, c) for c in cands):
            return True
    return False


__all__ = [
    "RULES_VERSION",
    "mask_code_and_quotes",
    "RuleJudge",
    "Claim",
    "extract_claims",
    "normalize_newlines",
    "options_from_list",
    "parse_options",
    "split_sentences",
]
