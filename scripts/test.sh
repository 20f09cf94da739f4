#!/usr/bin/env bash
# The test command the README gives and CI runs: install everything the tests use, then run them.
# Real parts where users have real parts: a CPU build of vLLM (verify), journal files (hook).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | { grep -v "^WARNING: Location" || true; }
# The build backend, so tests/test_wheel.py can build the wheel and run `vdiag rules test` from a fresh venv.
.venv/bin/pip install -q --disable-pip-version-check hatchling 2>&1 | { grep -v "^WARNING: Location" || true; }
# The optional Hyperscan prefilter: the suite runs the pure-Python engine and compares the two when this is present.
.venv/bin/pip install -q --disable-pip-version-check -e '.[accel]' >/dev/null 2>&1 || echo "note: hyperscan not installable here; the accelerator comparison test will be skipped"
# The gates, before anything slow: lint and types (rule set and mypy's allow-list: pyproject.toml).
.venv/bin/ruff check || { echo "gate failed: ruff check found the problems above (rules: [tool.ruff.lint] in pyproject.toml; many fix with .venv/bin/ruff check --fix)" >&2; exit 1; }
.venv/bin/mypy || { echo "gate failed: mypy found the type errors above in modules its allow-list does not skip (fix them; the list in pyproject.toml only shrinks)" >&2; exit 1; }
if ! [ -x /usr/lib/systemd/systemd-journal-remote ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -qq systemd-journal-remote >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq systemd-journal-remote >/dev/null 2>&1; }) || echo "note: systemd-journal-remote not installed; hook tests on real journal files will be skipped"
fi
if [ "${VDIAG_SKIP_VLLM:-0}" != 1 ]; then
  bash scripts/setup_vllm_cpu.sh
fi
exec .venv/bin/python -m pytest "$@"
