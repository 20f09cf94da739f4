"""The static extraction of error messages from Python source (diagnose/authoring/release_mining/message_extraction.py),
shared by the miners of vLLM's catalogue and of the wrappers' messages, on small synthetic sources."""

from __future__ import annotations

import sys

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from diagnose.authoring.release_mining.message_extraction import find_messages  # noqa: E402
from diagnose.authoring.release_mining.message_templates import longest_literal  # noqa: E402

SOURCE = '''
import logging
logger = logging.getLogger(__name__)

class Engine:
    def start(self, tp, gpus):
        if tp > gpus:
            raise ValueError(f"tensor parallel size {tp} exceeds the {len(gpus)} GPUs")
        msg = "Model %s needs " % self.name
        msg += f"{self.gib:.1f} GiB"
        raise RuntimeError(msg)

    def check(self, path):
        assert path, "a model path is required"
        logger.error("cannot read %s: %s", path, err)
        raise OSError("{} not found in {repo}".format(path, repo=self.repo))

def parse(parser, value):
    parser.error(f"bad value {value!r:>8}")
    raise ValueError(value)  # no literal text: skipped

def schedule(collector, needed):
    collector.add("error", "auto", f"The model requires approximately {needed} GiB of VRAM.")
'''


def _found(sinks=None):
    return [(f.kind, f.function, f.template) for f in find_messages("pkg/engine.py", SOURCE, sinks)]


def test_raises_asserts_logger_errors_and_argparse_errors_become_templates():
    assert _found() == [
        ("ValueError", "Engine.start", "tensor parallel size {tp} exceeds the {len(gpus)} GPUs"),
        ("RuntimeError", "Engine.start", "Model {self.name} needs {self.gib} GiB"),
        ("AssertionError", "Engine.check", "a model path is required"),
        ("logger.error", "Engine.check", "cannot read {path}: {err}"),
        ("OSError", "Engine.check", "{path} not found in {self.repo}"),
        ("argparse.error", "parse", "bad value {value}"),
    ]


def test_a_named_sink_hands_over_the_argument_at_its_position():
    found = _found({"add": (2, "message")})
    assert ("message", "schedule", "The model requires approximately {needed} GiB of VRAM.") in found
    assert len(found) == 7


def test_the_longest_fixed_fragment_is_the_literal():
    assert longest_literal("tensor parallel size {tp} exceeds the {len(gpus)} GPUs") == "tensor parallel size"
    assert longest_literal("{x}") == ""


def test_source_that_does_not_parse_raises_syntax_error():
    with pytest.raises(SyntaxError):
        find_messages("bad.py", "def broken(:\n")


@pytest.mark.parametrize("module", ["wrapper_miner", "wrapper_coverage"])
def test_the_miners_docstring_examples_hold(module):
    import doctest
    import importlib

    failed, _tried = doctest.testmod(importlib.import_module(module))
    assert failed == 0
