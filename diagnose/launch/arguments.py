"""vLLM's arguments read from shell words, as argparse sees them, and whether an image's entrypoint serves.

The one reader of `--flag value` words every launch form shares (a command line, a container's args, Helm values'
extraArgs, KServe's args).

>>> from .shell_words import tokenize
>>> launch = Launch(form="vllm-serve")
>>> parse_vllm_args(tokenize("m --max-model-len=4096 --enforce-eager -tp 2"), launch, positional_model=True)
>>> launch.model, [(a.spelled, a.value) for a in launch.args]
('m', [('--max-model-len', '4096'), ('--enforce-eager', None), ('-tp', '2')])
"""

from __future__ import annotations

import re

from .launch import SHELL_OPERATORS, Arg, Launch, Token, is_switch


def _split_tail(tokens: list[Token]) -> tuple[list[Token], list[str]]:
    for index, token in enumerate(tokens):
        if token.raw in SHELL_OPERATORS or token.raw.startswith(("&>", "2>", ">", "|", ";", "#")):
            return tokens[:index], [t.raw for t in tokens[index:]]
    return tokens, []


def parse_vllm_args(tokens: list[Token], launch: Launch, positional_model: bool) -> None:
    tokens, launch.tail = _split_tail(tokens)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        word = token.value
        if looks_like_option(word):
            if "=" in word and word.startswith("--"):
                name, value = word.split("=", 1)
                raw_value = token.raw.split("=", 1)[1] if "=" in token.raw else value
                arg = Arg(name, value, equals=True, raw_value=raw_value)
                i += 1
            elif is_switch(word) or i + 1 >= len(tokens) or looks_like_option(tokens[i + 1].value):
                arg = Arg(word, None)
                i += 1
            else:
                arg = Arg(word, tokens[i + 1].value, raw_value=tokens[i + 1].raw)
                i += 2
            if arg.flag == "--model" and arg.value is not None:
                launch.model = arg.value
            launch.args.append(arg)
        else:
            if positional_model and launch.model is None and not launch.model_positional:
                launch.model = word
                launch.model_positional = True
            elif _starts_prose(word):
                # a sentence after the command on its line ("vllm serve m crashed: ValueError: …"), not arguments
                launch.tail = [t.raw for t in tokens[i:]] + launch.tail
                return
            else:
                launch.args.append(Arg(word, None))
            i += 1


def _starts_prose(word: str) -> bool:
    """A bare word no command line holds: one that ends a clause (`crashed:`) or names a Python exception.

    >>> _starts_prose("crashed:"), _starts_prose("ValueError:"), _starts_prose("/models/m"), _starts_prose("auto")
    (True, True, False, False)
    """
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z]{1,30}:|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception):?", word))


def looks_like_option(word: str) -> bool:
    """As argparse sees it: '-x…' is an option, '-' and negative numbers are values."""
    return word.startswith("-") and word != "-" and not _is_number(word)


def _is_number(word: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", word))


def entrypoint_serves(image: str | None) -> bool:
    """Whether the image's entrypoint already runs the OpenAI server (`entrypoint_images` in flags.yaml)."""
    from .launch import flag_table

    name = (image or "").strip("'\"").split("@", 1)[0].rsplit(":", 1)[0]
    return any(name == known or name.endswith("/" + known) for known in flag_table().get("entrypoint_images") or [])
