"""Table-driven tests of howeval.rewards.functions with hand-computed values (SPEC sections 2 and 3)."""
from __future__ import annotations

import doctest

import pytest

from howeval.rewards import functions as rewards
from howeval.rewards.functions import (
    bernoulli_gate,
    cpr_reward,
    pattern_reward,
    pattern_score,
)


def _labels(cot=False, rep=False, con=False, pr=False):
    return {"cot": cot, "rep": rep, "con": con, "pr": pr}


@pytest.mark.parametrize(
    "labels, mean, max_",
    [
        (_labels(), 1.0, 1.0),
        (_labels(cot=True), 0.75, 0.0),
        (_labels(cot=True, rep=True), 0.5, 0.0),
        (_labels(rep=True, con=True, pr=True), 0.25, 0.0),
        (_labels(True, True, True, True), 0.0, 0.0),
        ({"cot": 0, "rep": 1, "con": 0, "pr": 0}, 0.75, 0.0),
    ],
)
def test_pattern_score_table(labels, mean, max_):
    assert pattern_score(labels) == pytest.approx(mean)
    assert pattern_score(labels, mode="mean") == pytest.approx(mean)
    assert pattern_score(labels, mode="max") == pytest.approx(max_)


@pytest.mark.parametrize(
    "labels, mode, match",
    [
        ({"cot": True, "rep": False, "con": False}, "mean", "missing \\['pr'\\]"),
        ({**_labels(), "extra": True}, "mean", "unexpected \\['extra'\\]"),
        ({**_labels(), "cot": 0.5}, "mean", "cot"),
        ({**_labels(), "cot": "yes"}, "mean", "cot"),
        (_labels(), "median", "registered"),
    ],
)
def test_pattern_score_errors(labels, mode, match):
    with pytest.raises(ValueError, match=match):
        pattern_score(labels, mode=mode)


@pytest.mark.parametrize(
    "s_ver, s_pat, z, expected",
    [
        # R = s_ver * (0.9 + 0.1 * a), a = z*s_pat + (1-z)
        (1.0, 1.0, 1, 1.0),
        (1.0, 0.75, 1, 0.975),
        (1.0, 0.5, 1, 0.95),
        (1.0, 0.0, 1, 0.9),
        (1.0, 0.0, 0, 1.0),  # gate closed: s_pat ignored
        (1.0, None, 0, 1.0),
        (0.0, 1.0, 1, 0.0),  # wrong answer: always 0
        (0.0, None, 0, 0.0),
        (0.5, 0.5, 1, 0.475),  # a soft verifier score scales the same way
    ],
)
def test_pattern_reward_table(s_ver, s_pat, z, expected):
    assert pattern_reward(s_ver, s_pat, z) == pytest.approx(expected)


@pytest.mark.parametrize(
    "args, match",
    [
        ((1.0, None, 1), "s_pat is None"),
        ((1.0, 0.5, 2), "z="),
        ((1.0, 0.5, 0.5), "z="),
        ((1.5, 0.5, 1), "s_ver"),
        ((1.0, 1.2, 1), "s_pat"),
    ],
)
def test_pattern_reward_errors(args, match):
    with pytest.raises(ValueError, match=match):
        pattern_reward(*args)


def test_pattern_reward_range():
    for s_pat in (0.0, 0.25, 0.5, 0.75, 1.0):
        for z in (0, 1):
            assert 0.9 <= pattern_reward(1.0, s_pat, z) <= 1.0
            assert pattern_reward(0.0, s_pat, z) == 0.0


def test_bernoulli_gate_deterministic_and_rate():
    keys = [f"prompt-{i}:{g}" for i in range(2500) for g in range(4)]
    z = [bernoulli_gate(k) for k in keys]
    assert z == [bernoulli_gate(k, p=0.6, seed=0) for k in keys]  # same on every call
    assert set(z) == {0, 1}
    assert abs(sum(z) / len(z) - 0.6) < 0.02  # 10,000 keys: sd ~0.005
    z_other_seed = [bernoulli_gate(k, seed=1) for k in keys]
    assert z_other_seed != z
    assert all(bernoulli_gate(k, p=1.0) == 1 for k in keys[:100])
    assert all(bernoulli_gate(k, p=0.0) == 0 for k in keys[:100])


def test_bernoulli_gate_pinned_values():
    # SHA-256("0:prompt-1:0")[:8] / 2**64: pinned so server and trainer releases stay in agreement.
    import hashlib

    u = int.from_bytes(hashlib.sha256(b"0:prompt-1:0").digest()[:8], "big") / 2**64
    assert bernoulli_gate("prompt-1:0", p=0.6) == int(u < 0.6)
    assert bernoulli_gate("prompt-1:0", p=u) == 0 and bernoulli_gate("prompt-1:0", p=min(1.0, u + 1e-9)) == 1


