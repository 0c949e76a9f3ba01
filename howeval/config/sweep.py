"""Sweep configuration (``howeval.ray_jobs.sweep`` and the jobs that read a run): models, benchmarks, judges, Ray,
and the typed ``crystal:`` / ``adapt:`` blocks, all validated when the YAML is loaded (STYLE rule 1).

Errors name the key path, the value and the rule, e.g. ``models.0.sampling.max_tokens: Input should be
greater than or equal to 1 (got 0)``. Unknown keys are errors (``extra="forbid"``).
"""
from __future__ import annotations

import json
import posixpath
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Discriminator, Field, Tag, TypeAdapter, ValidationInfo, field_validator, model_validator

from howeval.config.base import StrictModel, load_yaml_config, resolve_path, validate
from howeval.config.engines import ENGINE_OPTIONS
from howeval.config.rewards import PatternRMConfig

_ANSWER_FORMAT_RE = re.compile(r"\\boxed|answer\s+is\s*[:<]|answer:\s*<|end\s+with\s*:", re.IGNORECASE)
"""An answer-format instruction in a system prompt ("End with: The answer is <answer>.", "\\boxed{}")."""
_THINK_TAG_RE = re.compile(r"<\s*/?\s*think", re.IGNORECASE)

INTERNVL_THINKING_PROMPT = (
    "You are an AI assistant that rigorously follows this response protocol:\n\n"
    "1. First, conduct a detailed analysis of the question. Consider different angles, potential solutions, and "
    "reason through the problem step-by-step. Enclose this entire thinking process within <think> and </think> tags.\n\n"
    "2. After the thinking section, provide a clear, concise, and direct answer to the user's question. Separate the "
    "answer from the think section with a newline.\n\n"
    "Ensure that the thinking process is thorough but remains focused on the query. The final answer should be "
    "standalone and not reference the thinking section.")
"""InternVL3.5's documented thinking switch: its model card's "Thinking System Prompt" (section "Thinking
Mode", with temperature 0.6 recommended). The model was trained to think when given it, so it is the
model's own switch, not a prompt asking a non-thinking model to fake thinking."""

DOCUMENTED_THINKING_PROMPTS = {"internvl3.5": INTERNVL_THINKING_PROMPT}
"""System prompts that are a model family's documented thinking switch: accepted as a T system prompt
although they mention ``<think>`` (compared with whitespace collapsed)."""


def documented_thinking_prompt(text: str) -> str | None:
    r"""The model family whose documented thinking system prompt ``text`` is (whitespace collapsed), or None.

    >>> documented_thinking_prompt(INTERNVL_THINKING_PROMPT.replace("\n\n", " "))
    'internvl3.5'
    >>> documented_thinking_prompt("Think in <think> tags.") is None
    True
    """
    norm = " ".join(text.split())
    return next((k for k, v in DOCUMENTED_THINKING_PROMPTS.items() if " ".join(v.split()) == norm), None)


class ModeConfig(StrictModel):
    """How one inference mode (NT or T) is switched on for a model (DESIGN.md, "Engines")."""

    system_prompt: str | None = Field(None, description="System prompt for this mode (the switch for models without a template flag).")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict, description="Chat-template switch, e.g. {enable_thinking: true} for Qwen3-style templates.")
    reasoning_effort: str | None = Field(None, description="Hosted-API reasoning control (minimal|low|medium|high|none).")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra request fields for this mode (openai engine), e.g. a provider's thinking switch.")
    max_tokens: int | None = Field(None, ge=1, description="Overrides sampling.max_tokens in this mode (thinking needs more).")
    reasoning_opener_in_template: bool = Field(False, description="The chat template pre-fills the reasoning opener (<think>), so outputs carry no opening tag: an output cut by max_tokens before its closing tag is then truncated (no answer), never taken as the answer. The hf and vllm engines also detect this from the rendered prompt, the openai engine from outputs that close a reasoning block they never opened.")
    prompted_thinking: bool = Field(False, description="T only: the system prompt asks the model to write its reasoning in <think> tags itself. Off by default, and a T system prompt that mentions <think> is refused (unless it is a model family's documented thinking prompt, e.g. InternVL3.5's: howeval.config.sweep.DOCUMENTED_THINKING_PROMPTS): a thinking model's own template switches thinking (chat_template_kwargs such as {enable_thinking: true}, or reasoning_effort), and a prompt asking a non-thinking model to fake it measures the prompt, not the mode. Set it to compare such prompts on purpose; the report's reasoning-channel counts show what the model did.")


