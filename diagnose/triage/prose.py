"""Facts a ticket states in its prose, so a reply never asks for them; and what kind of ticket it is.

The patterns are data (`diagnose/data/triage_prose.yaml`) and language-neutral where the fact is:

>>> facts = prose_facts("Hallo, wir nutzen vllm 0.8.5 auf 2x A100 40GB in Kubernetes: `vllm serve Qwen/Qwen3-8B`")
>>> facts.vllm_version, facts.gpus, facts.deployment, facts.model
('0.8.5', ['2x A100 40GB'], 'kubernetes', 'Qwen/Qwen3-8B')
>>> facts.command
'vllm serve Qwen/Qwen3-8B'
>>> language_of("我们在 RTX 4090 上启动 vllm 失败了"), language_of("Der Server startet nicht, leider."), language_of("It fails.")
('zh', 'de', 'en')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..util.datafiles import load_yaml
from ..util.lazy_pattern import lazy
from .env_reports import env_report_facts

_FLAGS = re.IGNORECASE | re.MULTILINE
_CJK = lazy(r"[\u4e00-\u9fff]")
_KANA = lazy(r"[\u3040-\u30ff]")
_TABLE_ROW = lazy(r"^\s*\|")  # a row of an `nvidia-smi` table
_WORD = lazy(r"[^\W\d_]+")
# A log line, not prose: a level, a timestamp, a traceback frame, a table border, a pid header.
_LOG_LINE = lazy(r"^\s*(?:\(\w+ pid=|\[?\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG)\b|[A-Z]\d{4} |File \"|"
                 r"Traceback|[|+]|\w+(?:Error|Exception):)")


@dataclass
class ProseFacts:
    """What the ticket says about its setup, each fact as written (None or empty where it says nothing)."""

    vllm_version: str | None = None
    gpus: list[str] = field(default_factory=list)
    driver: str | None = None
    cuda: str | None = None
    model: str | None = None
    command: str | None = None
    deployment: str | None = None
    image: str | None = None  # a vLLM container image with a tag that pins its build
    manifest: str | None = None  # the container's spec pasted (a compose service, a pod spec, Helm values): its key

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass(frozen=True)
class Signals:
    """Words that tell what kind of ticket this is, and whether a pasted traceback was cut before its error."""

    question: bool
    performance: bool
    client_error: bool
    traceback_cut: bool
    request_lines: frozenset[int] = frozenset()  # line numbers (from 1) of the text where one request failed


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    data = load_yaml("triage_prose.yaml")
    compiled = {name: [re.compile(p, _FLAGS) for p in patterns] for name, patterns in data["facts"].items()}
    return {
        "max_chars": data["max_chars"],
        "facts": compiled,
        "deployment_names": data["deployment_names"],
        **{kind: re.compile("|".join(f"(?:{p})" for p in data[kind]), _FLAGS)
           for kind in ("question", "question_sentence", "failure_words", "performance", "client_error")},
        "traceback_start": re.compile(data["traceback_start"]),
        "server_lines": re.compile("|".join(f"(?:{p})" for p in data["server_request_lines"]), re.IGNORECASE),
        "max_server_lines": data["max_server_lines"],
        "request_path": re.compile("|".join(f"(?:{p})" for p in data["request_path"]), re.IGNORECASE),
        "request_path_window": data["request_path_window"],
        "exception_line": re.compile(data["exception_line"], re.MULTILINE),
        "zh_min_chars": data["languages"]["zh_min_chars"],
        "ja_min_kana": data["languages"]["ja_min_kana"],
        "instance_gpus": [(re.compile(p), gpus) for provider in load_yaml("cloud_instances.yaml")["providers"]
                          for p, gpus in provider["types"].items()],
        "words": {lang: frozenset(words) for lang, words in data["languages"]["words"].items()},
        "not_prose": re.compile("|".join(f"(?:{p})" for p in data["languages"]["not_prose"]), re.MULTILINE),
    }


def _first(patterns: list[re.Pattern], text: str) -> str | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found.group("value").strip()
    return None


def prose_of(text: str) -> str:
    """The ticket's prose: its lines that are not log lines (the log's own facts are the report's)."""
    head = text[: _table()["max_chars"]]
    return "\n".join(line for line in head.splitlines() if not _LOG_LINE.match(line))


def prose_facts(text: str) -> ProseFacts:
    """The setup facts the ticket's prose states (first occurrence of each); `text` as `prose_of` returns it."""
    table = _table()
    text = text[: table["max_chars"]]
    patterns = table["facts"]
    gpus: list[str] = []
    for pattern in patterns["gpu"]:
        for found in pattern.finditer(text):
            value = " ".join(found.group("value").split())
            if value not in gpus:
                gpus.append(value)
        if gpus:
            break
    if not gpus:
        gpus = _instance_gpus(text, table["instance_gpus"])
    deployment = _first(patterns["deployment"], text)
    return ProseFacts(
        vllm_version=_first(patterns["vllm_version"], text),
        gpus=gpus,
        driver=_first(patterns["driver"], text),
        cuda=_first(patterns["cuda"], text),
        model=_first(patterns["model"], text),
        command=_first(patterns["command"], text),
        deployment=_deployment_name(deployment, table["deployment_names"]) if deployment else None,
        image=_first(patterns["image"], text),
        manifest=_first(patterns["manifest"], text),
    )


