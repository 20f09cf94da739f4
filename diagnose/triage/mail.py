"""E-mail tickets: the subject without its reply prefixes, the newest message without the quoted history.

>>> clean_subject("Re: AW: RE: Fwd: vLLM startet nicht")
'vLLM startet nicht'
>>> clean_subject("回复: Re: 启动失败")
'启动失败'
>>> latest_message("Still broken, see attached.\\n\\nOn Mon, 3 Mar 2025 Bob wrote:\\n> older text\\n")
'Still broken, see attached.'
"""

from __future__ import annotations

import codecs
import email
import email.message
import email.feedparser
import email.policy
import re

from ..util.datafiles import load_yaml
from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular

ATTACHMENT_SUFFIXES = (".txt", ".log", ".md")
MAX_EMAIL_BYTES = 64 << 20  # the most of an .eml read; the parser takes a message cut short as it is
MAX_HEADER_CHARS = 8192  # of a header's raw value parsed: a real one is a line or a few, never a document
MAX_NESTED_PARTS = 64  # multipart and message/* parts read; Python's e-mail parser recurses once per nesting level
# parts the parser makes (the message itself included): its time and memory grow with them (200,000 siblings took a
# minute and 212 MB), whatever the boundary is spelt; a ticket has a few
MAX_PARTS = 1024
_FEED_BYTES = 4096  # fed to the parser at a time: it stops within one such piece past MAX_PARTS (a part takes 4 bytes)
# A part's Content-Type that holds other parts, its header possibly folded over several lines.
_CONTAINER_PART = lazy(rb"^content-type:(?:[ \t]|\r?\n[ \t])*(?:multipart|message)/", re.IGNORECASE | re.MULTILINE)
_REPLY_PREFIX = lazy(r"^\s*(?:(?:re|fwd?|aw|wg|antw|sv|vs|tr)\s*(?:\[\d+\])?\s*[:：]|(?:回复|答复|转发)\s*[:：])\s*",
                     re.IGNORECASE)
# Where the quoted history of a reply begins, in the mail clients' own wordings (English, German, Chinese).
_HISTORY_START = lazy(
    r"^(?:On .{1,200} wrote:\s*$|Am .{1,200} schrieb .{0,200}:\s*$|在 .{1,200}写道[:：]\s*$|"
    r"-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|原始邮件)\s*-{2,}|From: .{1,200}$|Von: .{1,200}$)",
    re.MULTILINE)


class _BoundedHeaders(email.policy.EmailPolicy):
    """policy.default, but a header is parsed from at most MAX_HEADER_CHARS of its raw value: Python's header
    parser takes time quadratic in a header's words (a 1.5 MB Subject of 20,000 encoded words took 40 s, a
    Content-Type of 50,000 parameters 37 s)."""

    def header_fetch_parse(self, name, value):
        if isinstance(value, str) and len(value) > MAX_HEADER_CHARS:
            value = value[:MAX_HEADER_CHARS]
        return super().header_fetch_parse(name, value)


_POLICY = _BoundedHeaders()


def clean_subject(subject: str | None) -> str | None:
    """The subject without any run of Re:/Fwd:/AW:/WG:/回复: prefixes."""
    if not subject:
        return None
    text = " ".join(str(subject).split())
    while True:
        shorter = _REPLY_PREFIX.sub("", text, count=1)
        if shorter == text:
            return text or None
        text = shorter


def latest_message(body: str) -> str:
    """The newest message of a reply: up to where the quoted history starts, '>' lines dropped."""
    start = _HISTORY_START.search(body)
    if start:
        body = body[: start.start()]
    kept = [line for line in body.splitlines() if not line.lstrip().startswith(">")]
    return "\n".join(kept).strip()


