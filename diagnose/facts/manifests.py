"""YAML pasted whole with a log: a Kubernetes manifest, Helm values of the production-stack, read as YAML.

The line scanner hands extractors lines without their indentation, which YAML needs; this reader takes each
block's raw text instead, cuts out every YAML document that starts at column 0 with `apiVersion:`, `kind:`,
`servingEngineSpec:`, `services:` (a compose file), `modelArtifacts:` (llm-d values), `applications:` or
`model_loading_config:` (Ray Serve LLM), `stage_args:` (a vLLM-Omni stage config), `max_probe_steps:` or
`kv_cache_cpu_memory_utilization:` (KAITO's inference config), `args:` (a container's arguments pasted alone: read as
vLLM's when they hold its flags, launch.kubernetes.vllm_words) or `[{"Id":` (docker inspect, JSON being YAML), and
reads the launch from it. A document that names the chart's keys or a pod's containers but cannot be read says
why, so the report can tell what it could not read.

>>> from .record import Facts
>>> facts = Facts()
>>> reader = ManifestReader(facts)
>>> reader.feed_block(b"INFO x\\nservingEngineSpec:\\n  modelSpec:\\n  - modelURL: '{{ .Values.m }}'\\nERROR y\\n", 1000, 1)
>>> facts.launches, facts.input_notes[0].startswith('line 2: the values hold Helm template expressions')
([], True)
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..util.lazy_pattern import lazy
from .record import MAX_LAUNCH_CANDIDATES, Facts, LaunchCandidate

MAX_DOCUMENT_LINES = 2000
MAX_DOCUMENT_BYTES = 1 << 20  # decoded per document start: past the pasted-YAML size, a document is refused anyway
MAX_DOCUMENTS = 64  # documents read per diagnosis: a paste has a few; a log of 100,000 of them took minutes
MAX_NOTES = 4
MAX_CUTS = 4
_START = lazy(rb"^(?:apiVersion:|kind:|servingEngineSpec:|services:|modelArtifacts:|applications:|model_loading_config:"
              rb'|stage_args:|max_probe_steps:|kv_cache_cpu_memory_utilization:|args:(?=\s*(?:\[|$))|\[(?=\s*\{\s*"Id":))',
              re.MULTILINE)


@lru_cache(maxsize=1)
def _starts() -> re.Pattern[bytes]:
    """_START, and the top keys of a pasted piece of Helm values (`extraArgs:`, `- modelURL:`: helm_fragment)."""
    from ..launch.helm_fragment import fragment_keys

    keys = b"|".join(re.escape(k.encode()) + b":" for k in fragment_keys())
    start = _START.pattern
    assert isinstance(start, bytes)
    return re.compile(start + rb"|^(?:-\s+)?(?:" + keys + rb")", re.MULTILINE)


_YAML_LINE = lazy(r"^(?:\s*$|\s*#|\s+\S|-(?:\s|$)|---|\]|[\w.\"'/-]+:(?:\s|$))")


class ManifestReader:
    literals = ()  # reads whole blocks (`feed_block`)
    window = 0

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.documents = 0

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None:
        read_to = 0  # a document's own `kind:` line starts no other
        for match in _starts().finditer(data, 0, cut):
            if match.start() < read_to or match.start() > 0 and data[match.start() - 1:match.start()] != b"\n":
                continue
            line_no = first_line + data.count(b"\n", 0, match.start())
            self.documents += 1
            if self.documents > MAX_DOCUMENTS:
                if self.documents == MAX_DOCUMENTS + 1:  # said once, whatever notes came before
                    self.facts.input_notes.append(f"line {line_no}: the input holds more than {MAX_DOCUMENTS} YAML "
                                                  "documents (manifests, values, compose files): the first were read, "
                                                  "the rest not")
                return
            start = match.start()
            lines = data[start:start + MAX_DOCUMENT_BYTES].decode("utf-8", "replace").split("\n")[:MAX_DOCUMENT_LINES]
            document: list[str] = []
            for line in lines:
                if document and not _YAML_LINE.match(line):
                    break
                document.append(line)
            text = "\n".join(document)
            read_to = match.start() + len(text.encode("utf-8", "replace"))
            prefix = _yaml_prefix(text)
            if prefix == text or not self._read(line_no, prefix, quiet=True):
                self._read(line_no, text)

    def _read(self, line_no: int, text: str, quiet: bool = False) -> bool:
        """Read one document; whether it gave a launch (`quiet`: the part of a document before where YAML failed,
        which counts only with its model, and adds no note)."""
        from ..launch.helm_values import looks_like_values, values_problem
        from ..launch.keyed_forms import keyed_problem, looks_like_keyed
        from ..launch.parse import parse_launch

        if any(c.line == line_no and c.text == text for c in self.facts.launches):
            return True
        problem: str | None = None
        try:
            launch = parse_launch(text)
        except Exception as error:  # noqa: BLE001 - a paste is never worth a traceback; the note says what failed
            launch, problem = None, f"could not be read ({type(error).__name__})"
        else:
            problem = values_problem(text) if looks_like_values(text) else None
            if problem is None and launch is None and looks_like_keyed(text):
                problem = keyed_problem(text)
            if problem is None and launch is None and text.startswith("["):
                problem = "the docker inspect output is not JSON as written (was it cut?): the launch was not read from it"
        if problem is None and "{{" in text and "}}" in text and (launch is None or launch.keyed_form is None):
            launch, problem = None, ("the manifest is a Helm chart template ({{ … }}), not what ran: paste the rendered "
                                     "object (kubectl get deployment <name> -o yaml) to have the launch read")
        if launch is None and problem is None and "containers:" in text:
            problem = _yaml_problem(text) or "the manifest holds no container that runs vLLM"
        if quiet and (launch is None or launch.model is None):
            return False
        if launch is None:
            if problem and not quiet:
                self._note(f"line {line_no}: {problem}")
            return False
        if launch.frame == "kubernetes" and launch.manifest and launch.manifest[1]:
            self._runtime_class(text, launch.manifest[1])
        last = line_no + text.count("\n")
        kept = [c for c in self.facts.launches if not line_no <= c.line <= last]  # its lines, read without indentation
        if len(kept) < MAX_LAUNCH_CANDIDATES:
            kept.append(LaunchCandidate(line_no, launch, text))
        self.facts.launches[:] = sorted(kept, key=lambda c: c.line)
        return True


    def _runtime_class(self, text: str, container: str) -> None:
        """The vLLM pod's runtimeClassName from its manifest: "" where its spec sets none (a value read wins)."""
        from ..launch.kubernetes import pod_runtime_class

        value = pod_runtime_class(text, container)
        if value is not None and not self.facts.pod.runtime_class:
            self.facts.pod.runtime_class = value

    def _note(self, note: str) -> None:
        if len(self.facts.input_notes) < MAX_NOTES:
            self.facts.input_notes.append(note)


