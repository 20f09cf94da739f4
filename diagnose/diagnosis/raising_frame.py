"""The messages the innermost frame of a cut traceback raises: the catalogues say which, and their categories.

A paste cut one line before its exception line still shows the innermost frame and its code line
(`raise ValueError(`, `assert self.max_position_embeddings >= …`). When that frame is vLLM's own (or a launcher's
whose messages `data/wrapper_messages.json` holds), the catalogue lists every message raised in that function
across the releases, with its exception class: the messages of the class the code line raises are the
candidates, those that share the most words with the code line (an assert's condition names what it checks)
first. Their categories are the failures the paste most likely ends in, ahead of the start-up step's.

>>> raised_categories('File "/x/vllm/v1/worker/utils.py", line 413, in request_memory', "v1/worker/utils.py",
...                   "raise ValueError(")
['free-memory-below-utilization']
>>> raised_categories('File "/x/vllm/v1/worker/utils.py", line 413, in request_memory', "v1/worker/utils.py",
...                   "self.requested_memory = request_memory(init_snapshot)")  # a call: the raise is deeper
[]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache

from ..util.lazy_pattern import lazy

_FRAME = lazy(r'File "(?P<path>[^"]{1,400})", line \d+, in (?P<function>[\w<>.]+)')
_RAISE = lazy(r"^\s*raise\s+(?:[\w.]+\.)?(?P<kind>[A-Z]\w*)\b")
_ASSERT = lazy(r"^\s*assert\b")
_WORD = lazy(r"[a-z][a-z0-9]{2,}")
# words of the code line that say nothing of what is checked
OPENING_WORDS = 6
_CODE_WORDS = frozenset({"self", "raise", "assert", "config", "none", "not", "and", "the", "error"})

Entry = tuple[str, str, "str | None"]  # (exception class, template, category)


def raised_categories(frame_text: str, rel: str | None, code: str, prefer: tuple[str, ...] = ()) -> list[str]:
    """The categories of the messages the frame's function raises with the code line's exception class, the
    best-matching first (the most such messages, then the order of `prefer`); [] when the code line raises
    nothing, the function is in no catalogue, or most of the best matching messages have no category."""
    found = _FRAME.search(frame_text)
    kind = _kind_raised(code)
    if found is None or kind is None:
        return []
    function = found.group("function").rsplit(".", 1)[-1]
    entries = [entry for entry in _entries_of(found.group("path"), rel, function) if entry[0] == kind]
    if not entries:
        return []
    code_words = set(_WORD.findall(code.lower())) - _CODE_WORDS
    scores = [len(code_words & set(_WORD.findall(template.lower()))) for _kind, template, _category in entries]
    best = [entry for entry, score in zip(entries, scores) if score == max(scores)]
    counted = Counter(category for _kind, _template, category in best)
    if 2 * counted.pop(None, 0) > len(best):
        return []  # most messages the code line points to belong to no category: claim none
    order = {category: at for at, category in enumerate(prefer)}
    return sorted(counted, key=lambda c: (-counted[c], order.get(c, len(order)), c))  # type: ignore[arg-type]


def _kind_raised(code: str) -> str | None:
    """The exception class a code line raises (`assert` raises AssertionError), or None."""
    if _ASSERT.match(code):
        return "AssertionError"
    found = _RAISE.match(code)
    return found.group("kind") if found else None


def _entries_of(path: str, rel: str | None, function: str) -> list[Entry]:
    """The catalogue messages raised in `function` of the frame's file: vLLM's by its path in the package, a
    launcher's by the longest tail of its repository path the frame's path ends with (at least a folder and the
    file)."""
    vllm, wrappers = _tables()
    if rel is not None:
        return vllm.get((rel, function), [])
    parts = path.replace("\\", "/").split("/")
    for start in range(len(parts) - 1):
        tail = "/".join(parts[start:])
        if (tail, function) in wrappers:
            return wrappers[(tail, function)]
    return []


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[tuple[str, str], list[Entry]], dict[tuple[str, str], list[Entry]]]:
    """(vLLM's messages by (file, function), the launchers' by (each tail of their file path, function))."""
    from ..util.datafiles import load_json

    messages = load_json("vllm_messages.json")["messages"]
    known = {_opening(m["template"]): m["category"] for m in messages if m.get("category")}
    vllm: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for message in messages:
        if message.get("startup") is False:
            continue
        category = message.get("category") or known.get(_opening(message["template"]))
        for function in _functions(message):
            vllm[(message["file"], function)].append((message["kind"], message["template"], category))
    wrappers: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for message in load_json("wrapper_messages.json")["messages"]:
        parts = str(message.get("file", "")).split("/")
        category = None if message.get("wrapper_own") else message.get("category")
        for function in _functions(message):
            for start in range(len(parts) - 1):
                wrappers[("/".join(parts[start:]), function)].append((message["kind"], message["template"], category))
    return dict(vllm), dict(wrappers)


def _opening(template: str) -> str:
    """A message's opening words: one message in two releases' wordings shares them (a release left one
    variant without a category)."""
    return " ".join(_WORD.findall(template.lower())[:OPENING_WORDS])


def _functions(message: dict) -> list[str]:
    """The function names (no class) a catalogue message is raised in."""
    named = message.get("function") or []
    return [str(name).rsplit(".", 1)[-1] for name in ([named] if isinstance(named, str) else named)]


__all__ = ["raised_categories"]
