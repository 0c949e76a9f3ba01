"""The response inside an OpenRLHF ``query``: what the policy wrote, never the prompt (issue 40).

OpenRLHF's remote reward model receives ``query`` = the prompt and the response decoded *together* from
their token ids, and ``prompts`` = the prompt text before tokenisation (OpenRLHF/OpenRLHF,
``openrlhf/utils/agent.py`` at commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7,
``SingleTurnAgentExecutor.execute``: ``query = hf_tokenizer.decode(prompt_token_ids + action_token_ids,
skip_special_tokens=False)``). A tokenizer round trip is not byte-identical: a decoder may drop the space
before punctuation (``clean_up_tokenization_spaces``), add or drop a leading space (SentencePiece),
normalise Unicode (NFKC normalizers), and OpenRLHF itself cuts a prompt longer than
``max_len - max_tokens`` from the left. So ``query`` need not start with ``prompts`` byte for byte, and
scoring the whole query would score the prompt: a prompt that shows ``\\boxed{4}`` as a format example
pays every wrong response.

:func:`response_in_query` finds the response (an exact prefix first, then the prompt matched with
whitespace ignored and Unicode compatibility-decomposed) or raises :class:`PromptNotInQuery` with where
the two differ; the reward server refuses that row with the reason, it never scores the query whole.
"""
from __future__ import annotations

import unicodedata

__all__ = ["PromptNotInQuery", "response_in_query"]


class PromptNotInQuery(ValueError):
    """``query`` does not begin with the prompt, even with whitespace and Unicode forms ignored: the
    response cannot be told apart from the prompt, so the row must not be scored."""


def _folded(text: str) -> list[tuple[str, int]]:
    """``text``'s characters after NFKD (per character) with whitespace dropped, each with its index in ``text``."""
    out: list[tuple[str, int]] = []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKD", ch) if ord(ch) > 127 else ch:
            if not c.isspace():
                out.append((c, i))
    return out


def _snippet(text: str, at: int, n: int = 24) -> str:
    return repr(text[max(0, at - 8): at + n])


def response_in_query(query: str, prompt: str) -> str:
    """The response part of an OpenRLHF ``query`` (``prompt`` + response, decoded from tokens).

    1. ``query`` starts with ``prompt``: the rest of ``query``.
    2. Else the prompt is matched against the start of ``query`` with every whitespace character ignored
       on both sides and each character compatibility-decomposed (Unicode NFKD: ``ﬁ`` = ``fi``, a full-width
       ``４`` = ``4``, ``é`` = ``e`` + combining accent); the response is the text of ``query`` after the
       prompt's last matched character, less as many whitespace characters as the prompt ends with.

    Args:
        query: OpenRLHF's ``query`` item (any length).
        prompt: OpenRLHF's ``prompts`` item (the text the prompt tokens were made from).

    Returns:
        The response, an exact substring (a suffix) of ``query``; the prompt's text is never part of it.

    Raises:
        PromptNotInQuery: the prompt's characters are not the first characters of ``query`` (a left-truncated
            prompt, another tokenizer normalisation, a wrong ``prompts`` item), or the match ends inside one
            character of ``query``; the message says where they differ.

    >>> response_in_query("Q: 2+2? A: 4", "Q: 2+2? A: ")
    '4'
    >>> response_in_query("Q: 2+2?A: The answer is 5", "Q: 2+2?  A: ")   # a space lost in the round trip
    'The answer is 5'
    >>> response_in_query("Example: \\\\boxed{4}. Q: 2+2? The answer is 5", "Example: \\\\boxed{4}. Q: 2+2?  ")
    'The answer is 5'
    >>> try:
    ...     response_in_query("Q: 2+2? 5", "Q: 3+3? ")
    ... except PromptNotInQuery as e:
    ...     print(e)
    query and prompt differ at prompt character 3 (whitespace and Unicode forms ignored): prompt 'Q: 3+3? ', query 'Q: 2+2? 5'
    """
    if query.startswith(prompt):
        return query[len(prompt):]
    p = _folded(prompt)
    q = _folded(query)
    n = len(p)
    for k in range(min(n, len(q))):
        if p[k][0] != q[k][0]:
            pi, qi = p[k][1], q[k][1]
            raise PromptNotInQuery(f"query and prompt differ at prompt character {pi} (whitespace and Unicode forms "
                                   f"ignored): prompt {_snippet(prompt, pi)}, query {_snippet(query, qi)}")
    if len(q) < n:
        raise PromptNotInQuery(f"query ({len(query)} characters) ends inside the prompt ({len(prompt)} characters; "
                               "whitespace and Unicode forms ignored): no response to score")
    if n == 0:
        end = 0
    else:
        end = q[n - 1][1] + 1
        if n < len(q) and q[n][1] == q[n - 1][1]:
            raise PromptNotInQuery(f"the prompt ends inside query character {end - 1} ({query[end - 1]!r}, "
                                   "whose Unicode decomposition goes on): the split is ambiguous")
    trailing = len(prompt) - len(prompt.rstrip())
    while trailing and end < len(query) and query[end].isspace():
        end += 1
        trailing -= 1
    return query[end:]
