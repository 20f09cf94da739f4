"""YAML pasted whole with a log: a Kubernetes manifest, Helm values of the production-stack, read as YAML.

The line scanner hands extractors lines without their indentation, which YAML needs; this reader takes each
block's raw text instead, cuts out every YAML document that starts at column 0 with `apiVersion:`, `kind:` or
`servingEngineSpec:` or `services:` (a compose file), and reads the launch from it. A document that names the chart's keys or a pod's containers
but cannot be read says why, so the report can tell what it could not read.

>>> from .record import Facts
>>> facts = Facts()
>>> reader = ManifestReader(facts)
>>> reader.feed_block(b"INFO x\\nservingEngineSpec:\\n  modelSpec:\\n  - modelURL: '{{ .Values.m }}'\\nERROR y\\n", 1000, 1)
>>> facts.launches, facts.input_notes[0].startswith('line 2: the values hold Helm template expressions')
([], True)
"""

from __future__ import annotations

import re

from .record import MAX_LAUNCH_CANDIDATES, Facts, LaunchCandidate

MAX_DOCUMENT_LINES = 2000
MAX_NOTES = 4
_START = re.compile(rb"^(?:apiVersion:|kind:|servingEngineSpec:|services:)", re.MULTILINE)
_YAML_LINE = re.compile(r"^(?:\s*$|\s*#|\s+\S|-(?:\s|$)|---|\]|[\w.\"'/-]+:(?:\s|$))")


class ManifestReader:
    literals = ()  # reads whole blocks (`feed_block`)
    window = 0

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None:
        for match in _START.finditer(data, 0, cut):
            if match.start() > 0 and data[match.start() - 1:match.start()] != b"\n":
                continue
            line_no = first_line + data.count(b"\n", 0, match.start())
            lines = data[match.start():].decode("utf-8", "replace").split("\n")[:MAX_DOCUMENT_LINES]
            document = []
            for line in lines:
                if document and not _YAML_LINE.match(line):
                    break
                document.append(line)
            self._read(line_no, "\n".join(document))

    def _read(self, line_no: int, text: str) -> None:
        from ..launch.helm_values import looks_like_values, values_problem
        from ..launch.parse import parse_launch

        if any(c.line == line_no for c in self.facts.launches):
            return
        try:
            launch = parse_launch(text)
        except Exception as error:  # noqa: BLE001 - a paste is never worth a traceback; the note says what failed
            launch, problem = None, f"could not be read ({type(error).__name__})"
        else:
            problem = values_problem(text) if looks_like_values(text) else None
        if launch is None and problem is None and "containers:" in text:
            problem = "the manifest holds no container that runs vLLM (or is not YAML as written)"
        if launch is None:
            if problem and len(self.facts.input_notes) < MAX_NOTES:
                self.facts.input_notes.append(f"line {line_no}: {problem}")
            return
        last = line_no + text.count("\n")
        kept = [c for c in self.facts.launches if not line_no <= c.line <= last]  # its lines, read without indentation
        if len(kept) < MAX_LAUNCH_CANDIDATES:
            kept.append(LaunchCandidate(line_no, launch, text))
        self.facts.launches[:] = sorted(kept, key=lambda c: c.line)
