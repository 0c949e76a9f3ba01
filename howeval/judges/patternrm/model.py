"""PatternRM: text-only, batched four-label prediction for (question, response) pairs (SPEC section 2).

Backends (a registry, :data:`BACKENDS`):

- ``trained`` (the default): the embedded trained PatternRM, a classification head on the bundled
  all-MiniLM-L6-v2 (``howeval.judges.patternrm.head``), trained once by ``make patternrm`` from the offline
  corpus and cached under ``~/.cache/howeval``; ``path`` = another trained head folder. One encoder pass
  per batch.
- ``rules``: the deterministic rule judge (``howeval.judges.rules.RuleJudge``), the high-precision baseline.
- ``checkpoint``: a causal LM trained by ``howeval.ray_jobs.train_patternrm`` (or any LM that writes the direct
  format), greedy-decoded in batches with left padding (``engine: hf``; bf16 weights on a GPU) or by the
  project's ``vllm`` engine (``engine: vllm``, ``engine_options`` = vLLM engine arguments); its output is read by
  ``howeval.judges.patternrm.format.parse_label_output``. Unparseable output is an error on that row (``labels`` None,
  ``error`` set), never a clean label.

Plain Python, no Ray (the core): the reward server wraps it in a Serve deployment, the GRPO trainer calls
it in-process, the pattern-judge registry wraps it as ``kind: patternrm``. Heavy imports happen in ``__init__``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from howeval.config.rewards import PatternRMConfig
from howeval.judges.patternrm.format import PatternRMParseError, parse_label_output, patternrm_messages
from howeval.records import check_columns

log = logging.getLogger(__name__)

REQUIRED_KEYS = {"question": "the prompt q (text only)", "response": "the user-facing response y_m"}


def _check_items(items: Sequence[dict]) -> None:
    for i, it in enumerate(items):
        check_columns(it, REQUIRED_KEYS, f"PatternRM item {i}", "keys")


class _RulesBackend:
    name = "rules"

    def __init__(self, **_: Any):
        from howeval.judges.rules import RULES_VERSION, RuleJudge

        self.judge = RuleJudge()
        self.version = f"rules@{RULES_VERSION}"

    def label(self, items: Sequence[dict]) -> list[dict]:
        verdicts = self.judge.judge_batch([{"question": it.get("question") or "", "response": it["response"]} for it in items])
        return [{"labels": dict(v.labels), "error": v.error, "raw": None} for v in verdicts]


def _cut_tokens(tok: Any, text: str, keep: int) -> str:
    """``text`` cut to about ``keep`` tokens: its head and tail halves around a ``[...]`` line."""
    ids = tok(text, add_special_tokens=False)["input_ids"]
    if len(ids) <= keep:
        return text
    half = max(1, (keep - 4) // 2)
    return tok.decode(ids[:half]) + "\n[...]\n" + tok.decode(ids[-half:])


def fit_prompt(tok: Any, question: str, response: str, max_input_tokens: int, max_response_chars: int | None = None,
               form: str = "direct") -> str:
    """The chat prompt of one PatternRM input, at most ``max_input_tokens`` tokens, the template whole.

    Issue 21: truncating the *prompt* (the tokenizer's ``truncation=True``) cut the assistant header of a
    4,000-character response, so the model saw no turn to answer. Here the template (system prompt, user
    turn, generation header) is always kept; the question is cut to at most a quarter of the budget, then
    the response (head and tail kept, ``[...]`` between) to what is left.

    Args:
        tok: a Hugging Face tokenizer with a chat template.
        max_input_tokens: the prompt's token budget (>= the empty template's size + 16).
        max_response_chars: a character cap applied first (``patternrm_messages``), or None.
        form: the inference form, ``"direct"`` or ``"thinking"`` (``patternrm_messages``).

    Returns:
        the prompt text (``apply_chat_template(..., add_generation_prompt=True)``); tokenized without
        special tokens it is at most ``max_input_tokens`` long.

    Raises:
        ValueError: the empty template alone does not fit in ``max_input_tokens`` (the message gives both).
    """
    def render(q: str, r: str) -> str:
        return tok.apply_chat_template(patternrm_messages(q, r, form=form), tokenize=False, add_generation_prompt=True)

    def n_tok(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    base = n_tok(render("", ""))
    if base + 16 > max_input_tokens:
        raise ValueError(f"the PatternRM template alone is {base} tokens; max_input_tokens={max_input_tokens} leaves no room")
    r = response if max_response_chars is None or len(response) <= max_response_chars else render_cut(response, max_response_chars)
    prompt = render(question, r)
    if n_tok(prompt) <= max_input_tokens:
        return prompt
    budget = max_input_tokens - base
    q = _cut_tokens(tok, question, budget // 4)
    room = budget - n_tok(q) - 8
    for _ in range(4):  # decode/encode round trips can move a few tokens: shrink until it fits
        prompt = render(q, _cut_tokens(tok, r, room))
        over = n_tok(prompt) - max_input_tokens
        if over <= 0:
            return prompt
        room -= over + 4
    raise ValueError(f"could not fit the PatternRM prompt in {max_input_tokens} tokens")


def render_cut(response: str, max_chars: int) -> str:
    """The character cap of ``patternrm_messages`` (head and tail halves around ``[...]``)."""
    half = max_chars // 2
    return response[:half] + "\n[...]\n" + response[-half:]


class _CheckpointBackend:
    name = "checkpoint"

    def __init__(self, path: str | None = None, max_new_tokens: int = 24, max_input_tokens: int = 1024,
                 max_response_chars: int | None = 4000, device: str | None = None, engine: str = "hf",
                 engine_options: dict | None = None, form: str = "direct", **_: Any):
        if not path:
            raise ValueError("patternrm kind 'checkpoint' needs a path (a trained checkpoint folder, or 'embedded')")
        if path == "embedded":  # the untrained embedded SmolLM2: a format smoke test, not a reward model
            from howeval.engines.checkpoints import embedded_checkpoint

            path = embedded_checkpoint()
        self.path = path
        self.form = form
        self.version = f"checkpoint@{path}" + ("" if form == "direct" else f"#{form}")
        self.max_new_tokens = max_new_tokens
        self.max_input_tokens = max_input_tokens
        self.max_response_chars = max_response_chars
        self.engine = None
        if engine != "hf":  # the project's engine interface (vllm: continuous batching on a GPU)
            from howeval.engines.registry import build_engine

            # vLLM rejects prompts longer than max_model_len (that row gets an error): 4096 unless engine_options says
            self.engine = build_engine(engine, path, {"max_model_len": 4096, **(engine_options or {})}
                                       if engine == "vllm" else dict(engine_options or {}))
            self.version = f"checkpoint@{path}#{engine}"
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tok = AutoTokenizer.from_pretrained(path)
        self.tok.padding_side = "left"
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        # fp32 on CPU (fastest there); on a GPU the checkpoint's own dtype (bf16 for train_patternrm's GPU config)
        dtype = "auto" if str(self.device).startswith("cuda") else torch.float32
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(self.device).eval()
        self._torch = torch

    def generate(self, items: Sequence[dict]) -> list[str]:
        if self.engine is not None:
            return self._generate_engine(items)
        prompts = [fit_prompt(self.tok, it.get("question") or "", it["response"], self.max_input_tokens, self.max_response_chars,
                              self.form) for it in items]
        # every prompt fits (fit_prompt): no tokenizer truncation, which would cut the chat template
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)  # input_ids: (B, T)
        with self._torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tok.pad_token_id)  # (B, T + new)
        return self.tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)

    def _generate_engine(self, items: Sequence[dict]) -> list[str | Exception]:
        """Greedy decoding through the engine, one request per item; an engine error stays on its row."""
        from howeval.engines.base import ChatRequest

        reqs = [ChatRequest(messages=patternrm_messages(it.get("question") or "", it["response"], self.max_response_chars, self.form),
                            max_tokens=self.max_new_tokens, temperature=0.0, request_id=str(i))
                for i, it in enumerate(items)]
        done = self.engine.generate(reqs)
        if len(done) != len(reqs):
            raise RuntimeError(f"engine returned {len(done)} completions for {len(reqs)} requests")
        return [RuntimeError(c.error) if c.error else (c.raw if c.raw is not None else c.text) for c in done]

    def label(self, items: Sequence[dict]) -> list[dict]:
        out = []
        for raw in self.generate(items):
            if isinstance(raw, Exception):
                out.append({"labels": None, "error": f"patternrm_engine_error: {raw}", "raw": None})
                continue
            try:
                out.append({"labels": parse_label_output(raw), "error": None, "raw": raw})
            except PatternRMParseError as e:
                out.append({"labels": None, "error": f"patternrm_parse_error: {e}", "raw": raw})
        return out


class _TrainedBackend:
    name = "trained"

    def __init__(self, path: str | None = None, device: str | None = None, **_: Any):
        from howeval.judges.patternrm.head import HeadPatternRM

        self.model = HeadPatternRM(path, device=device)
        self.version = self.model.version

    def label(self, items: Sequence[dict]) -> list[dict]:
        return self.model.label(items)


BACKENDS: dict[str, Callable[..., Any]] = {"trained": _TrainedBackend, "rules": _RulesBackend,
                                           "checkpoint": _CheckpointBackend}


class PatternRM:
    """Labels ``{"question", "response"}`` items with the four pattern labels, one result per item.

    Args:
        kind: a registered backend (:data:`BACKENDS`): ``trained`` (default), ``rules`` or ``checkpoint``.
        **backend_kwargs: the backend's settings (``path``, ``max_new_tokens``, ``max_input_tokens``, ...).

    Each result is ``{"labels": {cot, rep, con, pr} | None, "error": str | None, "raw": str | None}``.

    >>> rm = PatternRM("rules")
    >>> rm.label_batch([{"question": "2+2?", "response": "Wait, let me re-check. The answer is 4."}])[0]["labels"]
    {'cot': True, 'rep': False, 'con': False, 'pr': False}
    """

    def __init__(self, kind: str = "trained", **backend_kwargs: Any):
        if kind not in BACKENDS:
            raise ValueError(f"patternrm kind={kind!r} is not registered; registered: {sorted(BACKENDS)}")
        self.kind = kind
        self.backend = BACKENDS[kind](**backend_kwargs)
        self.version = self.backend.version

    @classmethod
    def from_config(cls, cfg: PatternRMConfig | None = None) -> PatternRM:
        """The PatternRM a :class:`howeval.config.rewards.PatternRMConfig` describes (None = the defaults:
        the embedded trained one).

        Raises:
            ValueError: the backend refuses its settings (e.g. a missing checkpoint folder).
        """
        cfg = cfg or PatternRMConfig()
        return cls(**dict(cfg))

    def label_batch(self, items: Sequence[dict]) -> list[dict]:
        """Label a batch; a row whose output cannot be parsed carries ``error`` and no labels."""
        _check_items(items)
        if not items:
            return []
        res = self.backend.label(items)
        assert len(res) == len(items), f"backend returned {len(res)} results for {len(items)} items"
        return res
