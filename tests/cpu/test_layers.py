"""The core's import graph (issue 22): no module of ``howeval`` imports, directly or through others, a
module that imports it back. The layer order itself is import-linter's contract in pyproject.toml
(``lint-imports``, run by ``make test``); a circle inside one layer would pass that contract, so it is
checked here on the module graph (imports inside functions included, as import-linter counts them)."""
from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_planted_circle():
    g = grimp.ImportGraph()
    for m in ("p.a", "p.b", "p.c", "p.d"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.c")
    g.add_import(importer="p.c", imported="p.a")
    g.add_import(importer="p.d", imported="p.a")
    assert _cycles(g, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]


def test_howeval_module_graph_has_no_circle():
    graph = grimp.build_graph("howeval")
    modules = set(graph.modules)  # packages too: an __init__ that re-exports is part of a circle through it
    assert len(modules) > 75
    assert _cycles(graph, modules) == []