@pytest.mark.parametrize("args, exc", [(("k", 1.5), ValueError), (("k", -0.1), ValueError), ((3, 0.5), TypeError)])
def test_bernoulli_gate_errors(args, exc):
    with pytest.raises(exc):
        bernoulli_gate(*args)


@pytest.mark.parametrize(
    "correct, f1, kwargs, expected",
    [
        # correct: a_w + s_w * F1
        (True, 0.0, {}, 0.65),
        (True, 0.5, {}, 0.825),
        (True, 1.0, {}, 1.0),
        # wrong: s_w * F1 * lam
        (False, 0.0, {}, 0.0),
        (False, 0.5, {}, 0.0525),
        (False, 1.0, {}, 0.105),
        # the reference code's weights 0.6 / 0.4
        (True, 0.5, {"a_w": 0.6, "s_w": 0.4}, 0.8),
        (False, 0.5, {"a_w": 0.6, "s_w": 0.4}, 0.06),
        (False, 1.0, {"lam": 0.0}, 0.0),
    ],
)
def test_cpr_reward_table(correct, f1, kwargs, expected):
    assert cpr_reward(correct, f1, **kwargs) == pytest.approx(expected)


@pytest.mark.parametrize(
    "args, kwargs",
    [((True, 1.2), {}), ((True, -0.1), {}), ((2, 0.5), {}), (("yes", 0.5), {}), ((True, 0.5), {"lam": -1.0})],
)
def test_cpr_reward_errors(args, kwargs):
    with pytest.raises(ValueError):
        cpr_reward(*args, **kwargs)


def test_batch_values():
    assert [pattern_reward(v, p, z) for v, p, z in [(1.0, 0.5, 1), (1.0, None, 0), (0.0, 1.0, 1)]] == pytest.approx([0.95, 1.0, 0.0])
    assert [cpr_reward(c, 0.5) for c in (True, False)] == pytest.approx([0.825, 0.0525])
    assert cpr_reward(True, 0.5, a_w=0.6, s_w=0.4) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="s_pat is None"):
        pattern_reward(1.0, None, 1)


def test_doctests():
    assert doctest.testmod(rewards).failed == 0


# ------------------------------------------------------------------ fuzz (issue 12): only ValueError escapes

from hypothesis import (  # noqa: E402
    given,
    settings,
    strategies as st,  # noqa: E402
)

_any_number = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30), st.booleans())


@settings(max_examples=300, deadline=None)
@given(s_ver=_any_number, s_pat=st.one_of(st.none(), _any_number), z=st.one_of(st.integers(-2, 3), st.floats()))
def test_fuzz_pattern_reward_in_range_or_value_error(s_ver, s_pat, z):
    try:
        r = rewards.pattern_reward(s_ver, s_pat, z)
    except ValueError:
        return
    assert 0.0 <= r <= 1.0


@settings(max_examples=300, deadline=None)
@given(correct=st.one_of(st.booleans(), st.integers(-2, 3)), f1=_any_number,
       a_w=st.floats(0, 1), s_w=st.floats(0, 1), lam=st.floats(0, 1))
def test_fuzz_cpr_reward_in_range_or_value_error(correct, f1, a_w, s_w, lam):
    try:
        r = rewards.cpr_reward(correct, f1, a_w, s_w, lam)
    except ValueError:
        return
    assert 0.0 <= r <= a_w + s_w


@settings(max_examples=300, deadline=None)
@given(key=st.text(alphabet=st.characters(), max_size=200) | st.just("\ud800\x00" * 1000), p=st.floats(0, 1),
       seed=st.integers(-10**20, 10**20))
def test_fuzz_bernoulli_gate_any_key(key, p, seed):
    assert rewards.bernoulli_gate(key, p, seed) in (0, 1)


def test_bernoulli_gate_surrogate_key_is_stable():
    assert rewards.bernoulli_gate("a\ud800b") == rewards.bernoulli_gate("a\ud800b")


def test_composite_reward_values_and_range():
    from howeval.rewards.functions import composite_reward

    assert composite_reward(True, 1.0) == pytest.approx(1.0)
    assert composite_reward(True, 0.0) == pytest.approx(0.65)
    assert composite_reward(False, 1.0) == pytest.approx(0.35)  # CPR gives 0.105 here (λ = 0.3)
    assert composite_reward(False, 0.2, a_w=0.6, s_w=0.4) == pytest.approx(0.08)
    with pytest.raises(ValueError, match="step_f1=1.5 must lie in"):
        composite_reward(True, 1.5)
    with pytest.raises(ValueError, match="s_w=-0.1 must be >= 0"):
        composite_reward(True, 0.5, s_w=-0.1)
