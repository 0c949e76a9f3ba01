"""Numbers read from answers, and the ``integer_number`` / ``decimal_number`` verifiers (TabMWP).

SPEC section 1: "following each source task's own criteria". TabMWP integers: numeric equality after
removing ``$``, thousands separators and units. TabMWP decimals: the prediction rounded to the gold
answer's decimal places equals the gold; a fraction gold ("7/18") equals an equal fraction, or a decimal
that agrees with it to 3 places (PromptPG ``normalize_answer`` rounds to 3).

The readers (:func:`parse_number`, :func:`lenient_number`, :func:`several_values`, :func:`numbers_close`)
serve the other answer types too.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from howeval.judges.verify.answer import find_candidate, missing_answer, strip_trailing
from howeval.judges.verify.result import METHOD_RULE, VerifyResult, register_verifier
from howeval.parsing.limits import MAX_NUMBER_DIGITS, longest_digit_run
from howeval.parsing.text import NUMBER_WORDS, strip_latex

__all__ = [
    "FRACTION_DECIMALS",
    "fmt_number",
    "lenient_number",
    "numbers_close",
    "parse_number",
    "several_values",
    "units_compatible",
    "verify_decimal_number",
    "verify_integer_number",
]

FRACTION_DECIMALS = 3  # PromptPG normalize_answer rounds fractions and decimals to 3 places

_NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+"
_NUMBER_RE = re.compile(
    rf"(?P<num>{_NUM})(?:\s*/\s*(?P<den>{_NUM}))?\s*(?P<unit>%|[A-Za-z][A-Za-z .]*?)?"
)
_FRAC_RE = re.compile(r"^(?P<sign>-?)\\[dt]?frac\s*\{\s*(?P<num>[^{}]+?)\s*\}\s*\{\s*(?P<den>[^{}]+?)\s*\}(?P<rest>.*)$")
_UNIT_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z .]*$")


def parse_number(s: str) -> tuple[Fraction, str, int] | None:
    """A whole string read as one number: ``(value, unit, decimals)`` or None.

    Accepts ``$1,250``, ``-3``, ``0.20``, ``7/18``, ``\\frac{3}{4}``, ``15 minutes``, ``25%``, ``two``.
    ``decimals`` is the count of digits after the point (fractions: -1). The unit is lower-cased text
    after the number ("" if none), ``%`` for percent. A number of more than ``MAX_NUMBER_DIGITS``
    digits, or a zero denominator, is None.

    >>> parse_number("$1,250"), parse_number("7/18"), parse_number("15 minutes")
    ((Fraction(1250, 1), '', 0), (Fraction(7, 18), '', -1), (Fraction(15, 1), 'minutes', 0))
    """
    t = strip_trailing(strip_latex(s))
    if not t:
        return None
    low = t.lower()
    if low in NUMBER_WORDS:
        return Fraction(NUMBER_WORDS[low]), "", 0
    fm = _FRAC_RE.match(t)
    if fm:
        num, den = parse_number(fm.group("num")), parse_number(fm.group("den"))
        rest = fm.group("rest").strip()
        if num and den and not num[1] and not den[1] and den[0] != 0 and (not rest or _UNIT_WORD_RE.match(rest)):
            val = num[0] / den[0]
            return (-val if fm.group("sign") else val), rest.lower(), -1
        return None
    m = _NUMBER_RE.fullmatch(t)
    if not m:
        return None
    num_s = m.group("num").replace(",", "")
    if len(num_s) > MAX_NUMBER_DIGITS:  # not an answer; Fraction/float of it would raise or overflow
        return None
    try:
        val = Fraction(num_s)
    except ValueError:
        return None
    decimals = len(num_s.split(".")[1]) if "." in num_s else 0
    if m.group("den"):
        den = Fraction(m.group("den").replace(",", ""))
        if den == 0:
            return None
        val, decimals = val / den, -1
    unit = (m.group("unit") or "").strip().lower().rstrip(".")
    return val, unit, decimals


def _numbers_in(s: str) -> list[str]:
    # a hex literal ("0x7f00", an address in an artefact) holds no number
    return re.findall(rf"(?<![\w.])(?:{_NUM})(?:\s*/\s*\d+)?(?![xX][0-9a-fA-F])", strip_latex(s))


_POWER_RE = re.compile(r"\^|\*\*")
_INT_POWER_RE = re.compile(r"\s*(-?)\s*(\d{1,6})\s*(?:\^\s*(?:\{\s*(\d{1,2})\s*\}|(\d{1,2}))|\*\*\s*(\d{1,2}))\s*\.?\s*")
MAX_POWER_EXPONENT = 64


def int_power(s: str) -> Fraction | None:
    """The value of a whole phrase that is one integer power, ``a^{b}``, ``a^b`` or ``a**b`` (a <= 6 digits,
    0 <= b <= :data:`MAX_POWER_EXPONENT`; a leading minus negates the power, ``-2^{2}`` = -4, as in
    mathematics), exactly; None for anything else (a tower, a product, a variable).

    >>> int_power("2^{3}"), int_power(" -2^2 "), int_power("10**6"), int_power("10^{10^{10}}"), int_power("x^2")
    (Fraction(8, 1), Fraction(-4, 1), Fraction(1000000, 1), None, None)
    """
    m = _INT_POWER_RE.fullmatch(s)
    if not m:
        return None
    exp = int(m.group(3) or m.group(4) or m.group(5))
    if exp > MAX_POWER_EXPONENT:
        return None
    v = Fraction(int(m.group(2))) ** exp
    return -v if m.group(1) else v


def lenient_number(s: str) -> tuple[Fraction, str, int] | None:
    """A number from an answer phrase: the whole phrase, else its leading number, else its only number.

    ``"0.538, or 53.8%"`` -> 0.538 (leading); ``"Donald spent $1"`` -> 1 (only number); two different
    numbers with no leading one -> None; a whole phrase that is one integer power -> its value
    (:func:`int_power`: ``"2^{3}"`` -> 8); any other power (``^`` or ``**``: ``"10^{10^{10}}"``,
    ``"2^{3} apples"``) -> None, never its base. Same tuple as :func:`parse_number`.

    >>> lenient_number("0.538, or 53.8%")[0], lenient_number("2^{3}")[0], lenient_number(r"10^{10^{10}}")
    (Fraction(269, 500), Fraction(8, 1), None)
    """
    whole = parse_number(s)
    if whole:
        return whole
    c = strip_latex(s)
    if longest_digit_run(c) > MAX_NUMBER_DIGITS:
        return None  # not an answer (see parse_number); the range regexes below would be quadratic on it
    if _POWER_RE.search(c):
        p = int_power(c)  # "2^{3}" = 8; "10^{10^{10}}", "2^{3} apples": a power, not its base (nor its exponent)
        return (p, "", 0) if p is not None else None
    if several_values(c):
        return None  # "0 to 10", "3 and 4", "between 2 and 5": not its first number
    lead = re.match(rf"\s*(?:{_NUM})(?:\s*/\s*\d+)?", c)
    if lead:
        return parse_number(lead.group(0))
    nums = _numbers_in(c)
    if len(nums) == 1:
        return parse_number(nums[0])
    return None


_RANGE_RE = re.compile(
    rf"(?:{_NUM})\s*%?\s*(?:–|—|to|and|or|&|through|until|,)\s*(?:[a-z]+\s+)?\$?\s*(?:{_NUM})\s*%?", re.IGNORECASE
)


def several_values(s: str) -> bool:
    """True when ``s`` states a range or several different values ("0 to 10", "3 & 4", "2, 5", "4–6"); a
    value restated in another form ("0.538, or 53.8%", "$1,250") is one value, and "8 - 6" is an
    expression (a hyphen between spaced numbers is subtraction; a range uses "to" or a dash "–").

    >>> several_values("0 to 10"), several_values("between 2 and 5"), several_values("0.538, or 53.8%")
    (True, True, False)
    """
    if re.search(r"\d\s?[–—]\s?\d|\d-\d", s.replace(",", "")):  # "4–6", "2007-2010": a dash range
        return True
    for m in _RANGE_RE.finditer(s):
        nums = re.findall(rf"(?:{_NUM})\s*%?", m.group(0))
        vals = set()
        for n in nums:
            p = parse_number(n)
            if p is None:
                continue
            vals.add(p[0] / 100 if p[1] == "%" else p[0])
        if len(vals) > 1:
            return True
    return False


def numbers_close(a: Fraction, b: Fraction, rel_tol: float) -> bool:
    """``a`` equals ``b`` within ``rel_tol`` (``|a-b| <= rel_tol * max(|a|,|b|)``) or within 1e-12 absolute.

    >>> numbers_close(Fraction(314159, 100000), Fraction(31416, 10000), 1e-4), numbers_close(Fraction(1), Fraction(2), 1e-4)
    (True, False)
    """
    if a == b:
        return True
    if abs(a - b) <= Fraction(1, 10**12):
        return True
    return abs(a - b) <= Fraction(rel_tol) * max(abs(a), abs(b))


def fmt_number(x: Fraction) -> str:
    """A number for a reason line (``%g`` style; never raises on huge values).

    >>> fmt_number(Fraction(7, 18)), fmt_number(Fraction(10**400))
    ('0.388889', '<huge number>')
    """
    try:
        return f"{float(x):g}"
    except OverflowError:
        return "<huge number>"


def units_compatible(u1: str, u2: str) -> bool:
    """True when either unit is empty, or both are the same up to a plural ``s`` ("litre" = "litres").

    >>> units_compatible("litres", "litre"), units_compatible("", "kg"), units_compatible("kg", "m")
    (True, True, False)
    """
    return not u1 or not u2 or u1 == u2 or u1.rstrip("s") == u2.rstrip("s")


def _round(x: Fraction, places: int) -> Fraction:
    """``x`` rounded half away from zero to ``places`` decimals, exactly (no 28-digit Decimal context).

    >>> _round(Fraction(7, 18), 3), _round(Fraction(-5, 2), 0)
    (Fraction(389, 1000), Fraction(-3, 1))
    """
    scale = 10**places
    n = math.floor(abs(x) * scale + Fraction(1, 2))
    return Fraction(n if x >= 0 else -n, scale)


def _verify_tabmwp_number(response: str, answer: str, integer: bool) -> VerifyResult:
    cand, src = find_candidate(response)
    if cand is None:
        return missing_answer(response, src)
    pg = parse_number(answer)
    if pg is None:
        raise ValueError(f"numeric gold answer {answer!r} is not a number")
    pc = lenient_number(cand)
    if pc is None:
        what = "a power, not a plain number," if _POWER_RE.search(cand) else "no single number"
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: {what} in answer {cand!r} ({src})")
    gv, pv = pg[0], pc[0]
    if integer or pg[2] == 0:
        ok, rule = pv == gv, "exact"
    elif pg[2] < 0:  # fraction gold
        ok = pv == gv or _round(pv, FRACTION_DECIMALS) == _round(gv, FRACTION_DECIMALS)
        rule = f"fraction, or {FRACTION_DECIMALS} decimals"
    else:
        ok, rule = _round(pv, pg[2]) == _round(gv, pg[2]), f"rounded to {pg[2]} decimals"
    return VerifyResult(ok, cand, METHOD_RULE, f"number {fmt_number(pv)} vs gold {answer} ({rule}; {src})")


@register_verifier("integer_number")
def verify_integer_number(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP integers: the answer's number (``$``, ``,``, units removed) equals the gold exactly ("$13.00" = "13").

    Raises:
        ValueError: the gold is not a number.
    """
    return _verify_tabmwp_number(response, answer, integer=True)


@register_verifier("decimal_number")
def verify_decimal_number(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP decimals: the prediction rounded to the gold's decimal places equals it ("$0.20" = "0.20").

    A fraction gold ("7/18") equals an equal fraction ("14/36") or a decimal agreeing to 3 places
    ("0.389"); 3 places follows PromptPG's ``normalize_answer``, which rounds both sides to 3 decimals.

    Raises:
        ValueError: the gold is not a number.
    """
    return _verify_tabmwp_number(response, answer, integer=False)
