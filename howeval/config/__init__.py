"""Configs of every job: one strict base, one YAML loader, one error formatter (``base``), the sweep's
models (``sweep``).

``from howeval.config import X`` works for every name below.
"""
from howeval.config.base import (
    ConfigError,
    StrictModel,
    format_validation_error,
    load_yaml_config,
    merge_overrides,
    resolve_path,
    validate,
)
from howeval.config.sweep import (
    AdaptConfig,
    BenchmarkConfig,
    BuildRefsConfig,
    CrystalConfig,
    JudgeEngineConfig,
    JudgesConfig,
    ModeConfig,
    ModelConfig,
    PatternJudgeConfig,
    RayConfig,
    ResourcesConfig,
    SamplingConfig,
    SweepConfig,
    VerifierConfig,
    load_run_config,
    load_sweep_config,
)

__all__ = [
    "AdaptConfig", "BenchmarkConfig", "BuildRefsConfig", "ConfigError", "CrystalConfig", "JudgeEngineConfig",
    "JudgesConfig", "ModeConfig", "ModelConfig", "PatternJudgeConfig", "RayConfig", "ResourcesConfig",
    "SamplingConfig", "StrictModel", "SweepConfig", "VerifierConfig", "format_validation_error",
    "load_run_config", "load_sweep_config", "load_yaml_config", "merge_overrides", "resolve_path", "validate",
]
