"""EMBER_LOGS for ember.compile: ``EMBER_LOGS=graph,fusion,recompiles,output_code``
(comma-separated; ``+compile`` or ``all`` turns on all of them) prints the traced and fused
graphs, the fusion groups, each recompile's reason and the generated source to stderr,
as TORCH_LOGS does for torch.compile. ``ember._logging.set_logs(graph=True, ...)`` sets
the same switches from Python."""
from __future__ import annotations

import os
import sys

_ALL = ("graph", "fusion", "recompiles", "output_code", "graph_breaks")
_on = set()


def _parse(spec):
    out = set()
    for part in (spec or "").replace(" ", "").split(","):
        part = part.lstrip("+")
        if part in ("all", "compile", "dynamo", "inductor"):
            out |= set(_ALL)
        elif part in _ALL:
            out.add(part)
    return out


_on = _parse(os.environ.get("EMBER_LOGS", ""))


def set_logs(**switches):
    for k, v in switches.items():
        if k not in _ALL:
            raise ValueError(f"ember._logging.set_logs: unknown log {k!r}; known: {', '.join(_ALL)}")
        if v:
            _on.add(k)
        else:
            _on.discard(k)


def enabled(name):
    return name in _on


def _emit(name, msg):
    if name in _on:
        print(f"[ember.compile:{name}] {msg}", file=sys.stderr, flush=True)


def graph(msg):
    _emit("graph", msg)


def fusion(msg):
    _emit("fusion", msg)


def recompiles(msg):
    _emit("recompiles", msg)


def graph_breaks(msg):
    _emit("graph_breaks", msg)


def output_code(name, source):
    _emit("output_code", f"{name}:\n{source}")