class SamplingConfig(StrictModel):
    """Sampling parameters shared by both modes (vLLM / OpenAI names).

    A field left unset (None) is the model's own default, as the paper's "official default inference
    settings": the vllm engine takes it from ``LLM.get_default_sampling_params()`` (the model's
    ``generation_config.json``), the hf engine from the model's ``generation_config``, and the openai
    engine leaves it out of the request so the server applies its own. What each engine applied is
    recorded in ``run_config.json`` (``generation_settings``).
    """

    max_tokens: int = Field(256, ge=1, description="Completion budget in tokens.")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature; 0 = greedy; None = the model's default (generation_config), as the paper's sweeps use the providers' recommended values.")
    top_p: float | None = Field(None, gt=0, le=1, description="Nucleus mass; None = the model's default.")
    top_k: int | None = Field(None, ge=-1, description="Top-k cut (-1 or 0 = off); None = the model's default.")
    min_p: float | None = Field(None, ge=0, le=1, description="Min-p cut; None = the model's default.")
    presence_penalty: float | None = Field(None, ge=-2, le=2, description="Presence penalty (OpenAI / vLLM); None = the model's default.")
    repetition_penalty: float | None = Field(None, gt=0, description="Repetition penalty (HF / vLLM); None = the model's default.")
    seed: int | None = Field(0, description="Sampling seed; None = unseeded.")

    def overrides(self) -> dict[str, Any]:
        """The sampling fields this config sets (not None), max_tokens and seed excluded: what overrides the
        model's own defaults.

        >>> SamplingConfig(temperature=0.0, top_k=20).overrides()
        {'temperature': 0.0, 'top_k': 20}
        """
        return {k: v for k, v in self.model_dump().items() if v is not None and k not in ("max_tokens", "seed")}


class ResourcesConfig(StrictModel):
    """Ray resources per replica of a model's actor pool."""

    replicas: int = Field(1, ge=1, description="Actor-pool size (concurrent engine replicas).")
    num_cpus: float = Field(0.75, gt=0, description="CPUs per replica. With 2 CPUs keep it < 1 or other tasks starve (DESIGN.md).")
    num_gpus: float = Field(0, ge=0, description="GPUs per replica (tensor_parallel_size x pipeline_parallel_size for vllm: "
                            "with more than one, each replica is a placement group of one-GPU bundles, docs/cluster.md).")
    batch_size: int | None = Field(None, ge=1, description=(
        "Rows per engine call (one output file per batch: the resume unit). None = the engine's default "
        "(howeval.engines.registry.default_batch_size: vllm a quarter of max_num_seqs up to 64, openai a quarter of "
        "max_concurrency from 8 to 64, others 8). The rows in flight per replica follow the engine's capacity "
        "(max_num_seqs, max_concurrency) whatever the batch."))
    accelerator_type: str | None = Field(None, description="Ray accelerator_type, e.g. H100, for GPU scheduling.")