def read_eml(path: str) -> tuple[str | None, str, list[str]]:
    """An e-mail's clean subject and its text: each text/plain part's newest message, plus attached .log/.txt files;
    and notes on what was left unread (past MAX_EMAIL_BYTES, parts nested deeper than MAX_NESTED_PARTS, or past
    MAX_PARTS parts)."""
    try:
        with open_regular(path, "e-mail file") as handle:
            data = handle.read(MAX_EMAIL_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    notes = []
    if len(data) > MAX_EMAIL_BYTES:
        data = data[:MAX_EMAIL_BYTES]
        notes.append(f"the e-mail is longer than {MAX_EMAIL_BYTES >> 20} MiB: the rest was not read")
    data, nested = _within_nesting(data)
    if nested:
        notes.append(f"the e-mail nests more than {MAX_NESTED_PARTS} multipart parts: the parts from the "
                     f"{MAX_NESTED_PARTS + 1}th on were not read")
    try:
        message, many = _parsed_within_parts(data)
        parts = _texts(message)
    except RecursionError:  # nesting the count above did not see (it reads only the raw headers)
        raise InputError(f"{path}: the e-mail is nested too deeply to read") from None
    if many:
        notes.append(f"the e-mail has more than {MAX_PARTS} parts: the parts from the {MAX_PARTS + 1}th on were not read")
    if not parts:
        raise InputError(f"{path}: the e-mail has no text/plain part to diagnose")
    return clean_subject(message.get("subject")), "\n".join(parts), [f"{note}, so this answer may be partial" for note in notes]



def _within_nesting(data: bytes) -> tuple[bytes, bool]:
    """The raw message up to its (MAX_NESTED_PARTS + 1)th part that holds other parts, and whether it was cut there.

    >>> _within_nesting(b"Content-Type: multipart/mixed; boundary=a\\n\\n--a\\n" * (MAX_NESTED_PARTS + 5))[1]
    True
    """
    count = 0
    for found in _CONTAINER_PART.finditer(data):
        count += 1
        if count > MAX_NESTED_PARTS:
            return data[:found.start()], True
    return data, False


def _parsed_within_parts(data: bytes) -> tuple[email.message.Message, bool]:
    """The message parsed up to its MAX_PARTS-th part (within one fed piece), and whether parts were left unread.

    The parser itself counts the parts, so every spelling of a boundary (`--b`, `---b`, `-- b`) counts alike.

    >>> wide = b"Content-Type: multipart/mixed; boundary=-b\\n\\n" + b"---b\\n\\nx\\n" * (MAX_PARTS * 3)
    >>> message, cut = _parsed_within_parts(wide)
    >>> cut, MAX_PARTS <= len(message.get_payload()) <= MAX_PARTS + _FEED_BYTES // 4
    (True, True)
    """
    made = [0]

    def counted(policy=_POLICY):
        made[0] += 1
        return email.message.EmailMessage(policy=policy)

    parser = email.feedparser.BytesFeedParser(counted, policy=_POLICY)
    made[0] = 0  # the parser calls the factory once to learn its signature
    for start in range(0, len(data), _FEED_BYTES):
        if made[0] > MAX_PARTS:
            return parser.close(), True
        parser.feed(data[start:start + _FEED_BYTES])
    return parser.close(), made[0] > MAX_PARTS


def _texts(message) -> list[str]:
    parts: list[str] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        filename = (part.get_filename() or "").lower()
        if filename.endswith(ATTACHMENT_SUFFIXES):
            parts.append(_part_text(part))
        elif part.get_content_type() == "text/plain" and not filename:
            parts.append(latest_message(_part_text(part)))
    return parts


def _part_text(part) -> str:
    payload = part.get_payload(decode=True) or b""
    try:
        return payload.decode(text_charset(part.get_content_charset()), "replace")
    except (UnicodeError, LookupError):  # a codec of the system's that still refuses these bytes
        return payload.decode("utf-8", "replace")


def text_charset(name: str | None) -> str:
    """The part's charset when it names a text encoding, else UTF-8. A codec like idna, punycode, rot13, base64,
    zlib, uu, hex or bz2 is not one: it raises on bytes it cannot take (errors="replace" or not) or turns the
    text into something else, so a ticket must not choose it.

    >>> text_charset("ISO-8859-1"), text_charset("idna"), text_charset("zlib"), text_charset("no-such"), text_charset(None)
    ('iso8859-1', 'utf-8', 'utf-8', 'utf-8', 'utf-8')
    """
    try:
        info = codecs.lookup(name or "utf-8")
    except (LookupError, ValueError, TypeError):
        return "utf-8"
    if not getattr(info, "_is_text_encoding", True) or info.name in load_yaml("charsets.yaml")["not_text"]:
        return "utf-8"
    return info.name
