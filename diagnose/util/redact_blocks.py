"""Secrets written as a YAML block under a secret's key: `password:` then `  - value` lines, `token: |` then lines.

`redact` masks a line at a time, and a line `password:` holds no value to mask: the value is the block of lines
indented under it. Here a line that ends in a key the secret table names (`is_secret_name`), with nothing after
its colon but a block indicator (`|`, `>-`), masks the lines of its block: those indented deeper than the key, and
a list's `- ` items at the key's own column. The key is the line's whole content (`  - token:`), or follows a
message's `: ` or a log header's end (`RuntimeError: bad config: password:`, `INFO [loader.py:10] hf_token:`),
whose block is what is indented under the line. Each masked
line keeps its indentation and `- ` marker; a blank line inside the block stays blank. A non-secret key's block
(`args:`, `env:`) is left as it is.

The lines are masked as they are read (`BlockMasker`, on the input's blocks: the value never reaches the scanner,
the evidence or any output), and again wherever `redact` sees several lines at once. At most `yaml_block_lines`
(data/secrets.yaml) lines are masked per block: a longer block is no secret's value (a `token:` line cannot blank
out a whole log), and the lines past the budget are read as ordinary lines again. Each line is looked at once or
twice: linear in the text, whatever it holds.

>>> print(mask_yaml_blocks("password:\\n  - Hunter2\\n  - Other3\\nport: 8000\\nargs:\\n  - --model"))
password:
  - [REDACTED]
  - [REDACTED]
port: 8000
args:
  - --model
>>> print(mask_yaml_blocks("hf_token: |\\n    hf_abcdef\\n\\n    second\\nnext: 1"))
hf_token: |
    [REDACTED]
<BLANKLINE>
    [REDACTED]
next: 1
>>> print(mask_yaml_blocks("secretKeyRef:\\n  name: hf-token-secret\\n  key: token"))  # a reference, no value
secretKeyRef:
  name: hf-token-secret
  key: token
>>> BlockMasker().block(b"ERROR x: bad config: api_key:\\n  - k1\\nINFO next\\n")
b'ERROR x: bad config: api_key:\\n  - [REDACTED]\\nINFO next\\n'
"""

from __future__ import annotations

from functools import lru_cache

from .lazy_pattern import lazy
from .redact_names import MASK, is_placeholder, is_secret_name

# what the text before a message's last word ends with: a message's `: `, a log header's `[file.py:12] `, a
# `name | ` column, Python logging's ` - ` (the key must still be all that follows: `Invalid token:` is no key)
_HEADER_ENDS = (": ", "] ", "| ", " - ")
_KEY_TEXT = r"(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)"
_KEY = lazy(_KEY_TEXT)
_INDICATOR = lazy(r"[ \t]{1,8}[|>][1-9+-]{0,2}")
_LEAD = lazy(r"[ \t]{0,256}")
_DASHES = lazy(r"(?:-[ \t]{1,8}){1,8}")
_MAPPING = lazy(_KEY_TEXT + r":(?:[ \t]|$)")  # a key and its colon: the line is a mapping's entry
# a newline after what a key line ends with (a colon, a block indicator, a colon and a blank): found in C, since the
# search starts with the newline itself; only such lines of a stream are decoded and looked at
_KEY_END = lazy(rb"\n(?:(?<=[:|>+\-]\n)|(?<=: \n))")


@lru_cache(maxsize=1)
def _budget() -> int:
    from .datafiles import load_yaml

    return int(load_yaml("secrets.yaml")["yaml_block_lines"])


