"""Pattern judges (SPEC section 1): rule-based, LLM-based, and their consensus.

- :class:`RuleJudge` (``rules.py``): deterministic surface cues; a baseline and sanity check.
- :class:`LLMPatternJudge` (``llm.py``): any engine, rubric from ``rubric.py``, one repair per bad output.
- :func:`consensus` (``consensus.py``): majority labels and agreement across judges.

Every judge follows one protocol (``base.py``): ``judge_batch(items: list[JudgeItem]) -> list[PatternVerdict]``
(``verdict.py``: four labels with evidence, or an error and no labels), and is built from its config by
``kind`` (``registry.py``: ``rules``, ``llm``; new kinds register with ``@register_pattern_judge``).
"""
from howeval.judges.base import JudgeItem, PatternJudge
from howeval.judges.consensus import ConsensusResult, consensus, consensus_table
from howeval.judges.llm import LLMPatternJudge
from howeval.judges.registry import build_pattern_judge, register_pattern_judge
from howeval.judges.rubric import (
    RUBRIC_VERSION,
    build_pattern_messages,
    build_repair_messages,
    parse_pattern_output,
)
from howeval.judges.rules import RULES_VERSION, RuleJudge
from howeval.judges.verdict import LABELS, JudgeParseError, PatternVerdict, make_verdict

__all__ = [
    "LABELS",
    "ConsensusResult",
    "JudgeItem",
    "JudgeParseError",
    "LLMPatternJudge",
    "PatternJudge",
    "PatternVerdict",
    "RUBRIC_VERSION",
    "RULES_VERSION",
    "RuleJudge",
    "build_pattern_judge",
    "build_pattern_messages",
    "build_repair_messages",
    "consensus",
    "consensus_table",
    "make_verdict",
    "parse_pattern_output",
    "register_pattern_judge",
]
