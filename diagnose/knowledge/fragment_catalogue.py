"""What the fragment index (knowledge.message_fragments) holds: every message a paste's piece is compared with.

vLLM's own error templates (the catalogue) and the messages it logs below ERROR (`quiet`: a piece that fits one of
them as well as an error is no evidence of the error); the categorised error wordings of the components vLLM runs
on and of the CUDA runtime; the messages mined from the programs that launch vLLM; and the messages the rules'
error patterns spell out (knowledge.pattern_templates). Entries that are no vLLM message say whose they are
(`component`, `rule_pattern`), and those whose words are not vetted against quiet messages are counted by their
beginning only (`beginning_only`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from .message_fragments import FragmentIndex, template_parts, words

SHIPPED_INDEX = "generated/fragment_index.json"  # scripts/build_fragment_index.py
# what the index is made of besides the rules' patterns: the shipped tables hold while these are as they were
INDEX_SOURCES = ("vllm_messages.json", "generated/vllm_quiet_messages.json", "wrapper_messages.json",
                 "component_errors.yaml", "cuda_errors.yaml", "generated/component_messages.json")
MINED_COMPONENTS = "generated/component_messages.json"  # scripts/build_component_messages.py


@lru_cache(maxsize=4)
def catalogue_index(patterns: tuple[tuple[str, str, str], ...] = ()) -> FragmentIndex:
    """The index over vLLM's messages, on first use (only a paste no rule placed needs it): the error catalogue,
    and the messages vLLM logs below ERROR (`quiet`: a piece that fits one of them as well as an error is no
    evidence of the error); the components' error wordings; the launchers' messages; and, given the rules' error
    patterns as (rule id, category, regex), the messages they spell out (knowledge.pattern_templates).

    Read from data/generated/fragment_index.json where that was made from these sources and patterns (the bundled
    rules'); built here only for other rules (a user's rule folder) or a source changed since."""
    shipped = _shipped_index(patterns)
    return shipped if shipped is not None else FragmentIndex([*_vllm_entries(), *other_entries(patterns)])


def index_data(patterns: tuple[tuple[str, str, str], ...]) -> dict:
    """What data/generated/fragment_index.json holds for these patterns: the digest of its sources, the entries
    that are not read from vLLM's message tables, and the index's tables."""
    others = other_entries(patterns)
    return {"sources": sources_digest(patterns), "entries": others,
            "tables": FragmentIndex([*_vllm_entries(), *others]).tables()}


def sources_digest(patterns: tuple[tuple[str, str, str], ...]) -> str:
    """sha256 of the rules' patterns and of the data files the index is made of (INDEX_SOURCES), by content."""
    import hashlib
    import json

    from ..util.datafiles import DATA_DIR

    digest = hashlib.sha256(json.dumps(patterns).encode())
    for name in INDEX_SOURCES:
        digest.update(f"\0{name}\0".encode())
        digest.update((DATA_DIR / name).read_bytes())
    return digest.hexdigest()