def _yaml_prefix(text: str) -> str:
    """The document up to where YAML first fails, for a document followed by a log's indented lines (describe's
    events after the values): cut at the line YAML names, a few times at most; the whole text when none parses."""
    import yaml

    from ..util.pasted_yaml import refused

    if refused(text):
        return text
    candidate = text
    for _ in range(MAX_CUTS):
        try:
            list(yaml.safe_load_all(candidate))
            return candidate
        except yaml.MarkedYAMLError as error:
            lines = candidate.split("\n")
            mark = error.problem_mark or error.context_mark
            if mark is None or not 0 < mark.line < len(lines):
                return text
            candidate = "\n".join(lines[:mark.line])
        except (yaml.YAMLError, RecursionError, ValueError):
            return text
    return text


def _yaml_problem(text: str) -> str | None:
    """Why a manifest is no YAML, where YAML says: `not YAML as written (line 4 of it: …)`; None when it is."""
    import yaml

    from ..util.pasted_yaml import refused

    if refused(text):
        return "the manifest uses YAML anchors or aliases, or is too large: it was not read"
    try:
        list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as error:
        where = f"line {error.problem_mark.line + 1} of it: " if error.problem_mark else ""
        return f"the manifest is not YAML as written ({where}{error.problem}): the launch was not read from it"
    except (yaml.YAMLError, RecursionError, ValueError):
        return "the manifest is not YAML as written: the launch was not read from it"
    return None
