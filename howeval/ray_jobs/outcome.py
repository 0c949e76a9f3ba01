"""Did a job measure anything? Its exit code, and one line per thing that was not measured.

A job exits 0 only when it measured something for every config it ran. The codes (also in the README):

- ``0`` (:data:`EXIT_OK`): every config x mode has rows without an engine error, and every judge that ran
  has judgments without a ``judge_error``.
- ``1`` (:data:`EXIT_PARTIAL`): something else failed (a config whose engine died after writing rows, the
  judge pool, CRYSTAL, AdaptMMBench): the failed part is named, the rest was measured.
- ``2`` (:data:`EXIT_USAGE`): bad input (config, data, arguments); nothing ran.
- ``3`` (:data:`EXIT_ALL_ROWS_FAILED`): every row of a config x mode failed (engine errors: a wrong key, a
  wrong URL), or every call of a judge failed: that figure was not measured.
- ``4`` (:data:`EXIT_NOT_STARTED`): a config never started (its engine failed to build; no row written).

When several apply, the highest of 4, 3, 1 is returned. Row-level reasons stay on the rows (``error``,
``judge_error``); these functions only read them back, once the job has written everything.
"""
from __future__ import annotations

from collections import defaultdict

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_USAGE = 2
EXIT_ALL_ROWS_FAILED = 3
EXIT_NOT_STARTED = 4


def _first_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def first_error(errors: list[str]) -> str:
    """The first error in one line, with how many other distinct reasons there were.

    >>> first_error(["AuthenticationError: 401", "AuthenticationError: 401", "Timeout"])
    'AuthenticationError: 401 (+1 other reason)'
    """
    distinct = list(dict.fromkeys(_first_line(e) for e in errors))
    more = len(distinct) - 1
    return distinct[0] + (f" (+{more} other reason{'s' if more > 1 else ''})" if more else "")


def all_rows_failed(responses: list[dict]) -> dict[str, str]:
    """``{"<config> <mode>": one-line reason}`` for each config x mode whose every (latest) response row
    has an engine ``error``; rows in ``sample_id`` order, the first error quoted."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in sorted(responses, key=lambda r: str(r.get("sample_id"))):
        groups[(r["config"], r["mode"])].append(r)
    return {f"{c} {m}": f"all {len(rows)} rows failed: {first_error([r['error'] for r in rows])}"
            for (c, m), rows in sorted(groups.items()) if rows and all(r.get("error") for r in rows)}


def all_judge_calls_failed(judgments: list[dict], judges: list[str] | None = None) -> dict[str, str]:
    """``{"judge <id>": one-line reason}`` for each judge (``judges``: ids to check, default all present)
    whose every judgment row has a ``judge_error``; rows in key order, the first error quoted."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for j in sorted(judgments, key=lambda j: (str(j.get("config")), str(j.get("mode")), str(j.get("sample_id")))):
        if judges is None or j.get("judge") in judges:
            groups[j["judge"]].append(j)
    return {f"judge {k}": f"all {len(rows)} judge calls failed: {first_error([j['judge_error'] for j in rows])}"
            for k, rows in sorted(groups.items()) if rows and all(j.get("judge_error") for j in rows)}


def read_unmeasured(output_uri: str, configs: list[str] | None = None,
                    judges: list[str] | None = None) -> dict[str, str]:
    """What a run under ``output_uri`` did not measure: :func:`all_rows_failed` over its latest responses
    (of ``configs``, default all) and :func:`all_judge_calls_failed` over the judgments of the responses
    without an engine error (of ``judges``: judge ids, default all)."""
    from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA, key_of, latest_attempts
    from howeval.store import join, read_table

    responses = [r for r in latest_attempts(read_table(join(output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
                 if configs is None or r["config"] in configs]
    current = {key_of(r): r.get("response_hash") for r in responses if not r.get("error")}
    judgments = [j for j in read_table(join(output_uri, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist()
                 if current.get(key_of(j), object()) == j.get("response_hash")]
    return {**all_rows_failed(responses), **all_judge_calls_failed(judgments, judges)}


def written_configs(output_uri: str) -> set[str]:
    """The configs with at least one response row under ``output_uri`` (a config absent here never started)."""
    from howeval.records import RESPONSE_SCHEMA
    from howeval.store import join, read_table

    t = read_table(join(output_uri, "responses"), RESPONSE_SCHEMA)[0]
    return set(t.column("config").to_pylist()) if t.num_rows else set()


def exit_code(not_started: list[str], unmeasured: dict[str, str], failures: dict[str, str]) -> int:
    """The job's exit code from what it recorded (see the module docstring): configs that never started,
    figures not measured, other failures."""
    if not_started:
        return EXIT_NOT_STARTED
    if unmeasured:
        return EXIT_ALL_ROWS_FAILED
    return EXIT_PARTIAL if failures else EXIT_OK
