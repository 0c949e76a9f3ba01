"""Budgets that hold off the main thread: the hard-timeout runner, and verify / the rule judge on the
degenerate corpus and on hypothesis-generated text (issue 12)."""
from __future__ import annotations

from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from howeval.judges import budget
from howeval.judges.rules import RuleJudge
from howeval.judges.verify import METHOD_BUDGET, verify

from degenerate import CORPUS, ITEM_BOUND_S, run_in_thread

# ------------------------------------------------------------------------------------------ runner


def test_runner_kills_an_overrunning_task_and_recovers():
    runner = budget.HardTimeoutRunner(max_workers=1)
    try:
        assert runner.call("sleep", (0.0,), 30.0)[0] == 0.0  # starts the child (start-up not charged)
        with pytest.raises(budget.BudgetExceeded, match=r"^timeout after 0.3 s$"):
            runner.call("spin", (600.0,), 0.3)  # 0.3 CPU seconds, then killed
        assert runner.kills == 1
        with pytest.raises(budget.BudgetExceeded, match=r"^timeout after 0.05 s$"):
            runner.call("sleep", (600.0,), 0.05)  # uses no CPU: the wall-clock cap (20 x 0.05 s) kills it
        assert runner.kills == 2
        value, used = runner.call("sleep", (0.0,), 30.0)  # a fresh child replaces the killed one
        assert value == 0.0 and 0.0 <= used < 30.0
    finally:
        runner.close()


def test_runner_names_the_whole_budget_and_refuses_spent_budgets():
    runner = budget.HardTimeoutRunner(max_workers=1)
    try:
        with pytest.raises(budget.BudgetExceeded, match=r"^timeout after 2 s$"):
            runner.call("sleep", (0.0,), 0.0, budget_s=2.0)
        with pytest.raises(KeyError, match="registered"):
            runner.call("nope", (), 1.0)
    finally:
        runner.close()


def test_item_budget_nests_and_rejects_bad_values():
    with budget.item_budget(5.0):
        assert budget.remaining() == (5.0, 5.0)
        budget._charge(1.5)
        with budget.item_budget(50.0):  # an enclosing budget is kept
            assert budget.remaining() == (3.5, 5.0)
    assert budget.remaining() == (budget.DEFAULT_ITEM_BUDGET_S, budget.DEFAULT_ITEM_BUDGET_S)
    with pytest.raises(ValueError, match="positive finite"):
        with budget.item_budget(float("nan")):
            pass


# ------------------------------------------------------------------------------ the issue's inputs


ISSUE_INPUTS = [
    ('{"a":' * 2000 + "1" + "}" * 2000, "input too large"),
    (r"\boxed{10^{10^{10}}}", "input too large"),
    (r"\boxed{9^{9^{9^{9}}}}", "input too large"),
    (r"\boxed{" * 4000, None),  # quadratic scan fixed: an ordinary unresolved verdict, fast
]


@pytest.mark.parametrize("text,reason", ISSUE_INPUTS, ids=["json-2000", "tower-10", "tower-9", "boxed-4000"])
def test_issue_inputs_finish_in_a_thread_with_their_reason(text, reason):
    res, cpu, err = run_in_thread(lambda: verify(text, "5", "free_form"))
    assert err is None, repr(err)
    assert cpu < ITEM_BOUND_S
    assert res.correct is None
    if reason:
        assert res.method == METHOD_BUDGET and res.reason.startswith(reason), res.reason


def test_slow_math_verify_is_killed_off_the_main_thread():
    # (10^7)! passes the size pre-checks; sympy would compute it for minutes: the child is killed
    res, _, err = run_in_thread(lambda: verify(r"\boxed{(10^{7})!}", "5", "free_form", time_budget_s=0.5))
    assert err is None, repr(err)
    assert (res.correct, res.method, res.reason) == (None, METHOD_BUDGET, "timeout after 0.5 s")


def test_huge_numbers_never_overflow():
    r = verify("The answer is " + "1" + "0" * 400 + ".", "5", "free_form")
    assert r.correct is False and "number" in r.reason  # 10^400 != 5, read exactly (no float overflow)
    r = verify("The answer is " + "9" * 5000 + ".", "5", "integer_number")
    assert r.correct is None  # 5,000 digits is not read as a number