class ModelConfig(StrictModel):
    """One evaluated configuration: a model on an engine with its two modes."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.\-]+$", description="Config name; the `config` column of every record.")
    engine: str = Field(..., description="Engine name: one of the registered engines (hf, openai, vllm).")
    model: str | None = Field(None, description="Model path, served model name or URL; None = the engine's embedded default.")
    options: dict[str, Any] = Field(default_factory=dict, description="Engine options, validated against the engine's options model.")
    modes: dict[Literal["NT", "T"], ModeConfig] = Field(..., description="Mode switches; at least one of NT, T.")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    vision: bool | Literal["ocr"] = Field(True, description="True: images are sent (pixels). False for text-only models: "
                                          "images are not sent and the report says so. 'ocr': a text-only model gets each "
                                          "image's OCR text (rapidocr-onnxruntime, cached per image) before the question.")
    pair_as: str | None = Field(None, pattern=r"^[A-Za-z0-9_.\-]+$", description=(
        "T/NT pair made of two checkpoints: the name of the model this config is one mode of. Two configs with "
        "the same pair_as, one with only NT (e.g. Qwen3-VL-8B-Instruct) and one with only T (Qwen3-VL-8B-Thinking), "
        "run as two configs (two engines, their records under their own names) and are reported, and compared, as "
        "NT and T of one model under this name: Δacc and Δpat pair them prompt by prompt."))

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in ENGINE_OPTIONS:
            raise ValueError(f"unknown engine {v!r}; registered engines: {sorted(ENGINE_OPTIONS)}")
        return v

    @field_validator("modes")
    @classmethod
    def _some_mode(cls, v: dict) -> dict:
        if not v:
            raise ValueError("give at least one mode (NT and/or T)")
        return v

    @field_validator("options")
    @classmethod
    def _options_fit_engine(cls, v: dict, info: ValidationInfo) -> dict:
        engine = info.data.get("engine")  # absent when `engine` itself failed (reported there)
        if engine in ENGINE_OPTIONS:
            ENGINE_OPTIONS[engine].model_validate(v)  # errors at models.N.options.<key>
        return v

    @classmethod
    def nested_config(cls, field: str, raw: Mapping) -> type[BaseModel] | None:
        """``options`` is validated by the options model of the config's ``engine``."""
        return ENGINE_OPTIONS.get(raw.get("engine")) if field == "options" else None

    @model_validator(mode="after")
    def _one_answer_format_and_real_thinking(self) -> ModelConfig:
        for m, mc in self.modes.items():
            sp = mc.system_prompt or ""
            if _ANSWER_FORMAT_RE.search(sp):
                raise ValueError(
                    f"modes.{m}.system_prompt {sp[:80]!r} sets an answer format: the answer instruction is set once per "
                    "benchmark (benchmarks[].answer_instruction, default 'Put your final answer in \\boxed{}.'), so a "
                    "prompt never asks for two formats; move it there")
            if mc.prompted_thinking and m != "T":
                raise ValueError(f"modes.{m}.prompted_thinking: only the T mode can prompt for thinking")
            if m == "T" and _THINK_TAG_RE.search(sp) and not mc.prompted_thinking and not documented_thinking_prompt(sp):
                raise ValueError(
                    f"modes.T.system_prompt {sp[:80]!r} asks for <think> tags: a thinking model's own chat template "
                    "switches thinking (chat_template_kwargs: {enable_thinking: true}, or reasoning_effort); asking a "
                    "model to fake it measures the prompt, not the mode. Remove it, or set prompted_thinking: true to "
                    "compare such prompts on purpose. A model family whose documented thinking switch is a system "
                    "prompt (InternVL3.5) is accepted with that exact prompt: howeval.config.sweep."
                    "DOCUMENTED_THINKING_PROMPTS")
        return self

    @property
    def vision_mode(self) -> Literal["pixels", "ocr", "none"]:
        """How images reach this config's model: ``pixels`` (vision: true), ``ocr`` (OCR text), ``none``."""
        return "ocr" if self.vision == "ocr" else ("pixels" if self.vision else "none")

    def engine_options(self):
        """The validated options object of this model's engine."""
        return ENGINE_OPTIONS[self.engine].model_validate(self.options)


class TaskConfig(StrictModel):
    """A benchmark's ``task:`` block: it counts in Table 6 (task accuracy of trained policies, PatternEval/PatternRL
    paper; ``howeval.benchmarks.taskacc``), in a category, scored by its own answer criterion."""

    category: Literal["math", "logic", "document"] = Field(..., description="Table 6's task category of this benchmark.")
    criterion: Literal["exact", "multiple_choice", "math", "relaxed", "anls"] = Field(..., description="The benchmark's own answer criterion (howeval.benchmarks.taskacc): exact (normalized text equality), multiple_choice or math (the project's verifier), relaxed (ChartQA: numbers within 5%, else exact), anls (DocVQA / InfographicVQA ANLS, threshold 0.5).")


class BenchmarkContent(StrictModel):
    """What a benchmark's rows are, whatever their path: the first ``rows`` rows of its file as read, by digest
    (``howeval.store.RowsDigest``: canonical JSON per row, so a moved, re-uploaded or re-exported file agrees).
    The sweep records it per benchmark in ``run_config.json``; the stale-resume guard (``howeval.config.resume``)
    identifies a stored benchmark by it, never by its path."""

    rows: int = Field(..., ge=0, description="Rows of the file read for the run (up to the last one a limit kept, bad rows included).")
    sha256: str = Field(..., pattern=r"^[0-9a-f]{64}$", description="SHA-256 of those rows (howeval.store.RowsDigest).")


def benchmark_name(path: str, name: str | None) -> str:
    """The name a benchmark's records carry: ``name``, else the folder holding its file, else ``benchmark``.

    >>> benchmark_name("/data/demo/manifest.jsonl", None), benchmark_name("m.jsonl", None), benchmark_name("x", "n")
    ('demo', 'benchmark', 'n')
    """
    return name or posixpath.basename(posixpath.dirname(path)) or "benchmark"


