"""``howeval.rewards.query.response_in_query``: the response inside an OpenRLHF ``query``, never the prompt
(issue 40), and ``howeval.rewards.logs`` (the per-row floats OpenRLHF and veRL log)."""
from __future__ import annotations

import doctest

import pytest

import howeval.rewards.logs
import howeval.rewards.query
from howeval.rewards.query import PromptNotInQuery, response_in_query

EXAMPLE = "Answer in the form \\boxed{4}. What is 2+2?\n"


@pytest.mark.parametrize("query, prompt, response", [
    (EXAMPLE + "The answer is 5", EXAMPLE, "The answer is 5"),                        # exact prefix
    (EXAMPLE + "The answer is 5", EXAMPLE.replace("form", "form "), "The answer is 5"),  # issue 40: one extra space in prompts
    ("What is 2 + 2? The answer is 5", "What is 2 + 2 ? ", "The answer is 5"),        # clean_up_tokenization_spaces dropped " ?"
    (" What is 2+2? 5", "What is 2+2? ", "5"),                                         # a leading space added (SentencePiece)
    ("What is ４+４? x", "What is 4+4? ", "x"),                                        # NFKC-normalised full-width digits
    ("e\u0301t\u00e9 ok", "\u00e9t\u00e9 ", "ok"),                                     # composed vs decomposed accents
    ("<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA", "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n", "A"),
    ("anything", "", "anything"),
    ("Q:\n\n  A", "Q: \n", "  A"),                                                      # only the prompt's trailing whitespace is taken
])
def test_the_response_is_what_follows_the_prompt(query, prompt, response):
    assert response_in_query(query, prompt) == response
    assert query.endswith(response)


@pytest.mark.parametrize("query, prompt, where", [
    ("is 2+2? The answer is 5", "What is 2+2? ", "differ at prompt character 0"),   # OpenRLHF cut the prompt from the left
    ("What is 3+3? 6", "What is 2+2? ", "differ at prompt character 8"),
    ("What is", "What is 2+2? ", "ends inside the prompt"),
    ("\u00e9t\u00e9", "e", "ends inside query character 0"),                       # the split would cut a character
])
def test_a_prompt_not_at_the_start_of_query_is_refused_with_where(query, prompt, where):
    with pytest.raises(PromptNotInQuery, match=where):
        response_in_query(query, prompt)


def test_the_issue_40_request_is_never_scored_on_the_prompts_boxed_answer():
    """The prompt shows \\boxed{4}; the response says 5; prompts has one extra space: the text to verify is
    the response alone (before: the whole query, whose \\boxed{4} paid 1.0)."""
    from howeval.judges.verify import verify

    prompt = "Give the final answer as \\boxed{4}. What is 2+2?  "
    query = "Give the final answer as \\boxed{4}. What is 2+2? The answer is 5"
    response = response_in_query(query, prompt)
    assert response == "The answer is 5"
    assert verify(query, "4", "free_form").correct is True       # what the old code scored
    assert verify(response, "4", "free_form").correct is False


def test_doctests():
    for mod in (howeval.rewards.query, howeval.rewards.logs):
        assert doctest.testmod(mod).failed == 0
