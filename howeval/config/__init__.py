"""Configs of every job: one strict base, one YAML loader, one error formatter (``base``), the sweep's
models (``sweep``), the checks run before Ray starts (``preflight``) and the stale-resume guard (``resume``).

``from howeval.config import X`` works for every name below.
"""
from howeval.config.base import (
    ConfigError,
    StrictModel,
    apply_dotlist,
    check_config,
    dotlist_keys,
    format_validation_error,
    load_yaml_config,
    merge_overrides,
    resolve_path,
    validate,
    with_changes,
)
from howeval.config.preflight import preflight, require_ready
from howeval.config.resume import refuse_stale_resume, stale_fields
from howeval.config.sweep import (
    PATTERN_JUDGE_CONFIGS,
    AdaptConfig,
    BenchmarkConfig,
    BenchmarkContent,
    BuildKeyStepsConfig,
    BuildRefsConfig,
    CrystalConfig,
    JudgeEngineConfig,
    JudgesConfig,
    LLMJudgeConfig,
    ModeConfig,
    ModelConfig,
    PatternJudgeBase,
    PatternJudgeConfig,
    PatternRMJudgeConfig,
    RayConfig,
    ResourcesConfig,
    RulesJudgeConfig,
    SamplingConfig,
    SweepConfig,
    TaskConfig,
    VerifierConfig,
    benchmark_name,
    load_run_config,
    load_sweep_config,
    pattern_judge_config,
)

__all__ = [
    "PATTERN_JUDGE_CONFIGS", "AdaptConfig", "apply_dotlist", "check_config", "dotlist_keys", "BenchmarkConfig", "BenchmarkContent", "benchmark_name", "BuildKeyStepsConfig", "BuildRefsConfig", "ConfigError", "CrystalConfig",
    "JudgeEngineConfig", "JudgesConfig", "LLMJudgeConfig", "ModeConfig", "ModelConfig", "PatternJudgeBase",
    "PatternJudgeConfig", "PatternRMJudgeConfig", "RayConfig", "ResourcesConfig", "RulesJudgeConfig",
    "SamplingConfig", "StrictModel", "SweepConfig", "TaskConfig", "VerifierConfig", "format_validation_error", "pattern_judge_config",
    "load_run_config", "load_sweep_config", "load_yaml_config", "merge_overrides", "preflight", "refuse_stale_resume",
    "require_ready", "resolve_path", "stale_fields", "validate", "with_changes",
]
