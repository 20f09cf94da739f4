"""Start-up pays only for what the run uses: no pattern compiled at import, no schema or YAML library on a warm cache,
no Hyperscan for a small log, and a Hyperscan database loaded from its own serialized form when it is needed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.scan import prefilter
from diagnose.util import datafiles
from diagnose.util.lazy_pattern import lazy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "kv-cache-too-small.log"
# at the 300-line limit, and not on the diagnose path (`vdiag verify` only)
COMPILED_AT_IMPORT_ALLOWED = {"diagnose.verify.argv"}

_MODULES_AFTER_A_RUN = """
import json, sys
sys.argv = ["vdiag", "--no-gpu", "--format", sys.argv[1], sys.argv[2]]
code = 0
try:
    from diagnose.cli.main import main
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules_after_a_run(tmp_path: Path, fmt: str, log: Path, **env: str) -> set[str]:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    child_env = {k: v for k, v in os.environ.items() if k != "VDIAG_NO_ACCEL"}
    child_env.update(VDIAG_CACHE_DIR=str(cache), **env)
    modules = set()
    for _ in range(2):  # the first run fills the cache, the second is the warm start measured
        proc = subprocess.run([sys.executable, "-c", _MODULES_AFTER_A_RUN, fmt, str(log)], env=child_env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        run = json.loads(proc.stderr.strip().splitlines()[-1])
        assert run["exit"] == 1  # a diagnosis
        modules = set(run["modules"])
    return modules


@pytest.mark.parametrize("fmt", ["json", "text"])  # off a terminal, text is written without rich too
def test_a_warm_diagnosis_imports_no_schema_yaml_or_terminal_library(tmp_path, fmt):
    heavy = ("jsonschema", "yaml", "rich")
    modules = _modules_after_a_run(tmp_path, fmt, EXAMPLE)
    assert "diagnose.diagnosis.pipeline" in modules  # the run happened
    assert set(heavy) & modules == set(), "imported on the plain diagnose path"


# a crash log with no command line in it, read from a plain file, with --no-gpu
PLAIN = ROOT / "tests" / "fixtures" / "corpus" / "reproduced" / "cpu-kv-cache-too-small-for-max-len.log"
ONLY_WHEN_READ = {"gzip": "a compressed input", "diagnose.gpu.snapshot": "a GPU snapshot",
                  "diagnose.launch.parse": "a command line", "diagnose.launch.kubernetes": "a pod spec",
                  "diagnose.launch.service_units": "a systemd unit", "diagnose.knowledge.vocabulary": "rules loaded without the cache",
                  "diagnose.knowledge.rule_safety": "rules loaded without the cache"}


def test_a_warm_diagnosis_imports_only_what_its_input_needs(tmp_path):
    modules = _modules_after_a_run(tmp_path, "json", PLAIN)
    assert "diagnose.diagnosis.pipeline" in modules
    assert {name: ONLY_WHEN_READ[name] for name in set(ONLY_WHEN_READ) & modules} == {}
    assert "diagnose.launch.parse" in _modules_after_a_run(tmp_path, "json", EXAMPLE)  # a log with a command line


def test_a_small_log_is_scanned_without_importing_hyperscan(tmp_path):
    modules = _modules_after_a_run(tmp_path, "json", EXAMPLE)
    assert "ahocorasick_rs" in modules
    assert "hyperscan" not in modules


_IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, re
import diagnose
from diagnose.util.lazy_pattern import LazyPattern

def patterns(value, depth=0):
    if isinstance(value, (LazyPattern, re.Pattern)):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple, set, frozenset, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from patterns(item, depth + 1)

names = [m.name for m in pkgutil.walk_packages(diagnose.__path__, "diagnose.") if not m.name.endswith("__main__")]
modules = [importlib.import_module(name) for name in names]
report = {}
for module in modules:
    found = [p for key, value in vars(module).items() if not key.startswith("__") for p in patterns(value)]
    lazies = [p for p in found if isinstance(p, LazyPattern)]
    report[module.__name__] = {"lazy": len(lazies), "compiled_lazy": sum(p._compiled is not None for p in lazies),
                               "compiled": len(found) - len(lazies)}
print(json.dumps(report))
"""


def test_importing_every_module_compiles_none_of_their_patterns():
    proc = subprocess.run([sys.executable, "-c", _IMPORT_EVERY_MODULE], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert sum(entry["lazy"] for entry in report.values()) > 100  # the walk found the modules' patterns
    assert {name for name, entry in report.items() if entry["compiled_lazy"]} == set()
    assert {name for name, entry in report.items() if entry["compiled"]} <= COMPILED_AT_IMPORT_ALLOWED


def test_a_lazy_pattern_answers_like_the_compiled_one_and_compiles_once():
    pattern = lazy(r"(?P<size>\d+(?:\.\d+)?) GiB", re.IGNORECASE)
    assert pattern.pattern == r"(?P<size>\d+(?:\.\d+)?) GiB"
    assert pattern._compiled is None  # reading the source does not compile it
    compiled = re.compile(r"(?P<size>\d+(?:\.\d+)?) GiB", re.IGNORECASE)
    text = "took 12.5 gib, then 3 GiB"
    assert pattern.search(text).group("size") == compiled.search(text).group("size") == "12.5"
    assert pattern.findall(text) == compiled.findall(text)
    assert pattern.sub("X", text) == compiled.sub("X", text)
    assert pattern.flags == compiled.flags and pattern.groupindex == compiled.groupindex
    assert pattern.compiled() is pattern.compiled()


def test_a_lazy_bytes_pattern_with_the_regex_engine():
    regex = pytest.importorskip("regex")
    pattern = lazy(rb"pid=(\d+)", engine=regex)
    assert pattern.search(b"(Worker pid=42)").group(1) == b"42"
    assert isinstance(pattern.compiled(), regex.Pattern)


# ---------------------------------------------------------------- the binary cache and the Hyperscan database

@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv("VDIAG_CACHE_DIR", str(directory))
    return directory


def test_a_binary_value_comes_back_only_as_written(cache):
    datafiles.write_cached("blob", b"\x00payload", binary=True)
    assert datafiles.read_cached("blob", binary=True) == b"\x00payload"
    path = cache / "blob.bin"
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 1
    path.write_bytes(bytes(damaged))
    assert datafiles.read_cached("blob", binary=True) is None
    path.write_bytes(b"short")
    assert datafiles.read_cached("blob", binary=True) is None


LITERALS = ("tried to allocate", "out of memory", "mib", "kv cache")
BLOCK = b"INFO ok\nCUDA out of memory. Tried to allocate 20.00 MiB\nnext line\nthe KV cache is small\n"


class _CountingDatabase:
    """hyperscan.Database that counts compiles (what a cache hit must not do)."""

    compiles = 0

    def __init__(self, real):
        self.real = real

    def __call__(self, *args, **kwargs):
        _CountingDatabase.compiles += 1
        return self.real(*args, **kwargs)


@pytest.fixture
def hyperscan(monkeypatch):
    module = pytest.importorskip("hyperscan")
    _CountingDatabase.compiles = 0
    monkeypatch.setattr(module, "Database", _CountingDatabase(module.Database))
    return module


def _expected() -> dict[int, set[str]]:
    return prefilter.AhoCorasickFinder(LITERALS).candidates(BLOCK, len(BLOCK))


def test_the_hyperscan_database_is_compiled_once_and_then_loaded(cache, hyperscan):
    assert prefilter.HyperscanFinder(LITERALS).candidates(BLOCK, len(BLOCK)) == _expected()
    assert _CountingDatabase.compiles == 1
    assert len(list(cache.glob("hyperscan-*.bin"))) == 1
    # the same literals in another order (a set's order changes with every process) hit the same cache entry
    assert prefilter.HyperscanFinder(tuple(reversed(LITERALS))).candidates(BLOCK, len(BLOCK)) == _expected()
    assert _CountingDatabase.compiles == 1
    assert len(list(cache.glob("hyperscan-*.bin"))) == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped byte", "valid digest, foreign bytes"])
def test_a_damaged_hyperscan_cache_is_compiled_again(cache, hyperscan, damage):
    prefilter.HyperscanFinder(LITERALS)
    (path,) = cache.glob("hyperscan-*.bin")
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(len(good)))
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "flipped byte":
        path.write_bytes(good[:-100] + bytes([good[-100] ^ 0x40]) + good[-99:])
    else:  # passes the digest, fails Hyperscan's own checks
        datafiles.write_cached(path.stem, b"not a hyperscan database", binary=True)
    assert prefilter.HyperscanFinder(LITERALS).candidates(BLOCK, len(BLOCK)) == _expected()
    assert _CountingDatabase.compiles == 2
    assert path.read_bytes() == good  # compiled again, and written back whole


def test_a_hyperscan_cache_in_a_folder_others_can_write_is_not_used(cache, hyperscan):
    prefilter.HyperscanFinder(LITERALS)
    cache.chmod(0o777)
    try:
        assert prefilter.HyperscanFinder(LITERALS).candidates(BLOCK, len(BLOCK)) == _expected()
        assert _CountingDatabase.compiles == 2  # the planted-or-not file there was not read
    finally:
        cache.chmod(0o700)


def test_the_adaptive_engine_switches_to_hyperscan_past_its_threshold(cache, hyperscan, monkeypatch):
    monkeypatch.setattr(prefilter, "ACCEL_AFTER_BYTES", 2 * len(BLOCK))
    finder = prefilter.AdaptiveFinder(LITERALS)
    seen = []
    for _ in range(4):
        assert finder.candidates(BLOCK, len(BLOCK)) == _expected()
        seen.append(finder.name)
    assert seen == ["aho-corasick", "aho-corasick", "hyperscan", "hyperscan"]


def test_the_adaptive_engine_stays_pure_without_hyperscan(monkeypatch):
    monkeypatch.setattr(prefilter, "ACCEL_AFTER_BYTES", 0)
    monkeypatch.setattr(prefilter, "HyperscanFinder", _no_hyperscan)
    finder = prefilter.AdaptiveFinder(LITERALS)
    assert finder.candidates(BLOCK, len(BLOCK)) == _expected()
    assert finder.name == "aho-corasick"


def test_the_pure_engine_is_built_for_large_inputs_past_the_threshold(monkeypatch):
    monkeypatch.setattr(prefilter, "ACCEL_AFTER_BYTES", 2 * len(BLOCK))
    finder = prefilter.AdaptiveFinder(LITERALS, accel=False)
    small = finder.engine
    for _ in range(4):
        assert finder.candidates(BLOCK, len(BLOCK)) == _expected()
    assert finder.name == "aho-corasick" and finder.engine is not small  # the DFA-built automaton


def _no_hyperscan(literals):
    raise ImportError("No module named 'hyperscan'")


# ---------------------------------------------------------------- checks that spare compiling a pattern

def _advice_lines() -> list[str]:
    """The corpus's lines, each also upper-cased, title-cased and with a long s or Kelvin sign in it (letters the
    regex engine folds into ASCII ones when ignoring case), plus the advice wordings vLLM prints."""
    lines = ["block_size (2096) must be <= max_num_batched_tokens (2048).", "Please lower max_num_seqs to at most 614",
             "try setting VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 to skip it", "please unset the `HF_HUB_OFFLINE` variable",
             "--data-parallel-multi-port-external-lb currently requires --api-server-count=1", "Try lowering --gpu-memory-utilization",
             "max_num_batched_tokens (2048) should be >= block_size (4096)", "a_b (1) has to be at least c_d (2)",
             "UNSET HF_HUB_OFFLINE", "uNſet HF_HUB_OFFLINE", "Uſe VLLM_USE_V1=0", "aſſign X", "remove TOKENIZERS_PARALLELISM"]
    for path in sorted((ROOT / "tests" / "fixtures" / "corpus").rglob("*.log")):
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    variants = []
    for line in lines:
        variants += [line, line.upper(), line.title(), line.replace("s", "ſ", 1), line.replace("k", "\u212a", 1)]
    return variants


def test_an_advice_line_skipped_by_its_word_check_is_one_its_pattern_cannot_match():
    from diagnose.fixes import advice, advice_direction

    checks = [(advice._CONSTRAINT, advice._CONSTRAINT_WORDS, False), (advice._BOUND, advice._BOUND_WORDS, False),
              (advice._ASSIGN, advice._ASSIGN_WORDS, True), (advice._UNSET, advice._UNSET_WORDS, True),
              (advice_direction._DIRECTION, advice_direction.DIRECTION_WORDS, True)]
    matched = 0
    for line in _advice_lines():
        for pattern, words, ignore_case in checks:
            if pattern.compiled().search(line):
                matched += 1
                assert advice._names_any(line, words, ignore_case), (pattern, line)
    assert matched > 100  # the lines exercised every shape, not only lines no pattern matches


# ---------------------------------------------------------------- the process's exit

def _vdiag_process(entry: str, *args: str, before: str = "") -> subprocess.CompletedProcess:
    code = f"import sys; sys.argv[0] = 'vdiag'; {before}from diagnose.cli.main import {entry}; {entry}()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_the_vdiag_process_writes_and_exits_as_main_does(fmt):
    """`process_main` may skip the interpreter's teardown after a diagnosis: the report and exit code are main's."""
    ordinary = _vdiag_process("main", "--no-gpu", "--format", fmt, str(EXAMPLE))
    fast = _vdiag_process("process_main", "--no-gpu", "--format", fmt, str(EXAMPLE))
    assert ordinary.returncode == fast.returncode == 1
    assert fast.stdout == ordinary.stdout and fast.stderr == ordinary.stderr
    assert "kv-cache-too-small-for-max-len" in fast.stdout


def test_the_vdiag_process_keeps_the_ordinary_exit_when_something_runs_at_exit():
    registered = "import atexit; atexit.register(lambda: print('ran at exit')); "
    done = _vdiag_process("process_main", "--no-gpu", "--format", "json", str(EXAMPLE), before=registered)
    assert done.returncode == 1
    assert done.stdout.rstrip().endswith("ran at exit")
    assert json.loads(done.stdout.rstrip()[: -len("ran at exit")])["diagnoses"]


def test_a_diagnosis_ends_the_vdiag_process_without_the_interpreters_teardown():
    kept = "exec('class Kept:\\n def __del__(self): print(\"torn down\")'); kept = Kept(); "  # freed only by a teardown
    ordinary = _vdiag_process("main", "--no-gpu", "--format", "json", str(EXAMPLE), before=kept)
    fast = _vdiag_process("process_main", "--no-gpu", "--format", "json", str(EXAMPLE), before=kept)
    assert ordinary.stdout.rstrip().endswith("torn down")
    assert fast.returncode == 1 and "torn down" not in fast.stdout and json.loads(fast.stdout)["diagnoses"]


def test_the_cache_keeps_the_newest_entries_of_each_kind(cache):
    import os
    for n in range(datafiles.MAX_CACHED_PER_KIND + 5):
        datafiles.write_cached(f"kind-{n:03d}", b"x", binary=True)
        os.utime(cache / f"kind-{n:03d}.bin", (n, n))  # written in this order, a second apart
    datafiles.write_cached("other-1", {"a": 1})
    kept = sorted(path.name for path in cache.glob("kind-*"))
    assert len(kept) == datafiles.MAX_CACHED_PER_KIND and kept[0] == "kind-005.bin"
    assert datafiles.read_cached("other-1") == {"a": 1}


# ---------------------------------------------------------------- the data files' JSON copies

def test_no_data_file_copy_is_committed_only_the_wheel_makes_them():
    """One copy of each fact: the YAML is committed, its JSON copy is made by the wheel's build hook
    (tests/test_wheel.py checks the wheel has one per YAML, made from its text); git ignores local ones."""
    assert "diagnose/data/*.yaml.json" in (ROOT / ".gitignore").read_text().splitlines()
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "*.yaml.json"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert tracked.returncode == 0 and tracked.stdout == ""


def test_a_data_file_is_read_from_its_copy_only_while_the_copy_matches_its_text(tmp_path, cache, monkeypatch):
    import hashlib

    monkeypatch.setattr(datafiles, "DATA_DIR", tmp_path)
    source = tmp_path / "table.yaml"
    source.write_text("answer: 42\n")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    (tmp_path / "table.yaml.json").write_text(json.dumps({"sha256": digest, "data": {"answer": "from the copy"}}))
    load = datafiles.load_yaml.__wrapped__  # without the per-process memo
    assert load("table.yaml") == {"answer": "from the copy"}
    source.write_text("answer: 43\n")  # edited after its copy was made: read as edited
    assert load("table.yaml") == {"answer": 43}
    (tmp_path / "table.yaml.json").write_text("not JSON")
    assert load("table.yaml") == {"answer": 43}