class BenchmarkConfig(StrictModel):
    """A benchmark file in the manifest format (JSONL or Parquet; local path or fsspec URL), or in a released format
    converted on load (``format``)."""

    path: str = Field(..., description="Manifest path or URL; relative paths resolve against the config file's folder.")
    name: str | None = Field(None, description="Benchmark name on records; default = the file's stem's parent folder.")
    limit: int | None = Field(None, ge=1, description="Use only the first N rows (smoke runs).")
    format: Literal["manifest", "crystal", "adaptmmbench", "chartqa", "docvqa", "infographicvqa", "mathvista"] = Field("manifest", description="The file's format: the project's manifest, or a released one converted on load (howeval.benchmarks.released): 'crystal' (CRYSTAL's items with reference steps), 'adaptmmbench' (AdaptMMBench's items with evidence boxes and key steps), 'chartqa', 'docvqa', 'infographicvqa', 'mathvista' (task-accuracy benchmarks; JSON as released, JSONL or Parquet).")
    image_dir: str | None = Field(None, description="Folder to write images embedded as bytes (a Parquet export's image struct) to; needed only for such files.")
    image_root: str | None = Field(None, description="Folder the rows' relative image paths are resolved against; None = the file's folder. For releases that keep images apart (ChartQA: <split>/png; DocVQA: the folder holding documents/). Relative paths resolve against the config file's folder.")
    task: TaskConfig | None = Field(None, description="Count this benchmark in Table 6 (task accuracy): its category and answer criterion; None = not a task-accuracy benchmark. Needs a name.")
    content: BenchmarkContent | None = Field(None, description="Written by the sweep into run_config.json (leave unset in a YAML): the identity of the rows this benchmark contributed, which the stale-resume guard compares instead of the path (howeval.config.resume).")
    answer_instruction: str | None = Field(None, description="The one answer instruction appended to every question of this benchmark (recorded in each row's prompt); None = 'Put your final answer in \\boxed{}.' (howeval.engines.prompts.ANSWER_INSTRUCTION), '' = none. Mode system prompts must not set another format.")

    @model_validator(mode="after")
    def _task_named(self) -> BenchmarkConfig:
        if self.task is not None and not self.name:
            raise ValueError("a benchmark with a task: block needs a name (its column in Table 6, e.g. name: chartqa)")
        for key in ("path", "image_root"):
            v = getattr(self, key)
            if self.task is not None and isinstance(v, str) and v.lower().startswith("hf://"):
                raise ValueError(f"{key} {v!r}: a task benchmark is read from a path you give, never fetched from the "
                                 "Hugging Face Hub at run time; download it once and give the local path or your own URL")
        return self


class JudgeEngineConfig(StrictModel):
    """An LLM judge behind an OpenAI-compatible endpoint."""

    model: str = Field(..., description="Served model name.")
    options: dict[str, Any] = Field(default_factory=dict, description="openai engine options (base_url, api_key_env, max_concurrency, qps, ...).")
    max_tokens: int = Field(512, ge=16)
    temperature: float = Field(0.0, ge=0)
    structured_output: bool = Field(True, description="Ask pattern judges for their JSON by schema (response_format json_schema; vLLM guided JSON); a server that refuses it is asked again without it, and the repair prompt stays the fallback for unparseable output.")

    @field_validator("options")
    @classmethod
    def _opts(cls, v: dict) -> dict:
        ENGINE_OPTIONS["openai"].model_validate(v)  # errors at <path>.options.<key>
        return v

    @classmethod
    def nested_config(cls, field: str, raw: Mapping) -> type[BaseModel] | None:
        """``options`` is validated by the openai engine's options model."""
        return ENGINE_OPTIONS["openai"] if field == "options" else None


FLAT_VERIFIER_KEYS = {"base_url": "options.base_url", "api_key_env": "options.api_key_env",
                      "max_concurrency": "options.max_concurrency", "timeout_s": "options.timeout_s"}
"""The reward server's flat spelling of an LLM verifier and where each key goes in the shared shape."""

FLAT_VERIFIER_DEFAULTS: dict[str, Any] = {"timeout_s": 20.0, "max_tokens": 256}
"""What a flat block leaves out, wherever it is given: the reward server's budgets (a reward request has 60 s)."""


