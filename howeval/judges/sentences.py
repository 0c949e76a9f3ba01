"""Text preparation for the rule judge: literal newlines, sentence segmentation with positions, code and
quotation masking, word normalization (``docs/rule_judge.md``)."""
from __future__ import annotations

import re
from dataclasses import dataclass

# ----------------------------------------------------------------------------------------------------
# Text normalization and segmentation
# ----------------------------------------------------------------------------------------------------

# LaTeX commands that begin with "\n" (so a literal backslash-n before them is not an escaped newline).
_LATEX_N = (
    "neq|nabla|nu|not|newline|neg|nexists|ni|nleq|ngeq|nmid|nparallel|nsubseteq|nsupseteq|nsim|ncong|"
    "nrightarrow|nleftarrow|nRightarrow|nLeftarrow|normalsize|noindent|newcommand|natural|ne|nolimits|"
    "nonumber|numberline|nearrow|nwarrow"
)
_LITERAL_NEWLINE = re.compile(r"\\n(?!(?:" + "|".join(c[1:] for c in _LATEX_N.split("|")) + r")(?![A-Za-z]))")


def normalize_newlines(text: str) -> str:
    """Turn literal ``\\n`` escape sequences (two characters) into real newlines.

    Some stored responses (TabMWP's GPT-3 outputs) keep ``\\n`` as two characters. A literal ``\\n``
    followed by a LaTeX command name that starts with ``n`` (``\\neq``, ``\\nabla``, ...) is kept.

    >>> normalize_newlines("Read the table.\\\\n\\\\nThe answer is 7.")
    'Read the table.\\n\\nThe answer is 7.'
    >>> normalize_newlines("$a \\\\neq b$")
    '$a \\\\neq b$'
    """
    if "\\n" not in text:
        return text
    return _LITERAL_NEWLINE.sub("\n", text)


@dataclass(frozen=True)
class Sentence:
    """A sentence of the response: its text, character offset, paragraph and line index."""

    text: str
    start: int
    para: int
    idx: int


_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\\$(\d*\-])")
_LIST_MARKER = re.compile(r"(?:[-*•]\s*)?(?:\d{1,2}|[A-Za-z]|[ivx]{1,4})[.)]")


def split_sentences(text: str) -> list[Sentence]:
    """Split into sentences: at line breaks and at ``.!?`` followed by a space and a capital/digit/math.

    Paragraphs are separated by blank lines. Offsets refer to ``text``.
    """
    out: list[Sentence] = []
    para = 0
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        if not line.strip():
            if out and out[-1].para == para:
                para += 1
            continue
        last = 0
        pieces = []
        for m in _SENT_SPLIT.finditer(line):
            pieces.append((last, m.start()))
            last = m.end()
        pieces.append((last, len(line)))
        merged: list[tuple[int, int]] = []
        for a, b in pieces:  # keep a list marker ("1.", "a)") with the item it opens
            if merged and _LIST_MARKER.fullmatch(line[merged[-1][0] : merged[-1][1]].strip()):
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        for a, b in merged:
            s = line[a:b].strip()
            if s:
                out.append(Sentence(s, line_start + a + (len(line[a:b]) - len(line[a:b].lstrip())), para, len(out)))
    return out


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)  # an unclosed fence runs to the end
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_BLOCK_QUOTE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_QUOTED = re.compile(r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”")
MIN_MASKED_QUOTE_WORDS = 4
"""Quoted text of at least this many words is blanked for Con and PR; shorter quotes ("B", "April") are
values the response states and stay."""


def mask_code_and_quotes(text: str) -> str:
    """``text`` with fenced code blocks, inline code, block quotes (``> ...`` lines) and quoted passages of
    at least :data:`MIN_MASKED_QUOTE_WORDS` words replaced by spaces (newlines kept, so offsets and line
    structure are unchanged). The rule judge reads Con and PR cues from this text.

    >>> mask_code_and_quotes('x `answers = f()` y "an answer is correct" "B"')
    'x                 y                        "B"'
    """

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    def blank_long_quote(m: re.Match[str]) -> str:
        return blank(m) if len(m.group(0)[1:-1].split()) >= MIN_MASKED_QUOTE_WORDS else m.group(0)

    out = _FENCED.sub(blank, text)
    out = _INLINE_CODE.sub(blank, out)
    out = _BLOCK_QUOTE.sub(blank, out)
    return _QUOTED.sub(blank_long_quote, out)


_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")


def word_tokens(s: str) -> list[str]:
    """The lower-cased words and numbers of ``s``, in order (a number keeps its ``.``/``,`` groups: "1,250",
    "2.5"); punctuation, markdown and math delimiters are dropped. Used by the Rep and PR cues
    (SPEC section 1, "PatternEval": Repetition, Performative reasoning).

    >>> word_tokens("**Step 2:** add 1,250 and 2.5!")
    ['step', '2', 'add', '1,250', 'and', '2.5']
    """
    return _WORD.findall(s.lower())


def norm_sentence(s: str) -> str:
    """A sentence as its lower-case words and numbers joined by single spaces (:func:`word_tokens`), a
    leading list marker ("-", "*", "2.", "(a)") dropped: the key two sentences repeat each other by
    (SPEC section 1, "PatternEval": Repetition).

    >>> norm_sentence("2. The **total** is 12.")
    'the total is 12'
    """
    s = re.sub(r"^\s*(?:[-*•]|\d+[.)]|\([a-zA-Z0-9]\))\s+", "", s)  # list markers
    return " ".join(word_tokens(s))


def mask_template(s: str) -> str:
    """A sentence's template (:func:`norm_sentence` with numbers -> ``#``, single letters / option labels ->
    ``@``, inline math ``$...$`` / ``\\(...\\)`` dropped): sentences that differ only in those repeat one
    template (SPEC section 1, "PatternEval": Repetition).

    >>> mask_template("Option B gives 12 apples, so $x=3$.")
    'option @ gives # apples so'
    """
    s = re.sub(r"\$[^$]*\$", " § ", s)
    s = re.sub(r"\\\(.*?\\\)", " § ", s)
    s = norm_sentence(s)
    toks = []
    for t in s.split():
        if re.fullmatch(r"[0-9][0-9.,]*", t):
            toks.append("#")
        elif len(t) == 1:
            toks.append("@")
        else:
            toks.append(t)
    return " ".join(toks)


def clip_text(s: str, n: int = 240) -> str:
    """``s`` on one line (whitespace runs collapsed) and at most ``n`` characters (``n`` >= 4), cut with
    "..." : the evidence quoted in a verdict's reason.

    >>> clip_text("a  very\\nlong sentence", 12)
    'a very lo...'
    """
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."
