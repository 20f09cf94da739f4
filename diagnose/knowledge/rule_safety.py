"""What makes a rule file unsafe to load, checked before anything expensive happens.

- YAML: anchors and aliases are counted on the composed node graph (which
  shares aliased nodes, so composing is cheap) before the document is
  constructed; too many aliases, a recursive alias or an expanded size that
  explodes (billion laughs) is refused.
- Regex: parsed (not compiled) first. A repeat bound over `MAX_REPEAT_BOUND`,
  or nested bounds whose product exceeds `MAX_REPEAT_PRODUCT` (the regex
  engine expands them in memory: `a{4294967294}` takes tens of GB), is
  refused; so are the shapes that backtrack catastrophically inside an
  unbounded repeat: a nested unbounded repeat `(a+)+`, a body that can match
  nothing `(a?)*`, alternatives that can start with the same character
  `(ab|a.)+`, or an optional part that can also start what follows it,
  `(x|xx)+` (which the parser reads as `(xx?)+`).
  Alternatives of single characters reach us merged into one class (the
  parser does that), so `(a|a)+` is caught only by lint's timed adversarial
  lines, which user rules also run at load.

>>> regex_problem(r"(x|xx)+y")
'regex can backtrack catastrophically: an optional part of a repeated group can also start what follows it, e.g. (x|xx)+'
>>> regex_problem(r"a{4294967294}")
'regex repeat bound 4294967294 is over 5000 (the regex engine expands it in memory)'
>>> regex_problem(r"argument (?:-\\w+/)?(?P<flag>--[\\w-]+): invalid choice: .(?P<value>[^'\\"]*)") is None
True
"""

from __future__ import annotations

from typing import Any

from ..util.lazy_pattern import lazy

try:
    import re._parser as sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

MAX_REPEAT_BOUND = 5000
MAX_REPEAT_PRODUCT = 20000
MAX_ALIASES = 50
MAX_EXPANDED_NODES = 20000

_UNBOUNDED = sre_parse.MAXREPEAT
_OTHER = 256  # any character beyond Latin-1
_ALL = frozenset(range(257))
_DIGITS = frozenset(range(48, 58)) | {_OTHER}
_WORD = frozenset(c for c in range(256) if chr(c).isalnum() or c == 95) | {_OTHER}
_SPACE = frozenset(c for c in range(256) if chr(c).isspace()) | {_OTHER}
_CATEGORIES = {"CATEGORY_DIGIT": _DIGITS, "CATEGORY_NOT_DIGIT": _ALL - (_DIGITS - {_OTHER}),
               "CATEGORY_WORD": _WORD, "CATEGORY_NOT_WORD": _ALL - (_WORD - {_OTHER}),
               "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": _ALL - (_SPACE - {_OTHER})}