def stated_facts(text: str, prose: str) -> ProseFacts:
    """What the ticket states: its prose's facts, what an environment report in it says (`env_reports`), and the
    GPUs, driver and CUDA an `nvidia-smi` table in it shows where the prose does not say them (a ticket of only
    `nvidia-smi` states its GPUs).

    >>> smi = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |\\n|   0  NVIDIA L40S   On |"
    >>> facts = stated_facts(smi, prose_of(smi))
    >>> facts.gpus, facts.driver, facts.cuda
    (['NVIDIA L40S'], '550.54.15', '12.4')
    """
    facts = prose_facts(prose)
    # an environment report (collect_env, `nvidia-smi -L`) says it exactly, its GPUs counted: it goes first
    report = env_report_facts(text[: _table()["max_chars"]])
    facts.vllm_version = report.get("vllm_version") or facts.vllm_version
    facts.gpus = report.get("gpus") or facts.gpus
    facts.driver = report.get("driver") or facts.driver
    facts.cuda = facts.cuda or report.get("cuda")
    tables = "\n".join(line for line in text[: _table()["max_chars"]].splitlines() if _TABLE_ROW.match(line))
    if tables:
        shown = prose_facts(tables)
        facts.gpus = facts.gpus or shown.gpus
        facts.driver = facts.driver or shown.driver
        facts.cuda = facts.cuda or shown.cuda
    return facts


def _instance_gpus(text: str, instances: list[tuple[re.Pattern, str]]) -> list[str]:
    """The GPUs a cloud instance type named in the text carries: `g5.12xlarge` → `4x A10G (g5.12xlarge)`."""
    for pattern, gpus in instances:
        found = pattern.search(text)
        if found:
            count = found.groupdict().get("n")
            return [f"{gpus.format(n=count) if count else gpus} ({found.group(0)})"]
    return []


def _deployment_name(word: str, names: dict[str, str]) -> str:
    lowered = word.lower()
    for key, name in names.items():
        if key in lowered:
            return name
    return lowered


def signals(text: str, prose: str | None = None) -> Signals:
    """Question, performance and client-error words in the prose; a traceback that starts but never ends."""
    table = _table()
    text = text[: table["max_chars"]]
    prose = prose_of(text) if prose is None else prose
    start = table["traceback_start"].search(text)
    cut = bool(start) and not table["exception_line"].search(text, start.end())
    asks = bool(table["question"].search(prose)) or (bool(table["question_sentence"].search(prose))
                                                     and not table["failure_words"].search(prose))
    return Signals(question=asks, performance=bool(table["performance"].search(prose)),
                   client_error=bool(table["client_error"].search(text)), traceback_cut=cut,
                   request_lines=request_lines(text))


def request_lines(text: str) -> frozenset[int]:
    """The lines (numbered from 1) where one request failed: a line of vLLM's request path (`request_path`), and the
    `request_path_window` lines after it (its exception), or a single request's error (data/request_errors.yaml).

    >>> sorted(request_lines("INFO up\\nERROR 10-02 14:11:09 [serving_chat.py:187] Error in preprocessing prompt "
    ...                      "inputs\\nValueError: no chat template\\nINFO later"))
    [2, 3, 4, 5]
    >>> request_lines("ERROR 10-02 14:11:09 [core.py:700] EngineCore failed to start.")
    frozenset()
    """
    table = _table()
    found: set[int] = set()
    for number, line in enumerate(text[: table["max_chars"]].splitlines(), start=1):
        if table["request_path"].search(line):
            found.update(range(number, number + table["request_path_window"] + 1))
        elif _request_error().search(line):
            found.add(number)
    return frozenset(found)


@lru_cache(maxsize=1)
def _request_error() -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in load_yaml("request_errors.yaml")), re.IGNORECASE)


def server_request_lines(text: str) -> list[str]:
    """The server's own lines about requests (startup complete, a request answered or aborted), first ones first.

    >>> server_request_lines('openai.APITimeoutError: Request timed out.\\nINFO:     Application startup complete.')
    ['INFO:     Application startup complete.']
    """
    table = _table()
    found = [line.strip() for line in text[: table["max_chars"]].splitlines() if table["server_lines"].search(line)]
    return found[: table["max_server_lines"]]


def _sentences(prose: str, not_prose: re.Pattern) -> str:
    r"""The lines of `prose` the customer wrote: no fenced or indented block, no line of pasted output or command
    (`languages.not_prose`). A pasted English log outweighs two short sentences of German otherwise.

    >>> print(_sentences("Hallo, es geht nicht:\n```\nthe log\n```\n    the code\nvllm serve M --port 1\nDanke!",
    ...                  re.compile(r"^vllm ")))
    Hallo, es geht nicht:
    Danke!
    """
    kept, fenced = [], False
    for line in prose.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.startswith(("    ", "\t")) and not not_prose.search(line):
            kept.append(line)
    return "\n".join(kept)


def language_of(prose: str) -> str:
    """`ja`, `zh`, `de`, `es` or `en` (the default), from the ticket's prose lines (`prose_of`), of them the
    sentences the customer wrote (`_sentences`; all of them where none is left).

    >>> language_of("vLLM が起動しません。"), language_of("Hola, el servidor no arranca con la GPU.")
    ('ja', 'es')
    """
    table = _table()
    prose = _sentences(prose, table["not_prose"]) or prose
    if len(_KANA.findall(prose[:4096])) >= table["ja_min_kana"]:
        return "ja"
    if len(_CJK.findall(prose[:4096])) >= table["zh_min_chars"]:
        return "zh"
    counts = {lang: 0 for lang in table["words"]}
    for word in _WORD.findall(prose[:8192].lower()):
        for lang, words in table["words"].items():
            if word in words:
                counts[lang] += 1
    return max(sorted(counts), key=lambda lang: (counts[lang], lang == "en"))
