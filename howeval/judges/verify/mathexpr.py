"""Symbolic equivalence of two answers with math-verify, guarded: what it would misread or never finish is refused.

SPEC section 2: "normalized matching and symbolic equivalence". :func:`math_equal` runs math-verify in a
child process under the item's time budget (:mod:`howeval.judges.budget`); before that it refuses
inputs sympy would expand into astronomically large numbers (:class:`InputTooLarge`) and prose or lists
math-verify would read as a product ("0 to 10" as ``0*t*o*10``: not compared, None).
"""
from __future__ import annotations

import re

from howeval.judges import budget
from howeval.parsing.limits import MAX_NUMBER_DIGITS, InputTooLarge, longest_digit_run

__all__ = ["MAX_EXPRESSION_CHARS", "MAX_MATH_CHARS", "looks_expression", "looks_math", "math_equal"]

MAX_MATH_CHARS = 1_000  # longer strings are never sent to math-verify (not an expression: unresolved)
MAX_EXPRESSION_CHARS = 200  # an option's value or a short answer; a longer text is a sentence or a list


def looks_math(s: str) -> bool:
    """True when ``s`` holds a digit or a math character (``\\ ^ _ { } = + * / ( )``): worth a math-verify try.

    >>> looks_math("x^2"), looks_math("Africa")
    (True, False)
    """
    return bool(re.search(r"[\\^_{}=+*/()]|\d", s))


_TEXT_GROUP_RE = re.compile(r"\\(?:text|mathrm|textbf|mbox|operatorname)\s*\{[^{}]*\}")
_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_MATH_WORDS = frozenset({"sin", "cos", "tan", "cot", "sec", "csc", "log", "exp", "sqrt", "frac", "deg", "max", "min",
                         "mod", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "det", "gcd", "lcm"})


def looks_expression(s: str) -> bool:
    """True when ``s`` can be one math expression: at most :data:`MAX_EXPRESSION_CHARS` characters and at
    most one word of three or more letters outside LaTeX commands and ``\\text{}`` (a unit: "9 litres"),
    function names (sin, log, ...) not counted. A sentence ("The ratio is $2\\sqrt{2}$ because ...") is
    not: math-verify would read its words as a product of symbols, slowly, and decide nothing.

    >>> looks_expression(r"6(\\sqrt{2}-1)"), looks_expression("9 litres"), looks_expression("The ratio is 2 because x")
    (True, True, False)
    """
    if len(s) > MAX_EXPRESSION_CHARS:
        return False
    t = re.sub(r"\\[A-Za-z]+", " ", _TEXT_GROUP_RE.sub(" ", s))
    return sum(w.lower() not in _MATH_WORDS for w in _WORD_RE.findall(t)) <= 1


_NESTED_POWER_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\(?\s*\d+\s*\^")
_GROUP_TOKEN_RE = re.compile(r"\\left\s*[({]|\\right\s*[)}]|\\[{}]|[{}()^]")


def _has_power_in_exponent(s: str) -> bool:
    """True when a ``^`` stands inside the exponent group of another ``^`` at any brace/paren depth:
    ``9^{9^{9}}``, ``{9}^{{9}^{{9}^{9}}}``, ``2^{(3^{4})}``, ``2^(3^(4^5))``. One left-to-right pass.

    >>> _has_power_in_exponent("{9}^{{9}^{{9}^{9}}}"), _has_power_in_exponent("{2}^{3} + x^{2}")
    (True, False)
    """
    stack: list[bool] = []  # per open group: is it an exponent group?
    in_exponent = 0  # open exponent groups
    after_caret, prev_end = False, 0
    for m in _GROUP_TOKEN_RE.finditer(s):
        tok = m.group(0)
        # a group opens an exponent when only spaces lie between the ^ and it
        opens_exponent = after_caret and not s[prev_end:m.start()].strip()
        after_caret = False
        if tok == "^":
            if in_exponent:
                return True
            after_caret, prev_end = True, m.end()
        elif tok[-1] in "({" and tok != "\\{":
            stack.append(opens_exponent)
            in_exponent += opens_exponent
        elif tok[-1] in ")}" and tok != "\\}":
            if stack:
                in_exponent -= stack.pop()
    return False


_BIG_EXPONENT_RE = re.compile(r"\^\s*\{?\s*\(?\s*(\d{6,})")
_BIG_FACTORIAL_RE = re.compile(r"\d{4,}\s*!")


def _math_risk(s: str) -> str | None:
    """Why ``s`` is refused before math-verify (sympy would evaluate an astronomically large number), or None.

    >>> _math_risk("10^{10^{10}}"), _math_risk("2^{10}")
    ('a power in an exponent', None)
    """
    if longest_digit_run(s) > MAX_NUMBER_DIGITS:  # first: the regexes below are quadratic on long digit runs
        return f"a number of more than {MAX_NUMBER_DIGITS} digits"
    if _NESTED_POWER_RE.search(s) or _has_power_in_exponent(s):
        return "a power in an exponent"
    if _BIG_EXPONENT_RE.search(s):
        return "an exponent of 6+ digits"
    if _BIG_FACTORIAL_RE.search(s):
        return "a factorial of a 4+ digit number"
    return None


def math_equal(gold: str, pred: str) -> bool | None:
    """math-verify equivalence of two LaTeX strings: True/False, or None when either side does not parse.

    Runs in a child process under the item's time budget (:mod:`howeval.judges.budget`), so it holds
    off the main thread too (math-verify's own signal timeouts do not). A side longer than
    :data:`MAX_MATH_CHARS`, one holding ``&``, a dash range or a connective word ("to", "and", ...), or
    one that is prose, not an expression (:func:`looks_expression`), is not compared (None).

    Raises:
        InputTooLarge: either side would make sympy build an astronomically large number (power towers,
            6+ digit exponents, factorials of 4+ digit numbers).
        budget.BudgetExceeded: the item's time budget ran out.
    """
    for side, name in ((gold, "answer"), (pred, "response answer")):
        why = _math_risk(side)
        if why:
            raise InputTooLarge(f"input too large: {name} {side[:40]!r} has {why}")
    if max(len(gold), len(pred)) > MAX_MATH_CHARS:
        return None  # no answer is this long: not an expression to compare
    if not (_math_safe(gold) and _math_safe(pred)):
        return None  # prose or a list: math-verify would read "3 & 4" as 4 and "0 to 10" as 0*t*o*10
    if not (looks_expression(gold) and looks_expression(pred)):
        return None  # a sentence: not an expression to compare (and slow to parse as one)
    return budget.math_equal(gold, pred)


_CONNECTIVE_RE = re.compile(r"(?<![A-Za-z])(?:to|and|or|through|until|between|from|then)(?![A-Za-z])", re.IGNORECASE)


def _math_safe(s: str) -> bool:
    """True when ``s`` is an expression math-verify reads without loss: no ``&`` and no connective
    words ("to", "and", "or", "through", "between", ...) that turn a range or a list into a product.

    >>> _math_safe(r"6(\\sqrt{2}-1)"), _math_safe("3 & 4"), _math_safe("0 to 10"), _math_safe("x^2+1")
    (True, False, False, True)
    """
    if "&" in s or "–" in s or "—" in s:  # a list, or a dash range ("4–6")
        return False
    return _CONNECTIVE_RE.search(re.sub(r"\\[A-Za-z]+", " ", s)) is None
