"""How much of vLLM's own start-up error catalogue vdiag diagnoses, and into which category.

`data/vllm_messages.json` holds every error message vLLM's releases raise (generated from their source), each
with the releases that have it and, for start-up failures, the category it belongs to. Each categorised message is
rendered as a log line in its era's format (the V0 header before 0.8, the V1 engine-core header after),
with its placeholders filled, and diagnosed on its own.

>>> figures = coverage(limit=40)
>>> figures.categorised == 40 and figures.diagnosed <= figures.categorised
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..util.lazy_pattern import lazy

_PLACEHOLDER = lazy(r"\{[^{}]{0,200}\}")
_V1_FROM = (0, 8)


@dataclass
class Coverage:
    startup: int = 0  # start-up messages in the catalogue
    categorised: int = 0  # of those, the ones the catalogue gives a category
    diagnosed: int = 0  # categorised messages that get any diagnosis
    agreeing: int = 0  # ... whose top diagnosis has the catalogue's category
    disagreements: list[tuple[str, str, str]] = field(default_factory=list)  # (message, catalogue's, vdiag's)
    undiagnosed: list[str] = field(default_factory=list)


def log_line(message: dict) -> str:
    """The message as vLLM would have logged it in the first release that has it.

    >>> log_line({"template": "Bad value {x}.", "kind": "ValueError", "file": "config/model.py", "releases": ["0.6.6-0.33.0"]})
    'ERROR 05-01 10:00:00 model.py:100] ValueError: Bad value 8.'
    """
    text = _PLACEHOLDER.sub("8", message["template"])
    kind = message["kind"]
    if not kind.startswith(("logger", "argparse", "assert")):
        text = f"{kind}: {text}"
    where = message["file"].rsplit("/", 1)[-1]
    first = str(message["releases"][0]).split("-")[0]
    era = tuple(int(part) for part in re.findall(r"\d+", first)[:2])
    if era >= _V1_FROM:
        return f"(EngineCore_DP0 pid=1) ERROR 05-01 10:00:00 [{where}:100] {text}"
    return f"ERROR 05-01 10:00:00 {where}:100] {text}"


def coverage(limit: int | None = None) -> Coverage:
    from ..diagnosis.pipeline import Options, diagnose
    from ..ingest.source import TextSource
    from ..knowledge.loader import load_rules
    from ..report.build import build_report
    from ..util.datafiles import load_json

    ruleset = load_rules()
    figures = Coverage()
    for message in load_json("vllm_messages.json")["messages"]:
        if message.get("startup") is not True:
            continue
        figures.startup += 1
        if not message.get("category") or (limit is not None and figures.categorised >= limit):
            continue
        figures.categorised += 1
        line = log_line(message)
        report = build_report(diagnose([TextSource("catalogue.log", line + "\n")], Options(gpu_mode="none"), ruleset))
        if not report["diagnoses"]:
            figures.undiagnosed.append(line)
            continue
        figures.diagnosed += 1
        got = report["diagnoses"][0]["category"]
        if got == message["category"]:
            figures.agreeing += 1
        else:
            figures.disagreements.append((line, message["category"], got))
    return figures
