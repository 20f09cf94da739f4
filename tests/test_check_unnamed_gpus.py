"""vdiag check: a snapshot that lists its GPUs without their names still says how many there are."""

from __future__ import annotations

import json

from diagnose.check.command import CheckOptions, check_launch
from diagnose.context.host import SealedHost


def check(tmp_path, launch: str, count: int) -> dict:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"schema": 1, "source": "test", "processes": [],
                                "devices": [{"index": i} for i in range(count)]}))
    report, _code = check_launch(CheckOptions(launch, snapshot_path=str(path), vllm_version="0.9.2", host=SealedHost()))
    return report


def findings(report: dict, name: str) -> list[tuple[str, str | None]]:
    return [(f["outcome"], f.get("category")) for f in report["check"]["findings"] if f["check"] == name]


def test_more_workers_than_unnamed_gpus_fails(tmp_path):
    report = check(tmp_path, "vllm serve Qwen/Qwen2.5-7B-Instruct --pipeline-parallel-size 2", 1)
    assert findings(report, "gpu-count") == [("fail", "tp-exceeds-gpus")]


def test_as_many_unnamed_gpus_as_workers_passes(tmp_path):
    report = check(tmp_path, "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2", 2)
    assert findings(report, "gpu-count") == [("pass", None)]


def test_a_ray_launch_over_several_nodes_is_only_a_risk(tmp_path):
    launch = "vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 4 --distributed-executor-backend ray"
    assert findings(check(tmp_path, launch, 2), "gpu-count") == [("risk", "tp-exceeds-gpus")]
