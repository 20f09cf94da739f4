"""Checks every signature must pass before it ships or loads: ASCII literals, safe and non-empty regexes, bounded time on adversarial lines."""

from __future__ import annotations

from .rules import Signature

ERROR_LINE_CHARS = 300  # the most of an error line that an error-lines signature ever sees (facts/unexplained.py)

ADVERSARIAL = [
    "a" * 5000,
    " " * 5000 + "!",
    "(" * 2000,
    "Error: " + "x " * 3000,
    "ValueError: " + "1," * 3000,
    "(" + "a=1, " * 1500,
    "GiB " * 2000,
    "\t" * 3000 + "ERROR",
]


def signature_problems(sig: Signature, timed: bool = True) -> list[str]:
    """What is wrong with one signature; `timed` also runs it on adversarial lines (0.2 s each at most).

    Unsafe bounds are found before compiling (compiling `a{4294967294}` alone takes tens of GB).
    """
    import regex

    from .rule_safety import regex_problem

    problems = []
    for literal in sig.literals:
        if not literal.isascii():
            problems.append(f"literal {literal!r} is not ASCII (the prefilter lower-cases ASCII only)")
    unsafe = regex_problem(sig.regex)
    if unsafe and not unsafe.startswith("regex can backtrack"):
        return [*problems, unsafe]
    try:
        compiled = regex.compile(sig.regex, regex.V0)
    except regex.error as exc:
        return [*problems, f"invalid regex: {exc}"]
    if compiled.search("") is not None:
        problems.append("regex matches the empty string")
    if unsafe:
        return [*problems, unsafe]
    if timed:
        for text in ADVERSARIAL:
            if sig.scope == "error-lines":
                text = text[:ERROR_LINE_CHARS]
            try:
                compiled.search(text, timeout=0.2)
            except TimeoutError:
                problems.append(f"regex took over 0.2 s on an adversarial line ({text[:20]!r}…)")
                break
    return problems
