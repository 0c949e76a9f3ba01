"""Helpers of tests/cpu/k8s: CRD schema -> JSON Schema, CEL rules, rendering, resource quantities.

The schemas are the ``openAPIV3Schema`` of version ``v1`` of each CRD vendored in ``k8s/crds/`` (KubeRay
v1.7.0, see its SOURCE.md). Kubernetes' OpenAPI dialect is mapped onto JSON Schema (draft 7) as the API
server applies it with strict field validation (``kubectl apply --validate=strict``, the default):

- ``x-kubernetes-int-or-string: true`` -> ``anyOf: [integer, string]`` (when the CRD does not spell it out);
- ``nullable: true`` -> the type also admits null;
- objects with ``properties`` and no ``additionalProperties`` are closed: an unknown field is an error
  (a typo such as ``rayStartParam`` would otherwise be pruned silently by the API server);
- ``x-kubernetes-list-type: set`` -> ``uniqueItems``; ``x-kubernetes-list-map-keys`` -> items must be unique
  by those keys (a custom keyword below);
- ``x-kubernetes-validations`` (CEL rules) are collected by :func:`cel_rules` and evaluated with
  ``cel-python`` (:func:`cel_errors`), except transition rules (``oldSelf``), which need an update.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import yaml

REPO = Path(__file__).resolve().parents[1]
OVERLAYS = ("1x8", "2x4", "cpu-smoke")
RAY_KINDS = {"RayCluster": "ray.io_rayclusters.yaml", "RayJob": "ray.io_rayjobs.yaml",
             "RayService": "ray.io_rayservices.yaml"}
KUBERAY_VERSION = "1.7.0"


# ------------------------------------------------------------------ schema conversion and validator ----
def k8s_to_jsonschema(node):
    """Map one Kubernetes structural-schema node (recursively) onto draft-7 JSON Schema."""
    if isinstance(node, list):
        return [k8s_to_jsonschema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, val in node.items():
        if key == "description":
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: k8s_to_jsonschema(v) for k, v in val.items()}
        elif key in ("items", "additionalProperties", "not", "anyOf", "allOf", "oneOf"):
            out[key] = k8s_to_jsonschema(val)
        else:
            out[key] = val
    if out.get("x-kubernetes-int-or-string") and "anyOf" not in out and "type" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if out.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if (out.get("type") == "object" and "properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def _list_map_keys(validator, keys, instance, schema):
    """``x-kubernetes-list-map-keys``: list items must be unique by the tuple of these keys."""
    if not validator.is_type(instance, "array"):
        return
    seen: dict[tuple, int] = {}
    for i, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        ident = tuple(repr(item.get(k)) for k in keys)
        if ident in seen:
            yield jsonschema.ValidationError(
                f"items {seen[ident]} and {i} repeat the list-map key {dict(zip(keys, ident))}")
        seen[ident] = i


K8sValidator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"x-kubernetes-list-map-keys": _list_map_keys})


def crd_v1_schema(path: Path) -> dict:
    """``spec.versions[name=v1].schema.openAPIV3Schema`` of one CRD file (~1 MB; the C YAML loader: ~1 s)."""
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert "v1" in versions, f"{path.name}: no v1 version (has {sorted(versions)})"
    return versions["v1"]["schema"]["openAPIV3Schema"]


def schema_errors(validator, doc) -> list[str]:
    """``["<dotted path>: <message>", ...]`` sorted by path; empty when ``doc`` validates."""
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


# ------------------------------------------------------------------ CEL rules --------------------------
def cel_rules(schema: dict, path: tuple = ()) -> list[tuple[tuple, str, str]]:
    """Every ``x-kubernetes-validations`` rule of a raw CRD schema: ``[(schema path, rule, message)]``.

    The schema path holds property names and ``"[]"`` for list items (``("spec", "deletionStrategy")``)."""
    out = []
    for rule in schema.get("x-kubernetes-validations", []):
        out.append((path, rule["rule"], rule.get("message", "")))
    for name, sub in (schema.get("properties") or {}).items():
        out += cel_rules(sub, path + (name,))
    if isinstance(schema.get("items"), dict):
        out += cel_rules(schema["items"], path + ("[]",))
    if isinstance(schema.get("additionalProperties"), dict):
        out += cel_rules(schema["additionalProperties"], path + ("{}",))
    return out


def _nodes_at(doc, path: tuple):
    """The values of ``doc`` at a schema path (lists and maps fan out); missing fields yield nothing."""
    if not path:
        yield doc
        return
    head, rest = path[0], path[1:]
    if head == "[]":
        for item in doc if isinstance(doc, list) else []:
            yield from _nodes_at(item, rest)
    elif head == "{}":
        for item in (doc.values() if isinstance(doc, dict) else []):
            yield from _nodes_at(item, rest)
    elif isinstance(doc, dict) and head in doc:
        yield from _nodes_at(doc[head], rest)


def cel_errors(rules: list[tuple[tuple, str, str]], doc: dict) -> tuple[list[str], int]:
    """Evaluate the non-transition rules on ``doc`` (a create): ``(["<path>: <message> (<rule>)"], evaluated)``.

    Transition rules (they read ``oldSelf``) are skipped: on create the API server does not run them.
    Raises ImportError when cel-python (``celpy``) is not installed."""
    import celpy

    env = celpy.Environment()
    errors, evaluated = [], 0
    for path, rule, message in rules:
        if "oldSelf" in rule:
            continue
        program = env.program(env.compile(rule))
        for node in _nodes_at(doc, path):
            evaluated += 1
            result = program.evaluate({"self": celpy.json_to_cel(node)})
            if isinstance(result, celpy.CELEvalError) or result is not True and result != celpy.celtypes.BoolType(True):
                errors.append(f"{'.'.join(path)}: {message} ({rule})")
    return errors, evaluated


# ------------------------------------------------------------------ rendering --------------------------
def rendered_path(overlay: str) -> Path:
    return REPO / "k8s" / "rendered" / f"{overlay}.yaml"


def load_rendered(overlay: str) -> list[dict]:
    """The documents of ``k8s/rendered/<overlay>.yaml`` (``make k8s-render``)."""
    return [d for d in yaml.safe_load_all(rendered_path(overlay).read_text()) if d]


def kustomize(overlay: str) -> str | None:
    """``kubectl kustomize k8s/overlays/<overlay>`` output, or None when kubectl is not on PATH.

    Raises:
        RuntimeError: kustomize failed (its stderr in the message)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    proc = subprocess.run([kubectl, "kustomize", str(REPO / "k8s" / "overlays" / overlay)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl kustomize k8s/overlays/{overlay} failed: {proc.stderr.strip()}")
    return proc.stdout


def hardware_values(overlay: str) -> dict:
    """``spec`` of ``k8s/overlays/<overlay>/hardware.yaml`` (the overlay's one place for hardware)."""
    doc = yaml.safe_load((REPO / "k8s" / "overlays" / overlay / "hardware.yaml").read_text())
    assert doc["kind"] == "HardwareValues", doc["kind"]
    return doc["spec"]


# ------------------------------------------------------------------ cluster specs ----------------------
def cluster_spec(doc: dict) -> dict:
    """The RayCluster spec inside any of the three kinds."""
    return {"RayCluster": lambda d: d["spec"], "RayJob": lambda d: d["spec"]["rayClusterSpec"],
            "RayService": lambda d: d["spec"]["rayClusterConfig"]}[doc["kind"]](doc)


def pod_specs(doc: dict):
    """(group name, is_head, pod spec) for the head and every worker group."""
    spec = cluster_spec(doc)
    yield "head", True, spec["headGroupSpec"]["template"]["spec"]
    for g in spec.get("workerGroupSpecs", []):
        yield g["groupName"], False, g["template"]["spec"]


_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity(q) -> float:
    """A Kubernetes quantity as a number (CPUs, bytes or devices).

    >>> quantity("500m"), quantity("16Gi") / 2**30, quantity(8)
    (0.5, 16.0, 8.0)
    """
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(q))
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"not a Kubernetes quantity: {q!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]
