"""Long lines laid out for a terminal's width: commands folded so they still paste, quoted lines cut in the middle.

A command the terminal wraps for itself breaks mid-word, and what a person copies from the screen is then two
half-words. Folded here at flag boundaries with a shell continuation (` \\` at the end of a line), it pastes into a
shell as the same words:

>>> for line in fold_command("vllm serve /srv/m --port 8011 --max-model-len 256 --enforce-eager", 44, "$ ", "    "):
...     print(line)
$ vllm serve /srv/m --port 8011 \\
    --max-model-len 256 --enforce-eager

A quoted log line keeps its start and its end (the figures, the reason, a URL), whatever is cut:

>>> cut_middle("ValueError: To serve at least one request (256), a long middle part here, See https://x.io/a", 60)
'ValueError: To serve at least … here, See https://x.io/a'
"""

from __future__ import annotations

from ..launch.shell_words import tokenize

CONTINUATION = " \\"
ELLIPSIS = " … "


def fold_command(command: str, width: int, first: str, then: str) -> list[str] | None:
    """`command` as lines of at most `width` columns (a single segment longer than that stays whole), the first
    starting with `first`, the others with `then`; each line but the last ends with a shell continuation.

    Breaks fall only between two words, before a word that starts with `-` (an option), so an option keeps its
    value. None when the command is not one plain shell line (several lines, shell operators, words that do not
    join back into it): such a command is printed as it is.
    """
    if "\n" in command or len(first) + len(command) <= width:
        return None
    segments = _segments(command)
    if segments is None or len(segments) < 2:
        return None
    lines: list[str] = []
    current = first
    for segment in segments:
        # an option and its value on one line; apart only where together they do not fit on a line of their own
        pieces = [" ".join(segment)] if len(then) + len(" ".join(segment)) + len(CONTINUATION) <= width else segment
        if len(pieces) > 1 and current not in (first, then):
            lines.append(current + CONTINUATION)
            current = then
        for piece in pieces:
            if current in (first, then) or len(current) + 1 + len(piece) + len(CONTINUATION) <= width:
                current += ("" if current in (first, then) else " ") + piece
            else:
                lines.append(current + CONTINUATION)
                current = then + piece
    lines.append(current)
    return lines


def _segments(command: str) -> list[list[str]] | None:
    """The command's words grouped into an option and the words after it, up to the next option."""
    tokens = tokenize(command)
    if not tokens or " ".join(t.raw for t in tokens) != command or any(_is_operator(t.raw) for t in tokens):
        return None
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token.raw.startswith("-") and segments[-1]:
            segments.append([])
        segments[-1].append(token.raw)
    return segments


def _is_operator(raw: str) -> bool:
    return raw[0] in ";|&<>" or raw.startswith(("2>", "1>"))


def cut_middle(text: str, most: int) -> str:
    """`text` in at most `most` characters: its start and its end around ` … `, each cut at a space when one is near.

    The start names the error and its figures; the end holds the reason clause and any link, which a cut at the
    end would lose (`See h`).
    """
    if len(text) <= most:
        return text
    keep = max(most - len(ELLIPSIS), 2)
    tail_start = len(text) - keep // 3
    space = text.rfind(" ", tail_start - keep // 6, tail_start)  # the tail starts at a word, even a long one (a URL)
    if space >= 0:
        tail_start = space + 1
    head = text[: keep - (len(text) - tail_start)]
    space = head.rfind(" ")
    if space > len(head) * 3 // 4:
        head = head[:space]
    return head.rstrip() + ELLIPSIS + text[tail_start:].lstrip()
