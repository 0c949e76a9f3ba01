"""The lmms-eval task of bench/peers_bench.py: each document is one exported sweep prompt (``id``, ``system``,
``text``), sent as the same system and user messages the sweep sends."""


def doc_to_text(doc: dict) -> str:
    return doc["text"]


def doc_to_messages(doc: dict) -> list[dict]:
    system = [{"role": "system", "content": [{"type": "text", "text": doc["system"]}]}] if doc.get("system") else []
    return system + [{"role": "user", "content": [{"type": "text", "text": doc["text"]}]}]


def process_results(doc: dict, results: list) -> dict:
    return {"answered": float(bool(results and results[0]))}
