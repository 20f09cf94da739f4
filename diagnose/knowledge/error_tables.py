"""Signatures generated from tables of other components' errors, instead of one regex per wording.

A rule's signature can name a table (`table: cuda_errors`) in place of
literals and a regex. The table lists every error of a component that the
component itself defines — the CUDA runtime's `cudaError_t` names, codes and
`cudaGetErrorString` messages, Hugging Face hub and Ray exceptions — each with
the taxonomy category it points to. The signature then matches every entry of
the rule's category, whatever wording wraps it (`CUDA error: …`,
`Error 804: …`, `cudaErrorNoDevice`, `RuntimeError(…)`), so a message vdiag
has never seen lands in its category as long as the component's own words are
in it.

>>> literals, pattern = table_signature("cuda_errors", "driver-or-cuda-mismatch")
>>> "forward compatibility was attempted on non supported hw" in literals
True
>>> import regex
>>> regex.search(pattern, "Unexpected error from cudaGetDeviceCount(). Error 804: forward compatibility was "
...              "attempted on non supported HW (Triggered internally at c10/cuda/CUDAFunctions.cpp:108.)").group("error")
'forward compatibility was attempted on non supported HW'
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..util.lazy_pattern import lazy

TABLES = {"cuda_errors": "cuda_errors.yaml", "component_errors": "component_errors.yaml",
          "vllm_messages": "vllm_messages.json", "wrapper_messages": "wrapper_messages.json"}
# tables of message templates (mined from source), matched by their fixed parts in order
TEMPLATE_TABLES = ("vllm_messages", "wrapper_messages")
# tables matched on every line, expanded into one signature per this many entries (table_signatures)
GROUPED_TABLES = ("wrapper_messages",)
GROUP_ENTRIES = 8
# the category of a wrapper's own error (wrapper_messages.json marks them `wrapper_own`, with what they mean)
WRAPPER_OWN_CATEGORY = "wrapper-own-error"
# vLLM's own messages are templates: their {placeholders} stand for any short text
_PLACEHOLDER = lazy(r"\{[^{}]{0,200}\}")
MAX_GAP_CHARS = 160
MIN_TEMPLATE_CHARS = 24
MIN_WORDING_CHARS = 12  # shorter wordings ("invalid argument") say too little on their own


@lru_cache(maxsize=None)
def table_entries(table: str) -> tuple[dict, ...]:
    """The entries of a named table; an unknown name is an error in the rule, so it fails loudly."""
    from ..util.datafiles import load_json, load_yaml

    if table not in TABLES:
        raise KeyError(f"unknown error table '{table}' (known: {', '.join(sorted(TABLES))})")
    data = load_json(TABLES[table]) if TABLES[table].endswith(".json") else load_yaml(TABLES[table])
    if isinstance(data, dict):
        return tuple(entry for section in ("runtime", "driver", "errors", "messages") for entry in data.get(section) or ())
    return tuple(data or ())


def wordings(entry: dict) -> list[str]:
    """What an entry can look like in a log: its message(s) and its symbolic name."""
    found = []
    for key in ("message", "runtime_message", "wording"):  # a builtin exception name (generic) says nothing alone
        value = entry.get(key)
        for text in (value if isinstance(value, list) else [value]):
            if isinstance(text, str) and len(text.strip().rstrip(".")) >= MIN_WORDING_CHARS:
                found.append(text.strip().rstrip("."))
    name = entry.get("name") or (None if entry.get("generic") else entry.get("exception"))
    if isinstance(name, str) and len(name) >= MIN_WORDING_CHARS:
        found.append(name)
    return found


@lru_cache(maxsize=None)
def table_signature(table: str, category: str) -> tuple[tuple[str, ...], str]:
    """Literals and a regex matching every entry of `table` that points to `category`.

    The regex captures the matched wording as `error`; wordings are matched case-insensitively, with any run
    of spaces standing for one (pasted text often re-spaces words). vLLM's message templates match with any
    short text where the template interpolates a value.
    """
    entries = _by_category(table).get(category, [])
    if table in TEMPLATE_TABLES:
        literals, patterns = _template_parts(entries)
    else:
        generic = {w for e in entries if e.get("generic") for w in wordings(e)}
        texts = sorted({w for e in entries for w in wordings(e)}, key=lambda w: (-len(w), w))
        patterns = [_not_on_component_lines(text) if text in generic else _spaced(text) for text in texts]
        literals = tuple(dict.fromkeys(text.lower().split("(")[0].strip() for text in texts))
    if not patterns or not literals:
        raise KeyError(f"error table '{table}' has no entry for category '{category}'")
    return literals, rf"(?i)(?P<error>{'|'.join(patterns)})"


def _spaced(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in text.split())


def _not_on_component_lines(text: str) -> str:
    """A generic wording, except on a line another component wrote in its own format (data/component_log_markers.yaml):
    there it is that component's report, which its own rule places (a variable-length look-behind of `regex`)."""
    from ..util.datafiles import load_yaml

    markers = (load_yaml("component_log_markers.yaml") or {}).get("markers") or []
    if not markers:
        return _spaced(text)
    guard = "|".join(_spaced(marker) for marker in markers)
    # the look-behind after the wording runs only where the wording matched: a line without it costs nothing more
    return rf"{_spaced(text)}(?<!(?:{guard})[^\n]{{0,400}}{_spaced(text)})"


