"""A URL cut out of a log line bounded by URL syntax (RFC 3986): no sentence punctuation after it, no word glued on.

A pattern that takes `\\S+` after "for url:" keeps the full stop that ends the sentence (`…/config.json.`), and a
line whose space was lost (redaction, a terminal's wrap) glues the next word on (`http://0.0.0.0:8000.(APIServer`).
A URL holds only RFC 3986's characters; a `(` or `[` it opens and never closes is not its own, nor is a `.`, `,`,
`;`, `:`, `!`, `?`, a quote or an unbalanced `)`/`]` at its end.

>>> bound_url("https://huggingface.co/m/resolve/main/config.json.")
'https://huggingface.co/m/resolve/main/config.json'
>>> bound_url("http://0.0.0.0:8000.(APIServer"), bound_url("http://h/x),"), bound_url("https://w.org/A_(b)")
('http://0.0.0.0:8000', 'http://h/x', 'https://w.org/A_(b)')
>>> bound_url("http://h:8000/v1”"), bound_url("see the docs")
('http://h:8000/v1', 'see the docs')
"""

from __future__ import annotations

from .lazy_pattern import lazy

_SCHEME = lazy(r"^[A-Za-z][A-Za-z0-9+.-]{0,20}://")
_URL_CHARS = lazy(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
_TRAILING = ".,;:!?'\""
_PAIRS = {")": "(", "]": "["}


def bound_url(text: str) -> str:
    """`text` cut to the URL it starts with; text that starts with no `scheme://` is returned as it is."""
    if not _SCHEME.match(text):
        return text
    url = _URL_CHARS.match(text).group(0)  # type: ignore[union-attr]
    url = _cut_unclosed(url)
    while url and (url[-1] in _TRAILING or (url[-1] in _PAIRS and url.count(url[-1]) > url.count(_PAIRS[url[-1]]))):
        url = url[:-1]
    return url


def _cut_unclosed(url: str) -> str:
    """`url` up to its first `(` or `[` that no later `)` or `]` closes."""
    for opening, closing in (("(", ")"), ("[", "]")):
        depth, start = 0, None
        for i, char in enumerate(url):
            if char == opening:
                depth, start = depth + 1, i if depth == 0 else start
            elif char == closing and depth:
                depth -= 1
        if depth and start is not None:
            url = url[:start]
    return url


def bound_captures(captures: dict[str, str]) -> dict[str, str]:
    """Captures with each URL (a `url`/`…_url` capture, or one word that starts as a URL) bounded by URL syntax.

    >>> bound_captures({"url": "http://h/x.", "why": "http://h/x. is down", "path": "/x."})
    {'url': 'http://h/x', 'why': 'http://h/x. is down', 'path': '/x.'}
    """
    return {key: bound_url(value) if key == "url" or key.endswith("_url") or not any(c.isspace() for c in value)
            else value for key, value in captures.items()}


__all__ = ["bound_captures", "bound_url"]