_TEXT_BOUND = lazy(r"(?<!\\)\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


# ---------------------------------------------------------------- YAML

def yaml_alias_problem(node: Any) -> tuple[int, str] | None:
    """(line, message) when a composed YAML document uses aliases too much or explodes when expanded."""
    memo: dict[int, int] = {}
    seen: set[int] = set()
    aliases = 0
    stack: set[int] = set()

    def size(current, depth: int = 0) -> int:
        nonlocal aliases
        key = id(current)
        if key in stack:
            raise _Refused(current, "a recursive YAML alias (a node that contains itself)")
        if key in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _Refused(current, f"over {MAX_ALIASES} YAML aliases; rule files need none")
            return memo[key]
        seen.add(key)
        total = 1
        value = getattr(current, "value", None)
        if isinstance(value, list):
            stack.add(key)
            for item in value:
                for child in (item if isinstance(item, tuple) else (item,)):
                    total += size(child, depth + 1)
                    if total > MAX_EXPANDED_NODES:
                        raise _Refused(current, f"the document expands to over {MAX_EXPANDED_NODES} YAML nodes "
                                                "through aliases (billion-laughs shape)")
            stack.discard(key)
        memo[key] = total
        return total

    try:
        size(node)
    except _Refused as refused:
        mark = getattr(refused.node, "start_mark", None)
        return (mark.line + 1 if mark is not None else 0), refused.message
    except RecursionError:
        return 0, "the YAML document nests too deeply"
    return None


class _Refused(Exception):
    def __init__(self, node: Any, message: str):
        super().__init__(message)
        self.node = node
        self.message = message


# ---------------------------------------------------------------- regex

def regex_problem(pattern: str) -> str | None:
    """Why the pattern is unsafe to compile or to run on untrusted lines; None when it is safe."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # regex-module syntax the stdlib parser lacks: check the bounds in the text
        return _text_bound_problem(pattern)
    bound = _bound_problem(list(parsed), 1)
    if bound:
        return bound
    shape = _shape_problem(list(parsed))
    return f"regex can backtrack catastrophically: {shape}" if shape else None


def _text_bound_problem(pattern: str) -> str | None:
    for match in _TEXT_BOUND.finditer(pattern):
        for number in match.groups():
            if number and int(number) > MAX_REPEAT_BOUND:
                return f"regex repeat bound {int(number)} is over {MAX_REPEAT_BOUND} (the regex engine expands it in memory)"
    return None


def _children(op: str, av: Any) -> list[list]:
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return [list(av[2])]
    if op == "SUBPATTERN":
        return [list(av[-1])]
    if op == "ATOMIC_GROUP":
        return [list(av)]
    if op in ("ASSERT", "ASSERT_NOT"):
        return [list(av[1])]
    if op == "BRANCH":
        return [list(b) for b in av[1]]
    if op == "GROUPREF_EXISTS":
        return [list(b) for b in av[1:] if b is not None]
    return []


def _bound_problem(items: list, product: int) -> str | None:
    for op, av in items:
        name = str(op)
        inner = product
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            for number in (av[0], av[1]):
                if number != _UNBOUNDED and number > MAX_REPEAT_BOUND:
                    return f"regex repeat bound {number} is over {MAX_REPEAT_BOUND} (the regex engine expands it in memory)"
            inner = product * max(1, av[1] if av[1] != _UNBOUNDED else av[0])
            if inner > MAX_REPEAT_PRODUCT:
                return f"nested regex repeat bounds multiply to over {MAX_REPEAT_PRODUCT} (the regex engine expands them in memory)"
        for child in _children(name, av):
            found = _bound_problem(child, inner)
            if found:
                return found
    return None


def _fold(chars: set[int]) -> frozenset[int]:
    return frozenset(chars | {ord(chr(c).swapcase()) for c in chars if c < 256 and chr(c).isalpha()
                              and len(chr(c).swapcase()) == 1 and ord(chr(c).swapcase()) < 256})


def _first_of_set(av: list) -> frozenset[int]:
    chars: set[int] = set()
    negate = False
    for op, value in av:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(value)
        elif name == "RANGE":
            chars.update(range(min(value[0], _OTHER), min(value[1], _OTHER - 1) + 1))
            if value[1] >= _OTHER:
                chars.add(_OTHER)
        elif name == "CATEGORY":
            chars.update(_CATEGORIES.get(str(value), _ALL))
        else:
            chars.update(_ALL)
    folded = _fold(chars)
    return (_ALL - folded) | {_OTHER} if negate else folded


def _overlap(one: frozenset[int], other: frozenset[int]) -> bool:
    """Whether two first-sets share a character (`_OTHER` stands for some characters beyond Latin-1, not all)."""
    if (one & other) - {_OTHER}:
        return True
    return (_OTHER in other and any(c > _OTHER for c in one)) or (_OTHER in one and any(c > _OTHER for c in other))


def _first(items: list) -> tuple[frozenset[int], bool]:
    """The characters a sequence can start with, and whether it can match the empty string."""
    found: set[int] = set()
    for op, av in items:
        chars, nullable = _first_item(str(op), av)
        found |= chars
        if not nullable:
            return frozenset(found), False
    return frozenset(found), True


def _first_item(name: str, av: Any) -> tuple[frozenset[int], bool]:
    if name == "LITERAL":
        return _fold({av}), False
    if name == "NOT_LITERAL":
        return _ALL - _fold({av}), False
    if name == "ANY":
        return _ALL - {10}, False
    if name == "IN":
        return _first_of_set(av), False
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        chars, nullable = _first(list(av[2]))
        return chars, nullable or av[0] == 0
    if name in ("SUBPATTERN", "ATOMIC_GROUP"):
        return _first(_children(name, av)[0])
    if name in ("BRANCH", "GROUPREF_EXISTS"):
        parts = [_first(b) for b in _children(name, av)]
        nullable = any(n for _, n in parts) or (name == "GROUPREF_EXISTS" and av[2] is None)
        return frozenset().union(*(c for c, _ in parts)), nullable
    if name in ("AT", "ASSERT", "ASSERT_NOT"):
        return frozenset(), True
    return _ALL, True  # a back-reference, or something unknown: assume the worst


def _contains_unbounded(items: list) -> bool:
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT") and av[1] == _UNBOUNDED:
            return True
        if any(_contains_unbounded(child) for child in _children(name, av) if name not in ("ASSERT", "ASSERT_NOT")):
            return True
    return False


def _shape_problem(items: list) -> str | None:
    previous_wild = False
    for op, av in items:
        name = str(op)
        wild = False
        if name in ("MAX_REPEAT", "MIN_REPEAT") and av[1] == _UNBOUNDED:
            body = list(av[2])
            if _contains_unbounded(body):
                return "a repeated group that itself contains an unbounded repeat, e.g. (a+)+"
            first, nullable = _first(body)
            if nullable:
                return "a repeated group that can match the empty string, e.g. (a?)*"
            found = _ambiguity(body, first)
            if found:
                return found
            wild = len(body) == 1 and str(body[0][0]) == "ANY"
            if wild and previous_wild:
                return "two adjacent unbounded wildcards (.*.*)"
        previous_wild = wild
        for child in _children(name, av):
            found = _shape_problem(child)
            if found:
                return found
    return None


def _ambiguity(items: list, follow: frozenset[int]) -> str | None:
    """Inside an unbounded repeat: parts that give the engine two ways to match the same text."""
    for index, (op, av) in enumerate(items):
        name = str(op)
        rest, rest_nullable = _first(items[index + 1:])
        after = rest | follow if rest_nullable else rest
        chars, nullable = _first_item(name, av)
        if nullable and _overlap(chars, after):
            return "an optional part of a repeated group can also start what follows it, e.g. (x|xx)+"
        if name == "BRANCH":
            seen: set[int] = set()
            for branch in av[1]:
                branch_chars, _ = _first(list(branch))
                if _overlap(branch_chars, frozenset(seen)):
                    return "alternatives in a repeated group that can start with the same character, e.g. (ab|a.)+"
                seen |= branch_chars
        inner_follow = after | chars if name in ("MAX_REPEAT", "MIN_REPEAT") and av[1] > 1 else after
        for child in _children(name, av):
            if name in ("ASSERT", "ASSERT_NOT"):
                continue
            found = _ambiguity(child, inner_follow)
            if found:
                return found
    return None