@lru_cache(maxsize=None)
def table_signatures(table: str, category: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    """The signatures a rule's `table:` expands into: one for most tables, one per group of GROUP_ENTRIES entries
    for a table matched on every line (wrapper_messages), so a line holding one entry's words compiles and runs
    only its group's pattern: one alternation of hundreds of templates takes a large part of a second to compile.
    """
    if table not in GROUPED_TABLES:
        return (table_signature(table, category),)
    entries = sorted((e for e in _by_category(table).get(category, []) if template_pattern(e["template"])),
                     key=lambda e: (-len(template_pattern(e["template"])), e["template"]))
    groups = []
    for start in range(0, len(entries), GROUP_ENTRIES):
        literals, patterns = _template_parts(entries[start:start + GROUP_ENTRIES])
        if literals:  # a group no literal finds could never be matched
            groups.append((literals, rf"(?i)(?P<error>{'|'.join(patterns)})"))
    if not groups:
        raise KeyError(f"error table '{table}' has no entry for category '{category}'")
    return tuple(groups)


def _template_parts(entries: list[dict]) -> tuple[tuple[str, ...], list[str]]:
    """The prefilter literals and the patterns of message-template entries."""
    patterns = sorted({template_pattern(e["template"]) for e in entries if template_pattern(e["template"])},
                      key=lambda p: (-len(p), p))
    # the start of each template's longest fixed fragment: enough to find its lines, short enough to survive a cut
    literals = tuple(dict.fromkeys(e["literal"].lower().strip()[:40].strip() for e in entries
                                   if len((e.get("literal") or "").strip()) >= MIN_WORDING_CHARS
                                   and e["literal"].isascii() and template_pattern(e["template"])))
    return literals, patterns


@lru_cache(maxsize=None)
def _by_category(table: str) -> dict[str, list[dict]]:
    """A table's entries by category, grouped once (the catalogue has thousands; a cold load asks per category)."""
    grouped: dict[str, list[dict]] = {}
    for entry in table_entries(table):
        category = WRAPPER_OWN_CATEGORY if entry.get("wrapper_own") else entry.get("category")
        grouped.setdefault(category, []).append(entry)
    return grouped


@lru_cache(maxsize=None)  # asked twice per category; escaping is most of a cold rule load
def template_pattern(template: str) -> str | None:
    """A template's fixed parts in order, any short text between them; None when too little is fixed.

    >>> import re
    >>> pattern = template_pattern("Total number of attention heads ({n}) must be divisible by tensor parallel size ({tp}).")
    >>> bool(re.search(pattern, "Total number of attention heads (28) must be divisible by tensor parallel size (3)."))
    True
    >>> template_pattern("{x} is not supported") is None
    True
    """
    parts = [part.strip() for part in _PLACEHOLDER.split(template.strip().rstrip("."))]
    while parts and not parts[-1]:
        parts.pop()
    while parts and not parts[0]:
        parts.pop(0)
    if sum(len(part) for part in parts) < MIN_TEMPLATE_CHARS or sum(len(part.split()) for part in parts) < 4:
        return None  # "{x} is not supported" says too little to name a category
    # each space re.escape leaves as "\ " is one run of whitespace between words: the same as escaping word by word
    fixed = [re.escape(" ".join(part.split())).replace("\\ ", r"\s+") for part in parts]
    return f".{{0,{MAX_GAP_CHARS}}}?".join(fixed)


def cuda_error_meaning(wording: str) -> str | None:
    """NVIDIA's own description of the CUDA error a log's wording names, from the cudart headers (cuda_errors.yaml).

    A table diagnosis knows only the category; the header's text says what the code means, which is often the
    whole diagnosis (804: forward compatibility on hardware without it).

    >>> print(cuda_error_meaning("forward compatibility was attempted on non supported HW"))
    CUDA names this cudaErrorCompatNotSupportedOnDevice (error 804): the system was upgraded to run with forward compatibility but the visible hardware detected by CUDA does not support this configuration.
    >>> cuda_error_meaning("an error vLLM raised") is None
    True
    """
    wanted = " ".join(wording.lower().split()).rstrip(".")
    for entry in table_entries("cuda_errors"):
        texts = [" ".join(t.lower().split()).rstrip(".") for t in wordings(entry)]
        doc = entry.get("doc")
        if wanted in texts and isinstance(doc, str) and doc.strip():
            doc = re.sub(r"^This (?:error )?indicates that\s+", "", doc.strip())
            return f"CUDA names this {entry['name']} (error {entry['code']}): {doc}"
    return None


def error_meaning(wording: str) -> str | None:
    """What the error a diagnosis quotes says beyond its category: NVIDIA's description of a CUDA error, or, for
    a message of a program that launches vLLM (GPUStack, trl, ...), that program's name and what it means."""
    return cuda_error_meaning(wording) or wrapper_message_meaning(wording)


def wrapper_message_meaning(wording: str) -> str | None:
    """Whose message a wording is, when a program that launches vLLM wrote it (wrapper_messages.json).

    A wrapper's own error is named as its own, with what it means; a vLLM failure the wrapper reports in its
    own words is said to be the wrapper's report, so a reader knows where to look up the message.

    >>> print(wrapper_message_meaning("The model requires approximately 35.2 GiB of VRAM."))  # doctest: +ELLIPSIS
    The message is GPUStack's (gpustack/policies/candidate_selectors/vllm_resource_fit_selector.py), not vLLM's: ...
    >>> print(wrapper_message_meaning("The vLLM server can't be reached at 0.0.0.0:8000 after 240 seconds. Make sure "
    ...                               "the server is running by running `trl vllm-serve`."))  # doctest: +ELLIPSIS
    trl's own error: the trainer could not reach ...
    >>> wrapper_message_meaning("CUDA out of memory") is None
    True
    """
    wording = " ".join(wording.split())
    entry = _wrapper_entry(wording)
    if entry is None:
        return None
    names = _wrapper_names()
    name = names.get(entry["wrapper"], entry["wrapper"])
    where = entry["file"]
    # one wrapper copied the other's check (ms-swift's of trl's): the wording alone cannot tell which ran
    also = "".join(f"; {names.get(e['wrapper'], e['wrapper'])} has the same message ({e['file']})"
                   for e in _same_wording(entry, wording))
    if entry.get("wrapper_own"):
        return f"{name}'s own error: {entry['means']} (its message, from {where}{also})."
    return (f"The message is {name}'s ({where}{also}), not vLLM's: {name} reports this failure in its own words, "
            "and its documentation and issues are where the message is explained.")


def wrapper_of_message(wording: str) -> str | None:
    """The program that launches vLLM whose message `wording` is (wrapper_messages.json), or None for vLLM's own.

    >>> wrapper_of_message("AssertionError: model context length should be greater than total sequence length")
    'verl'
    >>> wrapper_of_message("User-specified max_model_len (8192) is greater than the derived max_model_len") is None
    True
    """
    entry = _wrapper_entry(" ".join(wording.split()))
    return None if entry is None else str(entry["wrapper"])


def _same_wording(entry: dict, wording: str) -> list[dict]:
    """The other wrappers' entries that match `wording` too, one per wrapper."""
    seen = {entry["wrapper"]}
    found = []
    low = wording.lower()
    for literal, other in _wrapper_literals():
        if other["wrapper"] in seen or literal not in low:
            continue
        if (pattern := _compiled_template(other["template"])) is not None and pattern.search(wording):
            seen.add(other["wrapper"])
            found.append(other)
    return found


def _wrapper_entry(wording: str) -> dict | None:
    low = wording.lower()
    for literal, entry in _wrapper_literals():
        if literal in low and (pattern := _compiled_template(entry["template"])) is not None and pattern.search(wording):
            return entry
    return None


@lru_cache(maxsize=1)
def _wrapper_literals() -> tuple[tuple[str, dict], ...]:
    """Each wrapper message with its literal as a match holds it (lower case, without the final stop)."""
    found = ((str(e.get("literal") or "").lower().strip().rstrip("."), e) for e in table_entries("wrapper_messages"))
    return tuple((literal, entry) for literal, entry in found if literal)


@lru_cache(maxsize=None)
def _compiled_template(template: str) -> re.Pattern | None:
    pattern = template_pattern(template)
    return re.compile(pattern, re.I) if pattern else None


@lru_cache(maxsize=1)
def _wrapper_names() -> dict[str, str]:
    from ..util.datafiles import load_json

    return dict(load_json(TABLES["wrapper_messages"]).get("wrappers") or {})
