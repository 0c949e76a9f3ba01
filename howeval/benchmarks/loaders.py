"""Benchmark loading: manifest rows (JSONL or Parquet, local or any fsspec URL) -> Sample dicts.

The manifest format is that of ``../shared/data/manifest.jsonl``: ``uid, source, category, question,
options, answer, answer_type, image`` (path relative to the manifest file), ``reference_steps``; the
project's demo set adds ``family, evidence_boxes, key_steps, domain``; a task benchmark (Table 6, docs/metrics.md
§5) may list several accepted answers in ``answers`` (a list of strings beside ``answer``). Images are read as bytes and
carried on the row, so workers need no access to the original files.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import fsspec

from howeval.benchmarks.released import CONVERTERS, RELEASED_FORMATS, RELEASED_IMAGE_FOLDER
from howeval.config.sweep import benchmark_name
from howeval.judges.images import BadImage, check_image
from howeval.store import JSONLinesError, RowsDigest, iter_rows

ANSWER_TYPES = (
    "multiple_choice", "integer_number", "decimal_number", "extractive_text", "boolean_text",
    "other_text", "free_form", "free_form_or_mc",
)
"""Answer types the verifier knows (the vocabulary of ``../shared/data/manifest.jsonl``)."""

CATEGORY_FAMILY = {
    # The paper's 9 categories (SPEC section 1)
    "ood_perception": "VG", "content_recognition": "VG", "grounding": "VG", "factuality": "VG",
    "ocr": "OS", "chart_understanding": "OS",
    "stem": "KR", "knowledge": "KR", "general_reasoning": "KR",
    # The categories of the shared real samples
    "perception_abstract_pattern": "VG", "perception_hallucination": "VG", "perception_natural": "VG",
    "ocr_table_reasoning": "OS", "ocr_chart": "OS", "stem_math": "KR", "stem_science": "KR",
}
"""Category -> family (VG / OS / KR), used when a row gives no ``family``."""


def _where(name: str, base: str) -> str:
    """For a relative image name: where it was looked for, and the setting that moves it."""
    if "://" in name or name.startswith("/"):
        return ""
    return f"; relative image names resolve against {base} (the file's folder, or the benchmark's image_root)"


class BadRowError(ValueError):
    """A benchmark row that cannot be used; names the file, the line and the field."""

    def __init__(self, path: str, line: int, uid: str | None, fld: str, why: str):
        self.path, self.line, self.uid, self.field, self.why = path, line, uid, fld, why
        super().__init__(
            f"{path}:{line} (uid={uid!r}): field {fld!r}: {why}. "
            "Fix the row, or pass --skip-bad-rows to record it in the report and go on."
        )

    def as_record(self) -> dict:
        return {"path": self.path, "line": self.line, "uid": self.uid, "field": self.field, "reason": self.why}


@dataclass
class LoadResult:
    """Loaded samples (dicts in ``records.SAMPLE_SCHEMA`` columns), the rows skipped with reasons, and the
    identity of the rows read (``content``: ``{"rows": n, "sha256": hex}``, the first ``n`` rows of the file as
    read before any check, by :class:`howeval.store.RowsDigest`; what the stale-resume guard compares,
    ``howeval.config.resume``)."""

    samples: list[dict]
    bad_rows: list[dict] = field(default_factory=list)
    content: dict = field(default_factory=dict)


def _bad_line(path: str, e: JSONLinesError) -> BadRowError:
    if getattr(e, "what", "invalid JSON") == "not UTF-8":
        return BadRowError(path, e.line, None, "<encoding>", f"not UTF-8 ({e.reason})")
    return BadRowError(path, e.line, None, "<json>", f"not valid JSON ({e.reason})")


def _str_list(v) -> list[str] | None:
    if v is None:
        return None
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"expected a list, got {type(v).__name__}")
    return [str(x) for x in v]


def _sample(row: dict, path: str, line: int, base: str, benchmark: str, read_images: bool = True) -> dict:
    uid = row.get("uid") or row.get("sample_id") or row.get("id")
    if not uid:
        raise BadRowError(path, line, None, "uid", "missing")
    uid = str(uid)
    answer = row.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        raise BadRowError(path, line, uid, "answer", "missing or empty")
    atype = row.get("answer_type")
    if atype not in ANSWER_TYPES:
        raise BadRowError(path, line, uid, "answer_type", f"unknown value {atype!r}; known: {list(ANSWER_TYPES)}")
    q = row.get("question")
    if not isinstance(q, str) or not q.strip():
        raise BadRowError(path, line, uid, "question", "missing or empty")
    category = str(row.get("category") or "unknown")
    family = row.get("family") or CATEGORY_FAMILY.get(category)
    if family not in ("VG", "OS", "KR"):
        raise BadRowError(path, line, uid, "family", f"no family for category {category!r}; give 'family' (VG|OS|KR)")
    img_field = row.get("images", row.get("image"))
    names = [img_field] if isinstance(img_field, str) else list(img_field or [])
    images, paths = [], []
    for name in names:
        ipath = name if "://" in name or name.startswith("/") else posixpath.join(base, name)
        paths.append(ipath)
        if not read_images:  # the file must exist and not be empty; its bytes are read where they are used
            try:
                fs, fpath = fsspec.core.url_to_fs(ipath)
                size = fs.size(fpath)
            except (FileNotFoundError, OSError) as e:
                raise BadRowError(path, line, uid, "image", f"cannot read {ipath} ({type(e).__name__}){_where(name, base)}") from None
            if not size:
                raise BadRowError(path, line, uid, "image", f"{ipath}: empty (0 bytes)")
            continue
        try:
            with fsspec.open(ipath, "rb") as f:
                images.append(f.read())
        except (FileNotFoundError, OSError) as e:
            raise BadRowError(path, line, uid, "image", f"cannot read {ipath} ({type(e).__name__}){_where(name, base)}") from None
        try:
            check_image(images[-1], ipath)  # 0 bytes or not an image: a bad row now, not a judge crash later
        except BadImage as e:
            raise BadRowError(path, line, uid, "image", str(e)) from None
    try:
        options = _str_list(row.get("options"))
        ref = _str_list(row.get("reference_steps"))
        key_steps = _str_list(row.get("key_steps"))
        answers = _str_list(row.get("answers"))
    except TypeError as e:
        raise BadRowError(path, line, uid, "options/reference_steps/key_steps/answers", str(e)) from None
    boxes = row.get("evidence_boxes")
    if boxes is not None:
        if not all(isinstance(b, (list, tuple)) and len(b) == 4 for b in boxes):
            raise BadRowError(path, line, uid, "evidence_boxes", "each box must be [x0, y0, x1, y1]")
        boxes = [[int(x) for x in b] for b in boxes]
    return {
        "sample_id": uid, "benchmark": benchmark, "source": str(row.get("source") or benchmark),
        "family": family, "category": category, "question": q, "images": images if read_images else None, "image_names": names,
        "image_paths": paths,
        "options": options or None, "answer": str(answer), "answer_type": atype,
        "reference_steps": ref, "evidence_boxes": boxes, "key_steps": key_steps,
        "domain": row.get("domain"),
        # every accepted answer when the benchmark lists several (DocVQA): read by task-accuracy scoring only
        # (howeval.benchmarks.taskacc); not a SAMPLE_SCHEMA column, so it never reaches the engines or the store
        **({"answers": answers} if answers else {}),
    }


def load_benchmark(path: str, *, name: str | None = None, limit: int | None = None,
                   skip_bad_rows: bool = False, read_images: bool = True, fmt: str = "manifest",
                   image_dir: str | None = None, image_root: str | None = None) -> LoadResult:
    """Load a manifest (JSONL or Parquet) through fsspec.

    Args:
        path: local path or fsspec URL of the manifest; image paths are relative to its folder.
        name: benchmark name put on each sample (default: the manifest's folder name).
        limit: keep only the first ``limit`` good rows.
        skip_bad_rows: False stops at the first bad row with :class:`BadRowError`; True records it in
            ``LoadResult.bad_rows`` (path, line, uid, field, reason) and goes on.
        read_images: True puts each image's bytes on its row (``images``); False leaves ``images`` null
            and only checks that each file exists and is not empty (the Ray pipelines read the bytes on
            the workers, ``howeval/actors/images.py``, so the driver never holds them). ``image_paths`` (resolved
            paths or URLs) is set either way.
        fmt: ``"manifest"`` (this module's format), or a released format converted by
            :mod:`howeval.benchmarks.released`: ``"crystal"`` (CRYSTAL's items), ``"adaptmmbench"``
            (AdaptMMBench's items), or a task-accuracy benchmark's (``"chartqa"``, ``"docvqa"``,
            ``"infographicvqa"``, ``"mathvista"``); JSONL, a JSON array, or Parquet. Ids get the format as a prefix.
        image_dir: where images embedded as bytes (a Parquet export's image struct) are written, so rows
            carry a path like every other; needed only for such files.
        image_root: the folder relative image paths are resolved against (default: the manifest's folder; for
            ChartQA its ``png/``, ``released.RELEASED_IMAGE_FOLDER``), for releases that keep questions and images
            apart (DocVQA: the folder holding ``documents/``).

    Raises:
        FileNotFoundError: the manifest does not exist.
        BadRowError: a row lacks its image file, answer, question or has an unknown answer_type.
        ValueError: two rows share a uid.
    """
    if fmt not in RELEASED_FORMATS:
        raise ValueError(f"unknown benchmark format {fmt!r}; known: {list(RELEASED_FORMATS)}")
    base = posixpath.dirname(path)
    benchmark = benchmark_name(path, name)
    if image_root:
        base = image_root.rstrip("/")
    elif fmt in RELEASED_IMAGE_FOLDER:
        base = posixpath.join(base, RELEASED_IMAGE_FOLDER[fmt])
    stem = posixpath.splitext(posixpath.basename(path))[0]
    samples, bad, seen = [], [], set()
    digest = RowsDigest()
    for i, row in iter_rows(path, json_array=fmt != "manifest" and path.endswith(".json")):
        digest.update(row)
        try:
            if isinstance(row, JSONLinesError):
                raise _bad_line(path, row)
            if fmt != "manifest":
                row, why = CONVERTERS[fmt](row, i, stem, image_dir)
                if why is not None:
                    raise BadRowError(path, i, row["uid"], *why)
            s = _sample(row, path, i, base, benchmark, read_images)
            if s["sample_id"] in seen:
                raise BadRowError(path, i, s["sample_id"], "uid", "duplicate uid")
        except BadRowError as e:
            if not skip_bad_rows:
                raise
            bad.append(e.as_record())
            continue
        seen.add(s["sample_id"])
        samples.append(s)
        if limit is not None and len(samples) >= limit:
            break
    return LoadResult(samples, bad, {"rows": digest.rows, "sha256": digest.hexdigest()})


def load_benchmarks(benchmarks, skip_bad_rows: bool = False, read_images: bool = True) -> list[LoadResult]:
    """One :class:`LoadResult` per benchmark (objects with ``path``, ``name``, ``limit`` and optionally ``format``,
    ``image_dir``, ``image_root``, ``answer_instruction``, put on each sample as ``instruction`` when set), in
    order; bad rows skipped (``skip_bad_rows``); ``read_images`` as in :func:`load_benchmark`.

    Raises:
        BadRowError: a bad row when ``skip_bad_rows`` is False.
        ValueError: two benchmarks share a sample id.
    """
    results, seen = [], set()
    for b in benchmarks:
        res = load_benchmark(b.path, name=b.name, limit=b.limit, skip_bad_rows=skip_bad_rows, read_images=read_images,
                             fmt=getattr(b, "format", "manifest"), image_dir=getattr(b, "image_dir", None),
                             image_root=getattr(b, "image_root", None))
        instruction = getattr(b, "answer_instruction", None)
        for s in res.samples:
            if instruction is not None:  # the benchmark's one answer instruction (None: the default one)
                s["instruction"] = instruction
            if s["sample_id"] in seen:
                raise ValueError(f"sample id {s['sample_id']!r} appears in two benchmarks; ids must be unique")
            seen.add(s["sample_id"])
        results.append(res)
    return results


def load_samples(benchmarks, skip_bad_rows: bool = False, read_images: bool = True) -> tuple[list[dict], list[dict]]:
    """All samples of several benchmarks and the bad rows skipped, each concatenated in benchmark order
    (:func:`load_benchmarks`, whose arguments and errors these are)."""
    results = load_benchmarks(benchmarks, skip_bad_rows, read_images)
    return [s for r in results for s in r.samples], [b for r in results for b in r.bad_rows]


def bad_rows_summary(bad_rows: list[dict], limit: int = 3) -> str:
    """One line per skipped-row reason (``field 'answer': missing or empty: 2 rows``, most frequent first),
    then up to ``limit`` rows as ``file:line (uid)``; for the message printed when no row is left.

    >>> print(bad_rows_summary([{"path": "/d/m.jsonl", "line": 3, "uid": "a", "field": "answer", "reason": "missing"}]))
      field 'answer': missing: 1 row(s), e.g. m.jsonl:3 (uid 'a')
    """
    from collections import Counter

    by = Counter((b["field"], b["reason"]) for b in bad_rows)
    lines = []
    for (fld, why), n in by.most_common():
        eg = [b for b in bad_rows if (b["field"], b["reason"]) == (fld, why)][:limit]
        lines.append(f"  field {fld!r}: {why}: {n} row(s), e.g. "
                     + ", ".join(f"{Path(b['path']).name}:{b['line']} (uid {b['uid']!r})" for b in eg))
    return "\n".join(lines)