def test_math_verify_still_decides_ordinary_items():
    assert verify(r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}", "free_form").correct is True
    assert verify(r"\boxed{2^{10}}", "1024", "free_form").correct is True


# ------------------------------------------------------------------------------------- fuzz corpus

TYPES = [
    ("free_form", "12", None),
    ("free_form", r"\frac{3}{4}", None),
    ("multiple_choice", "B", ["1 & 2", "1 & 4", "$15^{\\circ}$", "x^2"]),
    ("integer_number", "18", None),
    ("decimal_number", "0.25", None),
    ("extractive_text", "April", ["March", "April"]),
    ("boolean_text", "yes", None),
    ("free_form_or_mc", "B (60°)", None),
]


@pytest.mark.parametrize("name,text", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_verify_every_type(name, text):
    for answer_type, gold, options in TYPES:
        res, cpu, err = run_in_thread(partial(verify, text, gold, answer_type, options))
        assert err is None, f"{answer_type}: {err!r}"
        assert res.correct in (True, False, None)
        timed_out = res.method == METHOD_BUDGET and res.reason.startswith("timeout after")
        assert cpu < ITEM_BOUND_S or timed_out, f"{answer_type}: {cpu:.2f} s CPU"


@pytest.mark.parametrize("name,text", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_rule_judge(name, text):
    res, cpu, err = run_in_thread(lambda: RuleJudge().judge("Which? (A) 1 (B) 2", text, ["1", "2"]))
    assert err is None, repr(err)
    assert cpu < ITEM_BOUND_S, f"{cpu:.2f} s CPU"
    assert res.ok or res.error.startswith("judge_error: input too large")


_TOKENS = list("{}[]()^\\$!0123456789 .,:;-+*/=xABab\n\x00") + [
    r"\boxed{", r"\frac{", "answer is ", "**", "(B)", "####", "Wait, ", "The answer is ", "<think>", "</think>", "```"]
_TEXT = st.lists(st.sampled_from(_TOKENS), max_size=300).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, gold=st.sampled_from(["5", "B", r"\frac{1}{2}", "yes", "x^2"]))
def test_hypothesis_verify_and_rules_never_raise(text, gold):
    res = verify(text, gold, "free_form")
    assert res.correct in (True, False, None)
    if gold in ("B",):
        assert verify(text, gold, "multiple_choice", ["1", "2", "3"]).correct in (True, False, None)
    v = RuleJudge().judge("", text)
    assert v.ok or v.error.startswith("judge_error")


# ------------------------------------------------------------------ issue 25: time, not only size

from howeval.parsing.limits import MAX_TEXT_CHARS  # noqa: E402


def _at_limit(unit: str) -> str:
    """``unit`` repeated to just under the 200,000-character limit."""
    return (unit * (MAX_TEXT_CHARS // len(unit)))[: MAX_TEXT_CHARS - 1000]


AT_LIMIT = [
    ("boxes-no-break", _at_limit(r"\boxed{1} ")),  # 199,000 characters did not finish in 600 s (issue 25)
    ("answer-boxes", _at_limit(r"answer \boxed{1} ")),
    ("one-value-many-forms", "".join(f"The answer is {5 * i}/{i}. " for i in range(1, 12000))[: MAX_TEXT_CHARS - 1000]),
    ("same-letter-many-values", "".join(f"The answer is (A) {i}. " for i in range(12000))[: MAX_TEXT_CHARS - 1000]),
    ("braced-towers", _at_limit("{9}^{{9}^{9}} ")),
    ("powers", _at_limit("2^{3} ")),
]


@pytest.mark.parametrize("name,text", AT_LIMIT, ids=[c[0] for c in AT_LIMIT])
def test_rule_judge_at_the_size_limit_stays_inside_its_cpu_budget(name, text):
    res, cpu, err = run_in_thread(lambda: RuleJudge().judge("", text))
    assert err is None, repr(err)
    assert res.ok, res.error  # finished: not even the budget backstop was needed
    assert cpu < RuleJudge.time_budget_s, f"{cpu:.2f} s CPU"


@pytest.mark.parametrize("name,text", AT_LIMIT, ids=[c[0] for c in AT_LIMIT])
def test_verify_at_the_size_limit_stays_inside_its_cpu_budget(name, text):
    for answer_type, gold, options in TYPES:
        res, cpu, err = run_in_thread(partial(verify, text, gold, answer_type, options))
        assert err is None, f"{answer_type}: {err!r}"
        assert cpu < ITEM_BOUND_S, f"{answer_type}: {cpu:.2f} s CPU"


def _judge_cpu_pair(small_text: str, large_text: str, rounds: int = 5) -> tuple[float, float]:
    """The least CPU seconds of the rule judge on each text over ``rounds`` interleaved runs (small, large,
    small, ...) with the cyclic GC off: other processes on a shared core (cache, page faults) and a GC pass
    landing in one run only ever add time, and interleaving gives both sizes the same conditions (a min of
    3 separate runs per size saw 0.087 s -> 0.288 s for a doubling that is 2.0x)."""
    import gc

    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, text in enumerate((small_text, large_text)):
            gc.collect()
            gc.disable()
            try:
                _, cpu, err = run_in_thread(lambda text=text: RuleJudge().judge("", text))
            finally:
                gc.enable()
            assert err is None
            best[i] = min(best[i], cpu)
    return best[0], best[1]


@pytest.mark.parametrize("unit", [r"\boxed{1} ", r"answer \boxed{2} "], ids=["boxes", "answer-boxes"])
def test_rule_judge_time_grows_linearly_on_box_runs(unit):
    # was quadratic (extract_claims searched the whole prefix of every box). Four times the text: linear is
    # 4x, quadratic 16x; the bound 8x leaves noise a factor 2 either way (a doubling bounded at 3x failed CI
    # at 3.08x on a loaded 2-core machine, 5 December)
    small, large = _judge_cpu_pair(unit * 4000, unit * 16000)
    assert large < 8.0 * max(small, 0.005), f"{small:.3f} s -> {large:.3f} s"


def test_rule_judge_time_grows_linearly_on_many_forms_of_one_value():
    # 10,000 distinct forms of 5 ("10/2", "15/3", ...) were compared pair by pair
    # four times the forms (6,000 is near MAX_TEXT_CHARS): linear 4x, quadratic 16x, bound 8x
    small, large = _judge_cpu_pair("".join(f"The answer is {5 * i}/{i}. " for i in range(1, 1500)),
                                   "".join(f"The answer is {5 * i}/{i}. " for i in range(1, 6000)))
    assert large < 8.0 * max(small, 0.005), f"{small:.3f} s -> {large:.3f} s"


def test_rule_judge_over_its_cpu_budget_fails_the_row_with_the_reason():
    judge = RuleJudge()
    judge.time_budget_s = 1e-9  # any work at all overruns it
    v = judge.judge("", "Let me think. The answer is 5. " * 50)
    assert not v.ok and v.error == "judge_error: timeout after 1e-09 s"


def test_cpu_deadline_counts_this_threads_cpu_and_rejects_bad_values():
    d = budget.CpuDeadline(0.05)
    d.check()  # nothing spent yet
    x = 0
    while d.used() <= 0.06:
        x += 1
    with pytest.raises(budget.BudgetExceeded, match=r"^timeout after 0.05 s$"):
        d.check()
    with pytest.raises(ValueError, match="positive finite"):
        budget.CpuDeadline(0)


@pytest.mark.parametrize("text", [r"\boxed{{9}^{{9}^{{9}^{9}}}}", r"\boxed{{10}^{{10}^{10}}}", r"\boxed{2^{\left(3^{4}\right)}}"])
def test_braced_power_towers_are_refused_before_math_verify(text):
    res, cpu, err = run_in_thread(lambda: verify(text, "9", "free_form"))
    assert err is None, repr(err)
    assert res.method == METHOD_BUDGET and res.reason.endswith("has a power in an exponent"), res.reason
    assert cpu < ITEM_BOUND_S