def llm_verifier_block(raw: Any) -> Any:
    """The one shape of the LLM verifier (PatternRL: "unresolved cases are evaluated by GPT-oss-120B", a second,
    larger LLM after the rules): :class:`JudgeEngineConfig`, ``{model, options: {base_url, api_key_env,
    max_concurrency, timeout_s, ...openai engine options}, max_tokens}``, the same block under the sweep's
    ``judges.verifier.llm_fallback`` and the reward server's ``llm_verifier``.

    The reward server's older flat spelling ``{base_url, model, api_key_env?, max_concurrency?, timeout_s?,
    max_tokens?}`` is accepted and moved into ``options`` (keys of :data:`FLAT_VERIFIER_KEYS`), with
    :data:`FLAT_VERIFIER_DEFAULTS` (20 s, 256 tokens) for what it leaves out.
    Anything else (None, the nested shape) is returned as it is, for the model to validate.

    >>> llm_verifier_block({"base_url": "http://v:8000/v1", "model": "gpt-oss-120b", "timeout_s": 20})
    {'max_tokens': 256, 'model': 'gpt-oss-120b', 'options': {'timeout_s': 20, 'base_url': 'http://v:8000/v1'}}
    """
    if not isinstance(raw, Mapping) or not (set(raw) & set(FLAT_VERIFIER_KEYS)):
        return raw
    if "options" in raw:
        raise ValueError(f"llm verifier: give {sorted(set(raw) & set(FLAT_VERIFIER_KEYS))} inside options "
                         "(the shape {model, options: {base_url, ...}, max_tokens}), not beside it")
    flat = {**FLAT_VERIFIER_DEFAULTS, **raw}
    out: dict[str, Any] = {k: v for k, v in flat.items() if k not in FLAT_VERIFIER_KEYS}
    opts = {k: v for k, v in flat.items() if k in FLAT_VERIFIER_KEYS and v is not None}
    out["options"] = opts
    return out


