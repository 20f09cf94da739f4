"""The messages of the programs that launch vLLM, mined from their source (scripts/wrapper_miner.py), placed by
the rules of scripts/wrapper_categories.yaml (scripts/wrapper_rules.py) and shipped as
diagnose/data/wrapper_messages.json."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from diagnose.authoring.release_mining.message_categories import load_category_rules, taxonomy_ids
from diagnose.knowledge.error_tables import template_pattern

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from build_message_catalogue import RULES_FILE as VLLM_RULES_FILE  # noqa: E402
from build_wrapper_messages import VllmWordings, records  # noqa: E402
from wrapper_miner import FolderTree, GitTree, load_sources, mine  # noqa: E402
from wrapper_rules import load_wrapper_rules, place  # noqa: E402

TABLE = json.loads((ROOT / "diagnose" / "data" / "wrapper_messages.json").read_text())
KNOWN = taxonomy_ids()

SOURCES = """
wrappers:
  demo:
    name: Demo
    repository: o/demo
    refs: [HEAD, v1]
    skip_functions: ['^generate$']
    scope:
      - file: demo/serve.py
      - file: 'demo/**/*.py'
        text: vllm|gpu
        sinks: {report: [1, message]}
        variables: [event_msg]
"""

SERVE = '''
def start(tp, gpus):
    if tp > gpus:
        raise ValueError(f"vLLM needs {tp} GPUs but the pool has {gpus}")

def generate(prompt):
    raise RuntimeError("generation failed for this request")
'''
TRAIN = '''
def train(ui, need):
    raise ValueError("the learning rate must be positive")
    raise ValueError("the vllm_mode option must be server or colocate")
    ui.report("info", f"The model requires approximately {need} GiB of GPU memory.")
    event_msg = f"The largest worker has {need} GiB allocatable on its GPU."
'''


@pytest.fixture
def demo(tmp_path):
    path = tmp_path / "sources.yaml"
    path.write_text(SOURCES)
    return load_sources(path)[0]


def test_the_miner_keeps_the_messages_of_the_files_and_words_in_scope(demo):
    head = FolderTree.from_files({"demo/serve.py": SERVE, "demo/sub/train.py": TRAIN,
                                  "demo/tests/test_serve.py": 'raise ValueError("vLLM test fixture error text")'})
    head.label = "HEAD"
    mined = {m.template: m for m in mine(demo, [head])}
    assert sorted(mined) == [
        "The largest worker has {need} GiB allocatable on its GPU.",
        "The model requires approximately {need} GiB of GPU memory.",
        "the vllm_mode option must be server or colocate",
        "vLLM needs {tp} GPUs but the pool has {gpus}",
    ]
    assert mined["The model requires approximately {need} GiB of GPU memory."].kind == "message"
    assert mined["vLLM needs {tp} GPUs but the pool has {gpus}"].function == "start"


def test_a_message_in_several_refs_keeps_the_newest_file_and_lists_every_ref(demo):
    head = FolderTree.from_files({"demo/serve.py": SERVE})
    head.label = "HEAD"
    old = FolderTree.from_files({"demo/old/serve.py": SERVE.replace("GPUs but", "GPUs, but")
                                 + 'def start2():\n    raise ValueError("vLLM needs {tp} GPUs but the pool has {gpus}")\n'})
    old.label = "v1"
    mined = {m.template: m for m in mine(demo, [head, old])}
    assert mined["vLLM needs {tp} GPUs but the pool has {gpus}"].refs == ["HEAD", "v1"]
    assert mined["vLLM needs {tp} GPUs but the pool has {gpus}"].file == "demo/serve.py"
    assert mined["vLLM needs {tp} GPUs, but the pool has {gpus}"].refs == ["v1"]


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_a_bare_mirror_is_read_at_a_ref_without_a_work_tree(tmp_path, demo):
    work = tmp_path / "work"
    (work / "demo").mkdir(parents=True)
    (work / "demo" / "serve.py").write_text(SERVE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        subprocess.run([*git, *args], cwd=work, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "mirror")], check=True)
    tree = GitTree(tmp_path / "mirror", "HEAD")
    assert re.fullmatch(r"[0-9a-f]{40}", tree.commit)
    assert [m.template for m in mine(demo, [tree])] == ["vLLM needs {tp} GPUs but the pool has {gpus}"]


RULES = """
rules:
  - drop: wraps another error
    text: ': \\{e\\}$'
  - category: tp-exceeds-gpus
    wrapper: demo
    text: needs .* GPUs
  - vllm_rules: true
  - own: a check of its own options
    wrapper: demo