class BlockMasker:
    """Masks the blocks under secret keys across consecutive lines, fed one line (or one block of lines) at a time."""

    def __init__(self) -> None:
        self.column: int | None = None  # the column a line must reach to be in the open block; None: no block
        self.taken = 0
        self.scalar = False  # the open block is a block scalar (`|`, `>-`): its lines are text, never keys

    def line(self, line: str) -> str:
        """`line` (without its newline) as shown: masked when it is in a secret key's block."""
        if self.column is not None:
            body = line.rstrip("\r")
            if not body.strip():
                return line
            lead = len(_LEAD.match(body).group(0))  # type: ignore[union-attr]
            dashes = _DASHES.match(body, lead)
            ends = lead < self.column or (lead == self.column and dashes is None)
            start = dashes.end() if dashes else lead
            rest = body[start:]
            if not ends and not self.scalar and _MAPPING.match(rest):
                ends = True  # `secretKeyRef:` then `name: …`/`key: …`: a mapping names where the secret is, holds none
            if not ends and self.taken < _budget():
                self.taken += 1
                return line if not rest or is_placeholder(rest) else body[:start] + MASK + line[len(body):]
            self.column = None
        self.column, self.taken = secret_key_column(line), 0
        self.scalar = self.column is not None and not line.rstrip().endswith(":")  # `token: |`: every line is text
        return line

    def block(self, data: bytes) -> bytes:
        """A block of whole lines (UTF-8, each ending with a newline) with the secret blocks in it masked.

        Outside a block only the lines that end like a key (`_KEY_END`: one search for newlines, in C) are decoded
        and looked at: a log's other lines cost next to nothing here."""
        out: list[bytes] = []
        done = at = 0
        while at < len(data):
            if self.column is None:
                found = _KEY_END.search(data, at)
                if found is None:
                    break
                at = data.rfind(b"\n", 0, found.start()) + 1  # the start of that line
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            line = data[at:end].decode("utf-8", "surrogateescape")
            shown = self.line(line)
            if shown is not line:
                out += [data[done:at], shown.encode("utf-8", "surrogateescape")]
                done = end
            at = end + 1
        return data if not out else b"".join(out) + data[done:]


def mask_yaml_blocks(text: str) -> str:
    """`text` (several lines) with the block under each secret key masked."""
    masked = mask_block_lines(text.split("\n"))
    return text if masked is None else "\n".join(masked)


def mask_block_lines(lines: list[str]) -> list[str] | None:
    """The lines (consecutive ones) with each secret key's block masked, or None when none was."""
    masker = BlockMasker()
    out = [masker.line(line) for line in lines]
    return out if any(a is not b for a, b in zip(out, lines)) else None


def secret_key_column(line: str) -> int | None:
    """The column a line must reach to be in the block when `line` ends in a secret key with no value, else None.

    >>> secret_key_column("  - token:"), secret_key_column("ERROR bad: hf_token: |"), secret_key_column("args:")
    (4, 1, None)
    >>> secret_key_column("INFO 01-01 [loader.py:10] password:"), secret_key_column("[x.py:1] Invalid token:")
    (1, None)
    """
    body = line.rstrip()
    if not body or len(body) > 1024 or body[-1] not in ":|>-+123456789":
        return None
    if body[-1] != ":":
        indicator = _INDICATOR.search(body, max(len(body) - 12, 0))
        if indicator is None or indicator.end() != len(body):
            return None
        body = body[:indicator.start()]
    if not body.endswith(":"):
        return None
    body = body[:-1].rstrip(" \t")
    lead = len(_LEAD.match(body).group(0))  # type: ignore[union-attr]
    dashes = _DASHES.match(body, lead)
    start = dashes.end() if dashes else lead
    key = _KEY.fullmatch(body, start)
    if key is not None:  # the line is the key: its block is indented under the key itself
        return start if is_secret_name(key.group("key")) else None
    cut = max((body.rfind(sep) + len(sep) for sep in _HEADER_ENDS if sep in body), default=-1)
    key = _KEY.fullmatch(body, cut) if cut > 0 else None
    if key is None or not is_secret_name(key.group("key")):
        return None
    return lead + 1  # a message's last word: its block is what is indented under the line


__all__ = ["BlockMasker", "mask_block_lines", "mask_yaml_blocks", "secret_key_column"]