class PatternJudgeBase(StrictModel):
    """Fields every pattern judge has; each kind is one subclass with ``kind: Literal["<kind>"]``, registered
    in :data:`PATTERN_JUDGE_CONFIGS` (the one list of kinds; ``howeval.judges.registry`` builds each)."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.\-]+$")
    kind: str
    version: str = Field("1", description="Bump to invalidate cached judgments.")

    @model_validator(mode="before")
    @classmethod
    def _blocks_of_other_kinds(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        raw = dict(raw)
        if "patternrm" in raw and raw["patternrm"] is None:
            del raw["patternrm"]  # None = the embedded trained PatternRM, the default
        for block in ("llm", "patternrm", "with_image"):
            if block in raw and block not in cls.model_fields:
                if raw[block] is None or block == "with_image":
                    del raw[block]  # what a run config stored before per-kind models carries: meant nothing here
                else:
                    raise ValueError(f"judge {raw.get('name')!r}: a '{block}:' block needs kind '{block}', "
                                     f"got {raw.get('kind', 'rules')!r}")
        return raw


PATTERN_JUDGE_CONFIGS: dict[str, type[PatternJudgeBase]] = {}
"""Pattern judge kind -> its config model: the one list of kinds (a sweep's ``judges.pattern`` items are
validated as their union, discriminated by ``kind``)."""


def _judge_kind(cls: type[PatternJudgeBase]) -> type[PatternJudgeBase]:
    (kind,) = typing.get_args(cls.model_fields["kind"].annotation)
    if kind in PATTERN_JUDGE_CONFIGS:
        raise ValueError(f"pattern judge kind {kind!r} already registered; registered: {sorted(PATTERN_JUDGE_CONFIGS)}")
    PATTERN_JUDGE_CONFIGS[kind] = cls
    return cls


@_judge_kind
class RulesJudgeConfig(PatternJudgeBase):
    """``kind: rules``: the rule-based pattern judge (deterministic surface cues)."""

    kind: Literal["rules"] = "rules"


@_judge_kind
class LLMJudgeConfig(PatternJudgeBase):
    """``kind: llm``: an LLM rubric judge behind an OpenAI-compatible endpoint."""

    kind: Literal["llm"] = "llm"
    llm: JudgeEngineConfig = Field(..., description="The judge's model and endpoint (model, options).")
    with_image: bool = Field(True, description="LLM judge sees the image (the paper's image-aware judge).")

    @model_validator(mode="before")
    @classmethod
    def _llm_block_given(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and raw.get("llm") is None:
            raise ValueError(f"judge {raw.get('name')!r}: kind 'llm' needs an 'llm:' block (model, options)")
        return raw


@_judge_kind
class PatternRMJudgeConfig(PatternJudgeBase):
    """``kind: patternrm``: PatternRM as a pattern judge (default: the embedded trained one)."""

    kind: Literal["patternrm"] = "patternrm"
    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig, description="Which PatternRM (default: the embedded trained one).")


def _judge_tag(raw: Any) -> str | None:
    return raw.get("kind", "rules") if isinstance(raw, dict) else getattr(raw, "kind", None)


PatternJudgeConfig = Annotated[
    Union[tuple(Annotated[cls, Tag(kind)] for kind, cls in PATTERN_JUDGE_CONFIGS.items())],  # noqa: UP007
    Discriminator(_judge_tag, custom_error_type="judge_kind",
                  custom_error_message=f"unknown pattern judge kind; registered: {sorted(PATTERN_JUDGE_CONFIGS)}"),
]
"""One pattern judge, any registered kind (``kind`` picks the model; default ``rules``)."""


def pattern_judge_config(raw: Mapping[str, Any]) -> PatternJudgeBase:
    """The config model of one pattern judge from its mapping (``kind`` picks the model; default ``rules``).

    >>> type(pattern_judge_config({"name": "r"})).__name__
    'RulesJudgeConfig'

    Raises:
        pydantic.ValidationError: unknown kind, or the kind's model refuses the fields.
    """
    return _PATTERN_JUDGE.validate_python(dict(raw))


_PATTERN_JUDGE: TypeAdapter[PatternJudgeBase] = TypeAdapter(PatternJudgeConfig)


class VerifierConfig(StrictModel):
    """The answer verifier: per-answer-type rules, with an optional LLM fallback for unresolved cases."""

    llm_fallback: JudgeEngineConfig | None = Field(None, description="LLM for what the rules cannot resolve (PatternRL: GPT-oss-120B); None keeps them unresolved. The same block as the reward server's llm_verifier (llm_verifier_block: its flat {base_url, model, ...} spelling is accepted too).")
    version: str = "2"  # 2: each source's official criterion (howeval.judges.verify.official), 5 December 2026

    @field_validator("llm_fallback", mode="before")
    @classmethod
    def _one_shape(cls, v: Any) -> Any:
        return llm_verifier_block(v)


class JudgesConfig(StrictModel):
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    pattern: list[PatternJudgeConfig] = Field(default_factory=lambda: [RulesJudgeConfig(name="rules")])
    primary: str | None = Field(None, description="Pattern judge whose labels go into metrics; default the first.")
    num_cpus: float = Field(0.25, gt=0, description="CPUs per judge actor.")
    replicas: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _primary_known(self) -> JudgesConfig:
        names = [j.name for j in self.pattern]
        if len(set(names)) != len(names):
            raise ValueError(f"judges.pattern names must be unique, got {names}")
        if self.primary is not None and self.primary not in names:
            raise ValueError(f"judges.primary {self.primary!r} is not one of judges.pattern names {names}")
        return self

    @property
    def primary_name(self) -> str:
        return self.primary or self.pattern[0].name


class RayConfig(StrictModel):
    address: str | None = Field(None, description="Ray address; None starts or joins a local cluster (RAY_ADDRESS is honoured).")
    num_cpus: int | None = Field(None, ge=1, description="CPUs for a local cluster; None = all.")
    task_num_cpus: float = Field(0.25, gt=0, description="CPUs per small task (read, filter, write).")


class CrystalConfig(StrictModel):
    """A sweep's ``crystal:`` block: CRYSTAL step matching (SPEC section 3: tau 0.35, alpha 0.5, LIS order)."""

    tau: float = Field(0.35, ge=-1, le=1, description="Cosine threshold of the greedy step matching (strictly above matches).")
    alpha: float = Field(0.5, ge=0, le=1, description="Weight of the order score in Ordered Match F1.")
    order: Literal["lis", "kendall"] = Field("lis", description="Order score: longest increasing subsequence or Kendall tau.")
    embedder: str | None = Field(None, description="Local sentence-transformers folder; None = the bundled all-MiniLM-L6-v2.")
    replicas: int = Field(1, ge=1, description="Embedder actors.")
    num_cpus: float = Field(0.75, gt=0, description="CPUs per embedder actor.")


