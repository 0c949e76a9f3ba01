"""Tests of howeval.embed (the bundled all-MiniLM-L6-v2) and the howeval.actors.embedder stage.

Tests marked ``slow`` share one module-scoped StepEmbedder (the model loads once, ~10 s).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from howeval.embed import StepEmbedder, default_model_path
from howeval.metrics.steps import step_scores

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a hub from the tests


@pytest.fixture(scope="module")
def embedder() -> StepEmbedder:
    return StepEmbedder()


@pytest.fixture(scope="module")
def worked_example(shared_data) -> dict:
    data = json.loads((shared_data / "steps/crystal_examples.json").read_text())
    return next(x for x in data if x["kind"] == "worked_match_example")


def test_default_model_path_is_bundled():
    path = default_model_path()
    assert os.path.isdir(path) and path.endswith("model")


@pytest.mark.parametrize("bad", ["/nonexistent/model", "sentence-transformers/all-distilroberta-v1"])
def test_refuses_non_local_model(bad):
    with pytest.raises(ValueError, match="not a local directory"):
        StepEmbedder(model_path=bad)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        StepEmbedder(batch_size=0)


@pytest.mark.slow
def test_normalised_embeddings_and_cache(embedder):
    before = embedder.n_encoded
    e = embedder.encode(["zeta alpha one", "zeta beta two", "zeta alpha one"])
    assert e.shape == (3, embedder.dim) and embedder.dim == 384
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(e[0], e[2])
    assert embedder.n_encoded == before + 2  # duplicate in one call: encoded once
    embedder.encode(["zeta beta two", "zeta alpha one"])
    assert embedder.n_encoded == before + 2  # cached across calls
    assert embedder.encode([]).shape == (0, 384)


@pytest.mark.slow
def test_similarity_matches_direct_encoding(embedder):
    pred, ref = ["three consoles on a desk", "the middle one is smallest"], ["Three consoles sit on the desk"]
    sim = embedder.similarity(pred, ref)
    assert sim.shape == (2, 1) and sim.dtype == np.float64
    direct = embedder.model.encode(pred + ref, normalize_embeddings=True)
    assert np.allclose(sim[:, 0], direct[:2] @ direct[2], atol=1e-5)
    assert sim[0, 0] > sim[1, 0]
    assert embedder.similarity([], ref).shape == (0, 1)


@pytest.mark.slow
def test_type_checks(embedder):
    with pytest.raises(TypeError, match="single str"):
        embedder.similarity("a step", ["ref"])
    with pytest.raises(TypeError, match="str steps"):
        embedder.encode(["ok", 3])


@pytest.mark.slow
def test_score_items_rescoring_embeds_nothing(embedder, worked_example):
    items = [
        (worked_example["predicted_steps"], worked_example["reference_steps"]),
        (["Locate the traffic signals", "Both signals are lit green"], ["Find the lights", "They are green", "Answer: Green"]),
        ([], ["Answer: Green"]),
    ]
    first = embedder.score_items(items, taus=(0.35,), alphas=(0.5,))
    n = embedder.n_encoded
    again = embedder.score_items(items, taus=(0.2, 0.35, 0.7), alphas=(0.0, 0.3, 0.5), order="kendall")
    assert embedder.n_encoded == n  # every step already cached
    assert set(again) == {(t, a) for t in (0.2, 0.35, 0.7) for a in (0.0, 0.3, 0.5)}
    assert [s.matched for s in first[(0.35, 0.5)]] == [s.matched for s in again[(0.35, 0.5)]]
    assert all(s.ordered_f1 == s.f1 for s in again[(0.35, 0.0)])
    assert sum(s.matched for s in again[(0.7, 0.5)]) < sum(s.matched for s in again[(0.2, 0.5)])
    assert again[(0.35, 0.5)][2].f1 == 0.0  # no predicted steps
    with pytest.raises(ValueError, match="no reference steps"):
        embedder.score_items([(["a step"], [])])


@pytest.mark.slow
def test_worked_example_default_embedder(embedder, worked_example):
    """The CRYSTAL worked example with all-MiniLM-L6-v2 at tau = 0.35: 5 matches, the gold has 4.

    Gold pred->ref: [0, None, 4, 3, 5]. Greedy on MiniLM similarities gives [0, 3, 5, 1, 4]:
      pred 0 -> ref 0 (0.900)  agrees with gold.
      pred 1 "The middle console looks larger than the rest" -> ref 3 "The left and right consoles look
        larger" (0.843): gold leaves it unmatched (a contradiction); cosine similarity sees the shared
        words, not the contradiction.
      pred 4 "The smallest is C, the middle console" -> ref 4 (0.878), gold ref 5 (0.491).
      pred 3 "So the outer two are the larger consoles" -> ref 1 (0.610), gold ref 3 (0.755, taken by pred 1).
      pred 2 "On a closer look the middle one is smallest" -> ref 5 (0.462), gold ref 4 (0.647, taken by pred 4).
    Only pred 0 agrees; the count matches gold only for tau in [0.462, 0.610), with other pairs.
    """
    sim = embedder.similarity(worked_example["predicted_steps"], worked_example["reference_steps"])
    s = step_scores(sim, tau=0.35, alpha=0.3)
    assert s.matched == 5
    got = {p: r for p, r, _ in s.pairs}
    assert [got.get(i) for i in range(5)] == [0, 3, 5, 1, 4]
    assert s.lis == pytest.approx(3 / 5)  # prediction indices by reference index: [0, 3, 1, 4, 2]
    assert s.f1 == pytest.approx(2 * 1.0 * (5 / 6) / (1.0 + 5 / 6))
    assert step_scores(sim, tau=0.5).matched == 4


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="all-MiniLM-L6-v2 at tau 0.35 matches 5 steps, the gold 4 (see above)")
def test_worked_example_gold_count(embedder, worked_example):
    sim = embedder.similarity(worked_example["predicted_steps"], worked_example["reference_steps"])
    gold = sum(j is not None for j in worked_example["predicted_to_reference_match"])
    assert step_scores(sim, tau=0.35).matched == gold


# ---- howeval.actors.embedder.StepScoreUDF (the Ray Data stage) ----


def _udf(embedder, **kw):
    from howeval.actors.embedder import StepScoreUDF

    udf = StepScoreUDF.__new__(StepScoreUDF)  # reuse the module's embedder instead of loading another
    udf.tau, udf.alpha, udf.order = kw.get("tau", 0.35), kw.get("alpha", 0.5), kw.get("order", "lis")
    udf.embedder = embedder
    return udf


def test_udf_reports_missing_and_present_columns():
    from howeval.actors.embedder import StepScoreUDF

    with pytest.raises(ValueError, match=r"missing columns \['ref_steps'\] \(.*\); present: \['pred_steps', 'sample_id'\]"):
        StepScoreUDF.check_columns({"pred_steps": [], "sample_id": []})


@pytest.mark.slow
def test_udf_adds_columns(embedder, worked_example):
    from howeval.actors.embedder import StepScoreUDF

    batch = {
        "sample_id": np.array(["a", "b"]),
        "pred_steps": np.array([np.array(worked_example["predicted_steps"]), np.array([], dtype=object)], dtype=object),
        "ref_steps": np.array([np.array(worked_example["reference_steps"]), np.array(["x y"])], dtype=object),
    }
    out = _udf(embedder, tau=0.35, alpha=0.3)(batch).to_pydict()
    assert set(StepScoreUDF.OUTPUT_COLUMNS) <= set(out) and list(out["sample_id"]) == ["a", "b"]
    assert list(out["step_matched"]) == [5, 0]
    assert out["step_precision"][0] == pytest.approx(1.0)
    assert out["step_recall"][0] == pytest.approx(5 / 6)
    assert out["step_lis"][0] == pytest.approx(0.6)
    assert out["step_ordered_f1"][0] == pytest.approx(out["step_f1"][0] * (0.7 + 0.3 * 0.6))
    assert out["step_f1"][1] == 0.0


@pytest.mark.slow
@pytest.mark.ray
def test_udf_in_ray_data_actor_pool(worked_example, tmp_path):
    ray = pytest.importorskip("ray")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from howeval.actors.embedder import StepScoreUDF
    from howeval.config import CrystalConfig
    from howeval.plugins.pipeline import Pipeline, Stage
    from howeval.runtime.execute import run_pipelines

    rows = [
        {"sample_id": str(i), "pred_steps": worked_example["predicted_steps"], "ref_steps": worked_example["reference_steps"]}
        for i in range(4)
    ]
    stage = Stage("crystal", StepScoreUDF, {"settings": CrystalConfig(tau=0.35, alpha=0.3)}, batch_size=2, replicas=1, num_cpus=0.75,
                  batch_format="numpy", out_uri=str(tmp_path / "steps"))
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        assert run_pipelines([Pipeline("crystal", pa.Table.from_pylist(rows), [stage])]) == {}
    finally:
        ray.shutdown()
    out = pq.read_table(tmp_path / "steps").to_pylist()
    assert len(out) == 4
    assert all(r["step_matched"] == 5 for r in out)
    assert all(r["step_lis"] == pytest.approx(0.6) for r in out)