def _shipped_index(patterns: tuple[tuple[str, str, str], ...]) -> FragmentIndex | None:
    """The index from the shipped tables, or None where they were made of other sources or patterns."""
    from ..util.datafiles import load_json

    try:
        shipped = load_json(SHIPPED_INDEX)
        if shipped.get("sources") != sources_digest(patterns):
            return None
        return FragmentIndex([*_vllm_entries(), *shipped["entries"]], shipped["tables"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _vllm_entries() -> list[dict]:
    """vLLM's error catalogue, then the messages it logs below ERROR (`quiet`)."""
    from ..util.datafiles import load_json

    quiet = ({"template": m["template"], "category": None, "startup": False, "quiet": True}
             for m in load_json("generated/vllm_quiet_messages.json")["messages"])
    return [*load_json("vllm_messages.json")["messages"], *quiet]


def other_entries(patterns: tuple[tuple[str, str, str], ...]) -> list[dict]:
    """The index's entries after vLLM's: the components' wordings, the launchers' messages, and the rules'
    messages that are not vLLM's own."""
    from .pattern_templates import rule_pattern_entries

    return [*component_messages(), *wrapper_messages(), *_not_vllm_s(rule_pattern_entries(patterns))]


@lru_cache(maxsize=1)
def wrapper_messages() -> tuple[dict, ...]:
    """The messages of the programs that launch vLLM (data/wrapper_messages.json, mined from their sources), as
    index entries of that program: a categorised one (verl's "model context length should be greater than total
    sequence length") places a piece of it like a component's wording; the others, and the wrapper's own errors,
    are rivals only (no category), so a piece they share says nothing.

    >>> entry = next(e for e in wrapper_messages() if e["template"].startswith("model context length should"))
    >>> entry["component"], entry["category"]
    ('verl', 'max-model-len-exceeds-model')
    """
    from ..util.datafiles import load_json

    return tuple({"template": m["template"], "category": None if m.get("wrapper_own") else m.get("category"),
                  "component": m["wrapper"], "kind": m.get("kind") or "", "startup": False,
                  "beginning_only": True}
                 for m in load_json("wrapper_messages.json")["messages"] if isinstance(m.get("template"), str))


def _not_vllm_s(entries: Iterable[dict]) -> list[dict]:
    """The rules' messages that are not vLLM's own: where a rule spells out one of vLLM's, the catalogue's
    template (and its category) is the one to compare a piece with."""
    from ..util.datafiles import load_json

    known = " | ".join(" ".join(w for part in template_parts(m["template"]) for w in part)
                       for m in load_json("vllm_messages.json")["messages"])
    known = f" | {known} | "
    kept = []
    for entry in entries:
        longest = max((" ".join(part) for part in template_parts(entry["template"])), key=len)
        if f" {longest} " not in known:
            kept.append(entry)
    return kept


@lru_cache(maxsize=1)
def component_messages() -> tuple[dict, ...]:
    """The categorised error wordings of the components vLLM runs on (data/component_errors.yaml) and the CUDA
    runtime's messages (data/cuda_errors.yaml), then the messages mined from the components' source
    (data/generated/component_messages.json), as index entries: a paste of the first half of "CUDA error: the
    provided PTX was compiled with an unsupported toolchain" is as telling as a piece of one of vLLM's own. A
    hand-checked wording is a whole message with no placeholder; a mined one a template. The index's weights and
    the excerpt bars decide, as for vLLM's templates, whether a piece of it says enough.

    A mined error with no category, and every message a component logs below ERROR (`quiet`), is a rival only: a
    piece it holds as well as a categorised one says nothing. A component whose quiet messages are in the index
    is `vetted`, as vLLM's own are: a piece of its errors may place a paste from prose or a title, where a piece
    of another's is read on an error line only.

    >>> entry = next(e for e in component_messages() if e["template"].startswith("the provided PTX"))
    >>> entry["component"], entry["category"]
    ('CUDA runtime', 'driver-or-cuda-mismatch')
    >>> entry = next(e for e in component_messages() if e["template"].startswith("The server socket has failed to bind"))
    >>> entry["component"], entry["category"], entry["vetted"]
    ('torch', 'port-in-use', True)
    """
    found: dict[str, dict] = {}
    for entry in (*checked_component_messages(), *mined_component_messages()):
        found.setdefault(entry["template"].lower() + (" \0quiet" if entry.get("quiet") else ""), entry)
    return tuple(found.values())


@lru_cache(maxsize=1)
def checked_component_messages() -> tuple[dict, ...]:
    """The index entries of the hand-checked wordings (component_errors.yaml, cuda_errors.yaml) with a category."""
    from .error_tables import table_entries, wordings

    vetted = {*_mined()["components"], CUDA_RUNTIME}  # the CUDA runtime logs nothing: its messages are its errors
    found: dict[str, dict] = {}
    for table in ("component_errors", "cuda_errors"):
        for entry in table_entries(table):
            category = entry.get("category")
            if not category:  # the phase or the context decides (an out-of-memory): a piece of it says nothing
                continue
            component = entry.get("component") or CUDA_RUNTIME
            for wording in wordings(entry):
                if len(words(wording)) >= 2:  # a pair at least: one word (a class name) is for the rules to match
                    found.setdefault(wording.lower(), {
                        "template": wording, "category": category, "component": component,
                        "kind": entry.get("exception") or "", **({"vetted": True} if component in vetted else {})})
    return tuple(found.values())


@lru_cache(maxsize=1)
def mined_component_messages() -> tuple[dict, ...]:
    """The index entries of the messages mined from the components' source (generated/component_messages.json)."""
    out = []
    for message in _mined()["messages"]:
        if len(words(message["template"])) < 2:
            continue
        entry = {"template": message["template"], "category": message.get("category"),
                 "component": message["component"], "kind": message.get("kind") or "", "vetted": True}
        if not entry["category"]:
            entry["startup"] = False  # a rival: never placed by another release's wording or its file
        if message.get("quiet"):
            entry["quiet"] = True
        out.append(entry)
    return tuple(out)


def _mined() -> dict:
    from ..util.datafiles import load_json

    return load_json(MINED_COMPONENTS)


CUDA_RUNTIME = "CUDA runtime"


__all__ = ["CUDA_RUNTIME", "INDEX_SOURCES", "MINED_COMPONENTS", "SHIPPED_INDEX", "catalogue_index",
           "checked_component_messages", "component_messages", "mined_component_messages", "index_data",
           "other_entries", "sources_digest", "wrapper_messages"]