class AdaptConfig(StrictModel):
    """A sweep's ``adapt:`` block: AdaptMMBench episodes per model (SPEC section 4)."""

    modes: list[Literal["text", "adaptive", "oracle"]] = Field(["text", "adaptive", "oracle"], min_length=1, description="Episode modes: text only, adaptive (tools offered), oracle-visual (gold crops given).")
    max_turns: int = Field(3, ge=1, description="Model turns per adaptive episode (tool calls + the answer).")
    max_tokens: int = Field(256, ge=1, description="Completion budget per turn.")
    tool_format: Literal["openai", "text"] | None = Field(None, description="How tools are offered: OpenAI `tools` or described in plain text; None = text for hf/replay engines, openai otherwise.")
    coverage_tau: float = Field(0.35, ge=-1, le=1, description="Cosine threshold of the key-step coverage match.")
    embedder: str | None = Field(None, description="Local sentence-transformers folder for coverage; None = the bundled all-MiniLM-L6-v2.")
    process_judge: JudgeEngineConfig | None = Field(None, description="An OpenAI-compatible model that decides key-step coverage and each tool call's effectiveness (the paper's GPT-5 judge; howeval.judges.process); None = coverage by embedding match (the offline default) and no effectiveness judgment.")
    process_judge_cache: str | None = Field(None, description="Local folder of the process judge's write-ahead cache; None = <run>/judge_cache/adapt-process for a local run folder, beside the other judges' cache (a folder under ~/.cache/howeval/judge_cache for a remote output_uri; howeval.judges.cache.run_judge_cache_dir). Where the cache lives does not make stored rows stale.")

    def for_engine(self, engine: str) -> AdaptConfig:
        """This block with ``tool_format`` filled in for ``engine`` (text for hf/replay, openai otherwise)."""
        if self.tool_format is not None:
            return self
        return self.model_copy(update={"tool_format": "text" if engine in ("hf", "replay") else "openai"})


class SweepConfig(StrictModel):
    """A whole sweep: models x modes over benchmarks, judged, written under ``output_uri``."""

    name: str = Field("sweep", description="Run name, shown in the report.")
    output_uri: str = Field(..., description="Local folder or fsspec URL; relative paths resolve against the current directory.")
    benchmarks: list[BenchmarkConfig] = Field(..., min_length=1)
    models: list[ModelConfig] = Field(..., min_length=1)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    skip_bad_rows: bool = Field(False, description="Record bad benchmark rows in the report instead of stopping the load.")
    ray: RayConfig = Field(default_factory=RayConfig)
    crystal: CrystalConfig | None = Field(None, description="CRYSTAL step metrics (SPEC section 3); None = off, {} = the defaults.")
    adapt: AdaptConfig | None = Field(None, description="AdaptMMBench episodes (SPEC section 4); None = off, {} = the defaults.")
    overrides: list[str] = Field(default_factory=list, description="What the command line changed in the YAML, in the "
                                 "order applied: dot-list items (models.0.sampling.temperature=0.7) and the --data, "
                                 "--limit, --output, --max-tokens, --skip-bad-rows flags. Set by howeval.ray_jobs.sweep and "
                                 "recorded in run_config.json (the other fields there already include them).")
    generation_settings: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Written by the sweep into run_config.json (leave unset in a YAML): per config, the sampling settings its engine applies: the config's overrides, the model's own defaults (generation_config.json) and the result (howeval.engines.generation.generation_settings).")

    @model_validator(mode="after")
    def _unique_models(self) -> SweepConfig:
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"models: config names must be unique, repeated: {dup}")
        groups: dict[str, list[ModelConfig]] = {}
        for m in self.models:
            if m.pair_as is not None:
                groups.setdefault(m.pair_as, []).append(m)
        for g, ms in groups.items():
            modes = sorted(tuple(m.modes) for m in ms)
            if modes != [("NT",), ("T",)]:
                raise ValueError(
                    f"models: pair_as {g!r} needs exactly two configs, one with only modes.NT and one with only "
                    f"modes.T (the non-thinking and the thinking checkpoint); got {[m.name for m in ms]} with modes "
                    f"{[list(m.modes) for m in ms]}")
            if g in names:
                raise ValueError(f"models: pair_as {g!r} is also a config's name: give the pair its own name")
        tasks = [b.name for b in self.benchmarks if b.task is not None]
        dup = sorted({n for n in tasks if tasks.count(n) > 1})
        if dup:
            raise ValueError(f"benchmarks: task benchmarks need distinct names (Table 6's columns), repeated: {dup}")
        return self

    def mode_pairs(self) -> dict[str, str]:
        """Config name -> the ``pair_as`` name it is reported under (only configs that set ``pair_as``)."""
        return {m.name: m.pair_as for m in self.models if m.pair_as is not None}