"""


def _rules(tmp_path, text=RULES):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return load_wrapper_rules(path, KNOWN, {"demo"})


def test_the_first_rule_that_matches_places_a_message(tmp_path):
    rules, vllm = _rules(tmp_path), [r for r in load_category_rules(VLLM_RULES_FILE)[0] if r.text_only]

    def where(template):
        found = place(rules, vllm, "demo", template, "demo/serve.py", "start", "ValueError")
        return found and (found.category or f"own: {found.means}")

    assert where("vLLM needs {tp} GPUs but the pool has {gpus}") == "tp-exceeds-gpus"
    assert where("Failed to start the engine: {e}") is None
    assert where("vLLM is not installed. Please install it with `pip install vllm`.") == "broken-install"
    assert where("the vllm_mode option must be server or colocate") == "own: a check of its own options"


@pytest.mark.parametrize("text, complaint", [
    ("rules:\n  - category: no-such-category\n    text: x\n", "not a taxonomy id"),
    ("rules:\n  - own: x\n    category: tp-exceeds-gpus\n    text: x\n", "needs one of"),
    ("rules:\n  - own: means something\n", "needs at least one condition"),
    ("rules:\n  - own: x\n    wrapper: nobody\n", "unknown wrapper"),
])
def test_a_malformed_rule_is_refused_by_name(tmp_path, text, complaint):
    with pytest.raises(ValueError, match=complaint):
        _rules(tmp_path, text)


def test_a_wrappers_copy_of_a_vllm_message_is_left_to_vllms_catalogue(demo, tmp_path):
    vllm = VllmWordings(["Model architectures {architectures} are not supported for now. Supported architectures: "
                         "{ModelRegistry.get_supported_archs()}"])
    head = FolderTree.from_files({"demo/serve.py": '''
def load(archs, names):
    raise ValueError(f"Model architectures {archs} are not supported for now. Supported architectures: {names}")
    raise ValueError(f"vLLM needs {archs} GPUs but the pool has {names}")
'''})
    counts = Counter()
    kept = records(demo, mine(demo, [head]), _rules(tmp_path), [], vllm, counts)
    assert [r["template"] for r in kept] == ["vLLM needs {archs} GPUs but the pool has {names}"]
    assert counts == {"the same as one of vLLM's own": 1}


# --- the generated table ---------------------------------------------------------------------------------------


def test_the_table_records_the_commit_read_for_every_wrapper():
    assert set(TABLE["wrappers"]) >= {"gpustack", "llamafactory", "kserve", "trl", "verl", "vllm-ascend", "vllm-omni",
                                      "xinference", "ms-swift", "nemo-rl", "openrlhf", "unsloth"}
    for name in TABLE["wrappers"].values():
        line = next(h for h in TABLE["header"] if h.startswith(f"{name} ("))
        assert re.search(r"HEAD = [0-9a-f]{12}", line), line


def test_every_message_has_a_category_or_is_the_wrappers_own_with_what_it_means():
    assert 100 < len(TABLE["messages"]) < 1000
    for message in TABLE["messages"]:
        assert message["wrapper"] in TABLE["wrappers"]
        assert ("category" in message) != bool(message.get("wrapper_own")), message
        if message.get("wrapper_own"):
            assert len(message["means"]) > 20, message
        else:
            assert message["category"] in KNOWN, message
        assert template_pattern(message["template"]) is not None
