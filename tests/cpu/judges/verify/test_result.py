"""Tests for howeval.judges.verify.result: the verdict record and the registry of rule verifiers."""
from __future__ import annotations

import json

import pytest

from howeval.judges.verify import VERIFIERS, VerifyResult, register_verifier, verify

MANIFEST_TYPES = {
    "free_form", "multiple_choice", "integer_number", "decimal_number",
    "extractive_text", "boolean_text", "free_form_or_mc", "other_text",
}
MATHV_DEG = ["$10^{\\circ}$", "$15^{\\circ}$", "$20^{\\circ}$", "$25^{\\circ}$", "$30^{\\circ}$"]


def test_result_fields():
    res = verify(r"so \boxed{15^{\circ}}", "B", "multiple_choice", MATHV_DEG, source="MATH-Vision testmini")
    assert res == VerifyResult(True, "15^{\\circ}", "rule", res.reason)
    assert "picked B" in res.reason and "MATH-Vision testmini" in res.reason


def test_registry_covers_manifest_types(shared_data):
    types = {json.loads(line)["answer_type"] for line in open(shared_data / "manifest.jsonl", encoding="utf-8")}
    assert types == MANIFEST_TYPES
    assert MANIFEST_TYPES <= set(VERIFIERS)


def test_duplicate_registration_raises():
    with pytest.raises(ValueError, match="'multiple_choice' already registered"):
        register_verifier("multiple_choice")(lambda *a, **k: None)