class BuildKeyStepsConfig(StrictModel):
    """Key-step writer for new AdaptMMBench items (``howeval.ray_jobs.build_keysteps``; the paper's "generated with GPT-5
    and verified by humans": ``howeval.benchmarks.adapt.keysteps``)."""

    name: str = "build-keysteps"
    output_uri: str = Field(..., description="Folder or fsspec URL for writer/ (the writer's responses) and key_steps_review.jsonl.")
    benchmarks: list[BenchmarkConfig] = Field(..., min_length=1)
    writer: ModelConfig = Field(..., description="The model that writes key steps (the paper: GPT-5); it sees the image, the question, its options and the answer.")
    mode: Literal["NT", "T"] = Field("NT", description="The writer's mode.")
    max_steps: int = Field(5, ge=1, le=8, description="Key steps asked for at most (a longer reply is a parse failure).")
    only_missing: bool = Field(True, description="Write steps only for items without key_steps (new items); false = every item.")
    skip_bad_rows: bool = False
    ray: RayConfig = Field(default_factory=RayConfig)

    @model_validator(mode="after")
    def _writer_has_mode(self) -> BuildKeyStepsConfig:
        if self.mode not in self.writer.modes:
            raise ValueError(f"writer: {self.writer.name!r} has no mode {self.mode!r} (configured: {sorted(self.writer.modes)})")
        return self


class BuildRefsConfig(StrictModel):
    """Delphi reference-step builder (``howeval.ray_jobs.build_refs``, SPEC section 3)."""

    name: str = "build-refs"
    output_uri: str = Field(..., description="Folder or fsspec URL for chains/ and reference_steps.jsonl.")
    benchmarks: list[BenchmarkConfig] = Field(..., min_length=1)
    writers: list[ModelConfig] = Field(..., min_length=2, description="Step writers (several models or sampling settings).")
    checker: ModelConfig | None = Field(None, description="Model that checks each merged chain; None = no check.")
    mode: Literal["NT", "T"] = Field("NT", description="Writers' mode used for step writing.")
    threshold: float = Field(0.75, ge=-1, le=1, description="Cosine threshold for clustering steps (strictly above joins).")
    min_support: int = Field(1, ge=1, description="Keep clusters with steps from at least this many writers.")
    embedder: str | None = Field(None, description="sentence-transformers path; None = bundled all-MiniLM-L6-v2.")
    skip_bad_rows: bool = False
    ray: RayConfig = Field(default_factory=RayConfig)

    @model_validator(mode="after")
    def _writers_have_mode(self) -> BuildRefsConfig:
        names = [w.name for w in self.writers]
        if len(set(names)) != len(names):
            raise ValueError(f"writers: names must be unique, got {names}")
        for w in self.writers:
            if self.mode not in w.modes:
                raise ValueError(f"writers: {w.name!r} has no mode {self.mode!r} (configured: {sorted(w.modes)})")
        return self


def _resolve_benchmarks(raw: dict, folder: Path) -> None:
    for b in raw.get("benchmarks") or []:
        for key in ("path", "image_root"):
            if isinstance(b, dict) and isinstance(b.get(key), str):
                b[key] = resolve_path(b[key], folder)


def load_sweep_config(path: str | Path, overrides: dict[str, Any] | None = None, cls: type[BaseModel] = SweepConfig,
                      dotlist: list[str] | tuple[str, ...] = ()):
    """Load and validate a sweep YAML (or another job's with benchmarks, with ``cls``), with the command line's
    ``dotlist`` overrides applied (``models.0.sampling.temperature=0.7``; ``howeval.config.base.apply_dotlist``).
    Relative benchmark paths resolve against the file's folder (the dot-list's against the current directory).

    Raises:
        FileNotFoundError: the file does not exist.
        ConfigError: the YAML does not validate; the message names each bad key path and value.
    """
    return load_yaml_config(path, cls, overrides, prepare=_resolve_benchmarks, dotlist=dotlist)


def load_run_config(run: str) -> SweepConfig:
    """The config a sweep run was made with (``<run>/run_config.json``), with ``output_uri`` set to ``run``
    (so a moved or copied run still points at itself).

    Raises:
        FileNotFoundError: ``run`` has no run_config.json (it is not the output of ``howeval.ray_jobs.sweep``).
        ConfigError: the stored config no longer validates (written by an older version).
    """
    import fsspec

    fs, path = fsspec.core.url_to_fs(run.rstrip("/") + "/run_config.json")
    if not fs.exists(path):
        raise FileNotFoundError(f"{run} has no run_config.json: is it the output of howeval.ray_jobs.sweep?")
    with fs.open(path, "r") as f:
        raw = json.loads(f.read())
    raw["output_uri"] = run
    return validate(SweepConfig, raw, f"{run}/run_config.json")
