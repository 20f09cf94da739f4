"""The big logs of scripts/bench.py, written deterministically from real vLLM lines (see shared/reviews/perf.md).

  month         a healthy server's month: its real start-up, then request and metrics lines in vLLM's own formats,
                a per-request error traceback every few MiB, and a CUDA OOM of the engine at the end
  month-journal the month as `journalctl` short text (`Nov 29 10:00:00 host vllm[769]: …`)
  month-docker  the month as docker json-file records;  month-jjson  the month as `journalctl -o json`
  loop          one real failing start-up restarted by systemd's Restart=always again and again, as journal text
  errors        only the real ERROR/WARNING/traceback lines of the corpus, shuffled (the densest input there is)
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/fixtures/corpus"
HEALTHY = CORPUS / "healthy/cpu-ok-startup.log"
FAILING_START = CORPUS / "reproduced/cpu-kv-cache-too-small-for-max-len.log"
JOURNAL_PREFIX = "Nov 29 {stamp} gpu-host vllm[{pid}]: "
WRITE_BYTES = 4 << 20

_REQUEST_ERROR = """\
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222] Error in preprocessing prompt inputs
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222] Traceback (most recent call last):
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 205, in create_chat_completion
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]     ) = await self._preprocess_chat(
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_engine.py", line 808, in _preprocess_chat
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]     prompt_inputs = await self._tokenize_prompt_input_async(
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_engine.py", line 436, in _validate_input
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222]     raise ValueError(
(APIServer pid=769) ERROR 11-29 {stamp} [serving_chat.py:222] ValueError: This model's maximum context length is 4096 tokens. However, you requested {asked} tokens ({prompt} in the messages, 1000 in the completion). Please reduce the length of the messages or completion.
INFO:     10.0.0.{host}:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request
"""

_ENGINE_OOM = """\
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710] Traceback (most recent call last):
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]     engine_core.run_busy_loop()
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 728, in run_busy_loop
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]     self._process_engine_step()
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 754, in _process_engine_step
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]     outputs, model_executed = self.step_fn()
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1341, in execute_model
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710]     logits = self.model.compute_logits(sample_hidden_states, None)
(EngineCore_DP0 pid=965) ERROR 11-29 {stamp} [core.py:710] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Process 965 has 78.12 GiB memory in use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
(APIServer pid=769) ERROR 11-29 {stamp} [async_llm.py:420] AsyncLLM output_handler failed.
(APIServer pid=769) ERROR 11-29 {stamp} [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
INFO:     Shutting down
INFO:     Application shutdown complete.
"""

_SYSTEMD_RESTART = """\
Nov 29 {stamp} gpu-host systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE
Nov 29 {stamp} gpu-host systemd[1]: vllm.service: Failed with result 'exit-code'.
Nov 29 {stamp} gpu-host systemd[1]: vllm.service: Scheduled restart job, restart counter is at {attempt}.
Nov 29 {stamp} gpu-host systemd[1]: Stopped vllm.service - vLLM OpenAI-compatible server.
Nov 29 {stamp} gpu-host systemd[1]: Started vllm.service - vLLM OpenAI-compatible server.
"""


def _clock(second: int) -> str:
    return f"{(second // 3600) % 24:02d}:{(second // 60) % 60:02d}:{second % 60:02d}"


def write_month(path: Path, size: int) -> None:
    """A start-up, a month of serving (request and stats lines, a request's error every few MiB), an engine OOM."""
    head = HEALTHY.read_text(encoding="utf-8").splitlines(True)
    startup = "".join(head[:next(i for i, line in enumerate(head) if "Application startup complete" in line) + 1])
    rng, second, written = random.Random(7), 0, 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(startup)
        written, block, pending = len(startup), [], 0
        next_error = written + 3_400_000
        while written + pending < size - 8192:
            second += 1
            for _ in range(rng.randint(2, 6)):
                line = (f'INFO:     10.0.{rng.randint(0, 9)}.{rng.randint(1, 254)}:{rng.randint(30000, 60000)} - '
                        f'"POST /v1/chat/completions HTTP/1.1" 200 OK\n')
                block.append(line)
                pending += len(line)
            line = (f"(APIServer pid=769) INFO 11-29 {_clock(second)} [loggers.py:123] Engine 000: Avg prompt throughput: "
                    f"{rng.uniform(0, 5000):.1f} tokens/s, Avg generation throughput: {rng.uniform(0, 900):.1f} tokens/s, "
                    f"Running: {rng.randint(0, 64)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 100):.1f}%, "
                    f"Prefix cache hit rate: {rng.uniform(0, 60):.1f}%\n")
            block.append(line)
            pending += len(line)
            if written + pending >= next_error:
                asked = rng.randint(4097, 9000)
                text = _REQUEST_ERROR.format(stamp=_clock(second), asked=asked, prompt=asked - 1000,
                                             host=rng.randint(1, 254), port=rng.randint(30000, 60000))
                block.append(text)
                pending += len(text)
                next_error += 3_400_000
            if pending >= WRITE_BYTES:
                out.write("".join(block))
                written, block, pending = written + pending, [], 0
        out.write("".join(block) + _ENGINE_OOM.format(stamp=_clock(second + 1)))


def write_loop(path: Path, size: int) -> None:
    """A failing start-up as journal text, restarted by systemd until the file reaches `size` bytes."""
    start = FAILING_START.read_text(encoding="utf-8").splitlines()
    with open(path, "w", encoding="utf-8") as out:
        written, attempt, second = 0, 0, 0
        while written < size:
            attempt += 1
            pid = 20000 + 7 * attempt
            stamp = _clock(second)
            prefix = JOURNAL_PREFIX.format(stamp=stamp, pid=pid)
            # the attempt's own pids, as a restarted process gets new ones
            text = "".join(prefix + line.replace("pid=22905", f"pid={pid}").replace("pid=23052", f"pid={pid + 3}")
                           .replace("pid=23191", f"pid={pid + 5}") + "\n" for line in start)
            text += _SYSTEMD_RESTART.format(stamp=_clock(second + 20), attempt=attempt)
            out.write(text)
            written += len(text)
            second += 25


def error_lines() -> list[str]:
    lines = [line for path in sorted(CORPUS.glob("*/*.log")) for line in path.read_text(errors="replace").splitlines(True)]
    return [line for line in lines if "ERROR" in line or "WARNING" in line or "Traceback" in line or 'File "' in line
            or "Error" in line]


def write_drawn(path: Path, lines: list[str], size: int) -> None:
    """`size` characters of lines drawn at random (a fixed seed) from `lines`."""
    rng, written = random.Random(7), 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size:
            chunk = "".join(rng.choice(lines) for _ in range(4000))
            out.write(chunk)
            written += len(chunk)


def write_errors(path: Path, size: int) -> None:
    write_drawn(path, error_lines(), size)


def write_journal_text(source: Path, path: Path) -> None:
    """`journalctl -u vllm` short text of a plain log: each line behind the journal's own prefix."""
    with open(source, encoding="utf-8", errors="replace") as lines, open(path, "w", encoding="utf-8") as out:
        block = []
        for i, line in enumerate(lines):
            block.append(JOURNAL_PREFIX.format(stamp=_clock(i // 2000), pid=769) + line)
            if len(block) >= 20000:
                out.write("".join(block))
                block = []
        out.write("".join(block))


def write_envelope(source: Path, path: Path, kind: str) -> None:
    """The plain log `source` as docker json-file records or `journalctl -o json` records."""
    dumps = json.JSONEncoder(ensure_ascii=True).encode
    with open(source, encoding="utf-8", errors="replace") as lines, open(path, "w", encoding="utf-8") as out:
        block = []
        for i, line in enumerate(lines):
            if kind == "docker":
                record = {"log": line, "stream": "stderr", "time": f"2025-11-29T10:00:00.{i % 10**9:09d}Z"}
            else:
                record = {"__CURSOR": f"s=1;i={i:x}", "__REALTIME_TIMESTAMP": str(1764410400000000 + i), "PRIORITY": "6",
                          "_SYSTEMD_UNIT": "vllm.service", "_PID": "769", "MESSAGE": line.rstrip("\n")}
            block.append(dumps(record) + "\n")
            if len(block) >= 20000:
                out.write("".join(block))
                block = []
        out.write("".join(block))
