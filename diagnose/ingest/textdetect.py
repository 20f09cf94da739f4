"""Tell text from binary, and turn the text encodings logs really come in into UTF-8.

- A run of NUL bytes at the start (a log rotated with `copytruncate` while
  the writer kept its offset) is skipped.
- UTF-16 (LE or BE, with or without a byte-order mark) is recognised by its
  BOM or by NULs interleaved with ASCII, and decoded.
- Binary data is recognised by its share of control bytes, NULs and invalid
  UTF-8 in a sample, not by the mere presence of a NUL.

>>> looks_binary(b"INFO 05-22 10:00:00 engine started\\n")
False
>>> looks_binary(bytes(range(256)) * 4)
True
>>> _utf16_kind("ab".encode("utf-16-le"), leading_nuls=0)
'utf-16-le'
"""

from __future__ import annotations

import codecs
import io
from typing import BinaryIO

SAMPLE_BYTES = 4096
READ_BYTES = 1 << 16
_TEXT_CONTROL = frozenset(b"\t\n\r\x1b\x0c\x08\x07\x0b")
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def looks_binary(sample: bytes) -> bool:
    """True when a sample is not text: over 1 % NULs or odd control bytes, or over 10 % invalid UTF-8."""
    window = sample[:SAMPLE_BYTES]
    if not window:
        return False
    size = len(window)
    if window.count(0) > max(4, size // 100):
        return True
    odd = sum(1 for b in window if b < 32 and b not in _TEXT_CONTROL) + window.count(0x7F)
    if odd > max(4, size // 100):
        return True
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    text = decoder.decode(window, final=len(sample) <= SAMPLE_BYTES)
    invalid = sum(1 for c in text if "\udc80" <= c <= "\udcff")
    return invalid > max(8, size // 10)


def _utf16_kind(sample: bytes, leading_nuls: int) -> str | None:
    """'utf-16-le'/'utf-16-be' when NULs sit at every other byte of the sample (ASCII in UTF-16), else None.

    The sample starts after the leading NUL run; an odd run means the NULs
    were the high bytes of big-endian text.
    """
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    odd = sample[1::2].count(0)
    even = sample[0::2].count(0)
    if odd >= pairs * 0.3 and even <= pairs * 0.02:
        return "utf-16-be" if leading_nuls % 2 else "utf-16-le"
    return None


class _Prefixed(io.RawIOBase):
    """Bytes already read, then the rest of the stream."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0 or size >= len(self._head):
                head, self._head = self._head, b""
                return head
            head, self._head = self._head[:size], self._head[size:]
            return head
        return self._rest.read(size)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Transcoded(io.RawIOBase):
    """A stream in another encoding, read as UTF-8 (undecodable bytes replaced)."""

    def __init__(self, stream: BinaryIO, encoding: str):
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder(encoding)("replace")
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._pending and not self._done:
            chunk = self._stream.read(READ_BYTES)
            if not chunk:
                self._done = True
                text = self._decoder.decode(b"", final=True)
            else:
                text = self._decoder.decode(chunk)
            self._pending = text.encode("utf-8", "replace")
        if size is None or size < 0:
            data, self._pending = self._pending, b""
        else:
            data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def as_utf8(stream: BinaryIO) -> tuple[BinaryIO, str | None]:
    """The stream without its leading NUL run, decoded to UTF-8 when it is UTF-16; and the encoding found (None: as is)."""
    leading = 0
    head = b""
    while True:
        chunk = stream.read(READ_BYTES)
        if not chunk:
            break
        stripped = chunk.lstrip(b"\x00") if not head else chunk
        leading += len(chunk) - len(stripped)
        head += stripped
        if len(head) >= SAMPLE_BYTES:
            break
    encoding = None
    for bom, name in _BOMS:
        if head.startswith(bom):
            head, encoding = head[len(bom):], name
            break
    else:
        encoding = _utf16_kind(head[:SAMPLE_BYTES], leading)
        if encoding == "utf-16-be":
            head = b"\x00" + head
    rest = _Prefixed(head, stream)
    if encoding in (None, "utf-8"):  # read as it comes: the reader asks for blocks of a MiB, no buffer is needed
        return rest, None if encoding is None else encoding
    return io.BufferedReader(_Transcoded(rest, encoding), buffer_size=READ_BYTES), encoding
