"""RuleJudge: hand-written cases per cue (positives, negatives, CoT priority) and real responses."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from howeval.judges.claims import extract_claims, options_from_list, parse_options
from howeval.judges.rules import RuleJudge
from howeval.judges.sentences import normalize_newlines, split_sentences
from howeval.judges.verdict import LABELS, PatternVerdict

J = RuleJudge()


def vec(text: str, **kw) -> str:
    """The verdict as a 4-char string in LABELS order, e.g. "1000" for CoT only."""
    v = J.judge(kw.get("question"), text, kw.get("options"))
    return "".join("1" if v.labels[k] else "0" for k in LABELS)


CASES = [
    # --- CoT leakage ---
    ("think tag", "<think>The user wants the area. 3*4=12.</think>\nThe area is 12.", "1000"),
    ("wait", "The triangle has 3 sides. Wait, the figure shows 4 sides, so it is a square. The answer is 4.", "1000"),
    ("hmm", "Hmm, the bar for 2012 is 25. The answer is 25.", "1000"),
    ("user narration", "Okay, so the user is asking for the mode. The mode is 9.", "1000"),
    ("first I need to", "First, I need to find the largest value in the table. It is 7. The answer is 7.", "1000"),
    ("made a mistake", "The sum is 10. I think I made a mistake: 4 + 5 = 9. The answer is 9.", "1000"),
    ("let me re-check", "The total is 14. Let me re-check the second row: 6 + 8 = 14. The answer is 14.", "1000"),
    ("actually no", "The answer is 6. Actually, no, the last bar is 7 so the answer is 7.", "1000"),
    ("polished explanation", "The table lists 2, 1, 6 and 7 roses. The greatest value is 7, so the answer is 7.", "0000"),
    ("we need to is not cot", "To find the total, we need to add the two prices: $5 + $2 = $7. The answer is $7.", "0000"),
    # --- Repetition ---
    ("duplicate sentence", "The red bar is the tallest bar in the chart. The answer is red. The red bar is the tallest bar in the chart.", "0100"),
    ("conclusion x3", "The answer is 12. The 3 rows of 4 chairs give 3 × 4 = 12. The answer is 12. So, the answer is 12.", "0100"),
    ("loop", "I count the apples in the basket one by one until I reach the end " * 3, "0100"),
    (
        "template x3",
        "Option A is possible because the strip folds with 3 on top and 5 below.\n"
        "Option B is possible because the strip folds with 3 on top and 4 below.\n"
        "Option C is possible because the strip folds with 3 on top and 2 below.\nThe answer is (none).",
        "0100",
    ),
    ("conclusion twice is emphasis", "There are 3 rows of 4 seats, 3 × 4 = 12. Therefore, there are \\boxed{12} seats. The answer is 12.", "0000"),
    ("short numeric lines are not rep", "Row sums: 2, 2, 3, 1\nRow sums: 2, 2, 3, 1\nThe answer is B.", "0000"),
    # --- Contradiction ---
    ("two boxed answers", "The total is 3 + 4 = 7, so the answer is \\boxed{7}. Counting again gives 8 in all, so the answer is \\boxed{8}.", "0010"),
    ("two answer statements", "Adding 3 and 4 gives 7. The answer is 7.\nSubtracting instead, 4 - 3 = 1. The answer is 1.", "0010"),
    ("yes vs no", "Oscar has $12,000 and the tickets cost $12,933. The answer is no.\nSo he can buy both. The answer is yes.", "0010"),
    ("claim and negation", "Configuration E is possible to obtain by folding.\nHowever, configuration E is not possible to obtain by folding. The answer is E.", "0010"),
    ("same answer restated", "The radius is $\\boxed{\\frac{3 \\sqrt{2}}{2}}$. The answer is: \\frac{3\\sqrt{2}}{2}", "0000"),
    ("letter vs value with unknown options", "The angle is $\\boxed{30^\\circ}$. The answer is (E).", "0000"),
    ("intermediate boxed value is not an answer", "First $AE = \\boxed{22}$ by Pythagoras, 16^2+15^2=481. Then the area is 16 * 22 / 2 = 176, so the answer is $\\boxed{176}$.", "0000"),
    # --- Performative reasoning ---
    ("staged then bare", "Let's analyze the image step by step.\nBased on careful analysis, the answer is B.", "0001"),
    ("assertive wrapper", "After carefully analyzing the figure, it is clear that the shaded region is the largest. The answer is C.", "0001"),
    ("underived conclusion", "The tables have gaps between them. People cannot sit in the gaps. Therefore, the maximum is $\\boxed{12}$.", "0001"),
    ("staged with content", "Let's analyze the image step by step.\nThe left bar reads 12 and the right bar reads 7.\n12 - 7 = 5, so the difference is \\boxed{5}.", "0000"),
    ("derived by counting", "The ribbon forms three loops. The cut splits each loop and also makes two more parts. So there are $\\boxed{5}$ pieces.", "0000"),
    ("bare answer is not pr", "B", "0000"),
    ("bare boxed answer is not pr", "The answer is \\boxed{3}.", "0000"),
    # --- CoT priority ---
    ("superseded draft answer is cot, not con", "The answer is 5. Wait, I misread the chart: the bar is 6. The answer is 6.", "1000"),
    ("independent contradiction after the trace", "The answer is 5. Wait, I misread the chart: the bar is 6. The answer is 6. Final answer: 7", "1010"),
    ("wrapper inside a cot sentence is cot only", "Hmm, based on careful analysis it is B. The answer is B.", "1000"),
    ("pr outside the trace still counts", "Hmm, let me think. Based on careful analysis, the answer is B.", "1001"),
    ("think block contradictions are cot only", "<think>Maybe the answer is 4. No, the answer is 5.</think>\nThe 5 marbles are red, so the answer is 5.", "1000"),
    ("rep co-occurs with cot", "Wait, let me re-check. The red bar is the tallest bar in the chart. The red bar is the tallest bar in the chart.", "1100"),
    # issue 35: one sentence of boxes, no claim but the last, no token once boxes are masked
    ("the same box back to back is rep", "\\boxed{1} " * 20_000, "0100"),
    ("three boxes back to back", "So \\boxed{7}, \\boxed{7}, \\boxed{7}.", "0100"),
    ("two equal boxes apart are not rep", "Part (a) is \\boxed{1}. Part (b) is also \\boxed{1}.", "0000"),
]


@pytest.mark.parametrize("name,text,expected", CASES, ids=[c[0] for c in CASES])
def test_rule_cases(name, text, expected):
    v = J.judge("", text)
    assert vec(text) == expected, (name, v.evidence)
    for k in LABELS:  # evidence exactly for the positive labels
        assert (v.evidence[k] is not None) == v.labels[k], (k, v.evidence)


def test_verdict_shape_and_determinism():
    text = "The answer is 5. Wait, the bar is 6. The answer is 6."
    a, b = J.judge("", text), J.judge("", text)
    assert isinstance(a, PatternVerdict) and a == b
    assert a.judge == "rules" and a.judge_version == RuleJudge.version
    assert a.error is None and a.trigger is True and a.as_vector() == (True, False, False, False)


def test_rejects_non_string():
    with pytest.raises(TypeError, match="response must be str"):
        J.judge("", None)  # type: ignore[arg-type]


def test_literal_newlines():
    assert normalize_newlines("Read.\\n\\nFirst, 7.") == "Read.\n\nFirst, 7."
    assert normalize_newlines("$a \\neq b$ and $\\nabla f$") == "$a \\neq b$ and $\\nabla f$"
    sents = split_sentences(normalize_newlines("Read the numbers.\\n\\n2, 1, 6\\n\\nThe answer is 7."))
    assert [s.text for s in sents] == ["Read the numbers.", "2, 1, 6", "The answer is 7."]
    assert [s.para for s in sents] == [0, 1, 2]


def test_list_markers_stay_with_their_item():
    sents = split_sentences("1. Exchange the first squares.\n2. Exchange the others.")
    assert [s.text for s in sents] == ["1. Exchange the first squares.", "2. Exchange the others."]


def test_claims_and_options():
    claims = extract_claims("So $x=\\boxed{4}$ here. The answer is (C) 1 hour and 45 minutes. Finally $\\boxed{8}$.")
    assert [(c.letter, c.value) for c in claims] == [("C", "1hourand45minutes"), (None, "8")]
    assert parse_options("Which?\n(A) $36^{\\circ}$\n(B) 42\n(C) 54") == {"A": "36", "B": "42", "C": "54"}
    assert options_from_list(["A", "B", "C"]) == {}
    assert options_from_list(["$10^{\\circ}$", "15"]) == {"A": "10", "B": "15"}
    # a letter and a value disagree only when the options say so
    assert vec("The angle is $\\boxed{30^\\circ}$. The answer is (E).", options=["10", "15", "20", "25", "30"]) == "0000"
    assert vec("The angle is $\\boxed{30^\\circ}$. The answer is (E).", options=["10", "15", "20", "25", "84"]) == "0010"
    assert vec("The angle is $\\boxed{30^\\circ}$. The answer is (E).", question="Size?\n(A) 10\n(B) 20\n(C) 30\n(D) 40\n(E) 50") == "0010"


# ------------------------------------------------------------------------------------------------------
# Real responses (../shared/data/responses)
# ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(shared_data):
    manifest = {json.loads(line)["uid"]: json.loads(line) for line in (shared_data / "manifest.jsonl").open()}
    rows = {}
    for fname, src in [("mathv_model_responses.jsonl", "math-vision"), ("tabmwp_gpt3_cot_responses.jsonl", "tabmwp")]:
        for line in (shared_data / "responses" / fname).open():
            r = json.loads(line)
            m = manifest[f"{src}:{r['id']}"]
            rows[(src, r["model"].split()[0], r["id"])] = (r["response"], m["question"], m["options"])
    return rows


REAL = [
    # (source, model, id, expected, why)
    ("math-vision", "qwen-vl-max", "5", "0000", "clean worked arithmetic"),
    ("math-vision", "qwen-vl-max", "80", "0100", "the same option sentence four times"),
    ("math-vision", "qwen-vl-max", "1680", "0100", "one justification template for all five options"),
    ("math-vision", "qwen-vl-max", "10", "0001", "12 seats asserted, no quantity produces it"),
    ("math-vision", "qwen-vl-max", "149", "0000", "intermediate boxed 4 is not a final-answer claim"),
    ("math-vision", "InternLM-XComposer2-VL", "1559", "0010", "boxed 156 degrees vs '(E)' = 84 degrees"),
    ("math-vision", "InternLM-XComposer2-VL", "1512", "0000", "boxed 30 degrees and '(E)' = 30 degrees agree"),
    ("math-vision", "InternLM-XComposer2-VL", "173", "0000", "boxed and 'The answer is:' agree"),
    ("math-vision", "InternLM-XComposer2-VL", "4", "0000", "short answer"),
    ("math-vision", "gpt-3.5-turbo-0125", "1893", "0001", "'comparing the ratios ... we can see' with no values"),
    ("math-vision", "gpt-3.5-turbo-0125", "1680", "0100", "long justification block repeated"),
    ("math-vision", "gpt-3.5-turbo-0125", "190", "0000", "four enumerated moves give 4"),
    ("tabmwp", "GPT-3", "2754", "0000", "literal \\n text, one answer"),
    ("tabmwp", "GPT-3", "33549", "0000", "'The answer is (B) no.' is one claim"),
    ("tabmwp", "GPT-3", "14520", "0000", "bare answer"),
]


@pytest.mark.parametrize("src,model,rid,expected,why", REAL, ids=[f"{r[0]}:{r[1]}:{r[2]}" for r in REAL])
def test_real_responses(real, src, model, rid, expected, why):
    response, question, options = real[(src, model, rid)]
    v = J.judge(question, response, options)
    got = "".join("1" if v.labels[k] else "0" for k in LABELS)
    assert got == expected, (why, v.evidence)


def test_echoed_options_in_response_are_used(real):
    response, _, _ = real[("math-vision", "InternLM-XComposer2-VL", "1559")]
    assert vec(response) == "0010"  # the response itself lists "(E) $84^{\circ}$"


def test_real_label_counts(real):
    """Regression guard for the cue set (update together with RULES_VERSION)."""
    counts = Counter()
    for response, question, options in real.values():
        v = J.judge(question, response, options)
        counts.update(k for k in LABELS if v.labels[k])
    assert len(real) == 184
    assert dict(counts) == {"rep": 6, "con": 1, "pr": 2}


# ------------------------------------------------------------ code and quoted text (issue 12): no Con / PR cues

CODE_AND_QUOTE_CASES = [
    # (name, response, expected cot/rep/con/pr)
    ("code block assignment", "Read the file:\n```python\nanswers = reader.read()\nanswer = 5\n```\nThe answer is 6.",
     "0000"),
    ("inline code", "Run `answer = 5` to test it.\nThe answer is 6.", "0000"),
    ("quoted sentence", 'The checker prints "an answer is correct" when it passes. The answer is 6.', "0000"),
    ("block quote", "> The answer is 4, says the textbook.\n\nIt misprints the sum: 2 + 4 = 6. The answer is 6.", "0000"),
    ("short quoted answers still contradict", 'The answer is "B". Later: the answer is "C".', "0010"),
    ("wrapper inside code", "The template prints `Based on careful analysis, it is B.` for every item.", "0000"),
    ("wrapper outside quotes still fires", "Based on careful analysis, the answer is B.", "0001"),
    ("'answers' is not 'answer'", "The answers below are drafts. The answer is 6. Other answers: none.", "0000"),
]


@pytest.mark.parametrize("name,text,expected", CODE_AND_QUOTE_CASES, ids=[c[0] for c in CODE_AND_QUOTE_CASES])
def test_code_and_quoted_text_are_not_con_or_pr(name, text, expected):
    assert vec(text) == expected, RuleJudge().judge("", text).evidence
