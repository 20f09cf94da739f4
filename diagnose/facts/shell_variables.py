"""Shell variables a launch line expands (`vllm serve M $VLLM_ARGS`), set on an earlier line of the paste
(`export VLLM_ARGS="--max-model-len 8192 -tp 2"`, `VLLM_ARGS=… ` in a script) or in a pasted `.env` file
(`VLLM_ARGS=--max-model-len 8192 -tp 2`, the whole rest of the line, anywhere in the paste): the launch is read
with them, and a fix of a `.env` value is printed as the `.env` line.

The launch line alone names the variable, not its value; this reader takes each block's raw text after its lines
were scanned, finds the assignments of the variables that launches found so far leave unresolved, and reads
those launches again with them (the arguments stay in the variable when a fix is rendered).

>>> from diagnose.launch.parse import parse_launch
>>> from .record import Facts, LaunchCandidate
>>> facts = Facts()
>>> facts.launches.append(LaunchCandidate(2, parse_launch("vllm serve m $VLLM_ARGS"), "vllm serve m $VLLM_ARGS"))
>>> ShellVariables(facts).feed_block(b"$ export VLLM_ARGS='-tp 2'\\n$ vllm serve m $VLLM_ARGS\\n", 60, 1)
>>> facts.launches[0].launch.get("--tensor-parallel-size")
'2'
"""

from __future__ import annotations


from ..util.lazy_pattern import lazy
from .record import Facts

MAX_REMEMBERED = 64
_DOTENV_NAME = lazy(r"[A-Za-z_]\w*")
_ASSIGNMENT = lazy(r"^\s*(?:\S*[$#]\s+)?(?:export\s+)?(?P<name>[A-Za-z_]\w*)=(?P<rest>\S.*)$")


class ShellVariables:
    literals = ()  # reads whole blocks (`feed_block`)
    window = 0

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.values: dict[str, tuple[int, str]] = {}  # name → (line, value) of its latest assignment
        self.dotenv: dict[str, str] = {}  # name → value of a `.env` line (not a shell assignment: words unquoted)

    def feed_block(self, data: bytes, cut: int, first_line: int) -> None:
        wanted = {name for candidate in self.facts.launches for name in _unresolved(candidate.launch)}
        if not wanted:
            return
        text = data[:cut].decode("utf-8", "replace")
        for offset, line in enumerate(text.split("\n")):
            match = _ASSIGNMENT.match(line) if "=" in line else None
            if match and match.group("name") in wanted and len(self.values) < MAX_REMEMBERED:
                value = _assigned_value(f"{match.group('name')}={match.group('rest')}")
                if value is not None:
                    self.values[match.group("name")] = (first_line + offset, value)
                if (dotenv := _dotenv_value(line)) is not None:  # a shell's assignment later than the launch too
                    self.dotenv[match.group("name")] = dotenv
        for candidate in self.facts.launches:
            names = _unresolved(candidate.launch)
            found = [(n, self.values[n][1]) for n in names if n in self.values and self.values[n][0] < candidate.line]
            from_file = [(n, self.dotenv[n]) for n in names if n in self.dotenv and n not in dict(found)]
            if found or from_file:
                from ..launch.parse import expand_variables

                candidate.launch.env = [*found, *from_file, *candidate.launch.env]
                candidate.launch.dotenv = [*candidate.launch.dotenv, *(n for n, _v in from_file)]
                expand_variables(candidate.launch)


def _unresolved(launch) -> list[str]:
    """The variables a launch uses as whole words for its model or arguments, with no value in its environment."""
    from ..launch.wrapped import variable_named

    known = {name for name, _value in launch.env}
    words = [a.spelled for a in launch.args if a.value is None and a.via_env is None] + [launch.model or ""]
    return [name for word in words if (name := variable_named(word)) and name not in known]


def _dotenv_value(line: str) -> str | None:
    """The value of a `.env` line as compose reads it: the rest of the line, one pair of quotes around it removed;
    None for a line that is no `.env` line (indented, a prompt, `export`, a command after the value).

    >>> _dotenv_value("VLLM_ARGS=--max-model-len 8192 -tp 2"), _dotenv_value("A='x y'"), _dotenv_value("$ A=b c")
    ('--max-model-len 8192 -tp 2', 'x y', None)
    """
    name, _, value = line.rstrip().partition("=")
    if not _DOTENV_NAME.fullmatch(name) or "vllm serve" in value:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value.split(" #", 1)[0].strip()


def _assigned_value(assignment: str) -> str | None:
    """The value a shell gives `NAME=…` (quotes removed); None for a line that is no single assignment."""
    from ..launch.shell_words import tokenize

    tokens = tokenize(assignment)
    if not tokens or "=" not in tokens[0].value or (len(tokens) > 1 and tokens[1].raw not in (";", "&&")):
        return None
    return tokens[0].value.split("=", 1)[1]
