"""Pattern judges (SPEC section 1): rule-based, LLM-based, and their consensus.

- :class:`RuleJudge` (``rules.py``): deterministic surface cues; a baseline and sanity check.
- :class:`LLMPatternJudge` (``llm.py``): any engine, rubric from ``rubric.py``, one repair per bad output.
- :func:`consensus` (``consensus.py``): majority labels and agreement across judges.

Every judge returns :class:`PatternVerdict` (``verdict.py``): four labels with evidence, or an error and
no labels.
"""
from howeval.judges.consensus import ConsensusResult, consensus, consensus_table
from howeval.judges.llm import LLMPatternJudge
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
    "JudgeParseError",
    "LLMPatternJudge",
    "PatternVerdict",
    "RUBRIC_VERSION",
    "RULES_VERSION",
    "RuleJudge",
    "build_pattern_messages",
    "build_repair_messages",
    "consensus",
    "consensus_table",
    "make_verdict",
    "parse_pattern_output",
]
