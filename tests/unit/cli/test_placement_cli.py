"""`ufcctl placement validate`: exit codes, JSON and text output, and malformed inputs (exit 2, one line)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from ufcctl.cli.main import cli

SNAPSHOT = Path(__file__).resolve().parents[2] / "fixtures" / "placement" / "snapshot.json"


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["placement", "validate", *args], input=stdin)


def snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


def item(doc: dict, kind: str, name: str) -> dict:
    return next(obj for obj in doc["items"] if obj["kind"] == kind and obj["metadata"]["name"] == name)


def write(tmp_path: Path, name: str, content: str | bytes | dict) -> str:
    path = tmp_path / name
    if isinstance(content, dict):
        content = json.dumps(content, indent=4)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def test_fixture_snapshot_is_valid() -> None:
    result = invoke(str(SNAPSHOT))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "placement valid: 0 error(s), 0 warning(s); checked 7 node(s), 9 pod(s), 6 NPU"
    )


def test_fixture_snapshot_json_output() -> None:
    result = invoke(str(SNAPSHOT), "--output", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "valid": True,
        "checked": {"nodes": 7, "pods": 9, "jobs": 6},
        "violations": [],
    }


def broken_snapshot(tmp_path: Path) -> str:
    """bert-infer moved from chips 4-7 to 3,5,6,7 (across rings); a mindspore worker lost its super pod id."""
    doc = snapshot()
    bert = item(doc, "Pod", "bert-infer-x7k2p")
    bert["metadata"]["annotations"]["huawei.com/Ascend910"] = (
        "Ascend910-3,Ascend910-5,Ascend910-6,Ascend910-7"
    )
    node = item(doc, "Node", "a3sp-node-02")
    node["metadata"]["annotations"]["superPodID"] = "-1"
    doc["items"] = [
        obj for obj in doc["items"] if obj["metadata"]["name"] != "mindx-dl-deviceinfo-a3sp-node-02"
    ]
    return write(tmp_path, "broken.json", doc)


def test_violations_exit_1_and_text_groups_by_job(tmp_path: Path) -> None:
    result = invoke(broken_snapshot(tmp_path))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("placement INVALID: 2 error(s), 0 warning(s)")
    bert = lines.index("job default/bert-infer")
    mindspore = lines.index("job train/mindspore-a3")
    assert (
        "HCCS_RING" in lines[bert + 1] and "pod default/bert-infer-x7k2p node a1-node-01" in lines[bert + 1]
    )
    assert "SUPERPOD_SPLIT" in lines[mindspore + 1] and "node a3sp-node-02" in lines[mindspore + 1]


def test_violation_json_shape(tmp_path: Path) -> None:
    result = invoke(broken_snapshot(tmp_path), "-o", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["valid"] is False
    first = report["violations"][0]
    assert set(first) == {"code", "severity", "job", "pod", "node", "message"}
    assert (first["code"], first["severity"], first["job"], first["pod"], first["node"]) == (
        "HCCS_RING",
        "error",
        "default/bert-infer",
        "default/bert-infer-x7k2p",
        "a1-node-01",
    )


def test_yaml_multi_document_gives_the_same_report(tmp_path: Path) -> None:
    doc = snapshot()
    path = write(tmp_path, "snap.yaml", yaml.safe_dump_all(doc["items"]))
    assert invoke(path, "-o", "json").stdout == invoke(str(SNAPSHOT), "-o", "json").stdout


def test_objects_split_over_several_files_and_stdin(tmp_path: Path) -> None:
    doc = snapshot()
    nodes = [obj for obj in doc["items"] if obj["kind"] == "Node"]
    rest = [obj for obj in doc["items"] if obj["kind"] != "Node"]
    first = write(
        tmp_path, "nodes.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes})
    )
    result = invoke(
        first, "-", "-o", "json", stdin=json.dumps({"kind": "List", "apiVersion": "v1", "items": rest})
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checked"] == {"nodes": 7, "pods": 9, "jobs": 6}


ACJOB = """\
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: llama
  labels: {framework: pytorch, tor-affinity: %s}
spec:
  replicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector: {accelerator-type: module-910b-16}
          containers: [{name: ascend, image: x, resources: {requests: {huawei.com/Ascend910: %d}}}]
    Worker:
      replicas: 3
      template:
        spec:
          nodeSelector: {accelerator-type: module-910b-16}
          containers: [{name: ascend, image: x, resources: {requests: {huawei.com/Ascend910: %d}}}]
"""


@pytest.mark.parametrize(
    ("tor", "chips", "code", "expected"),
    [
        pytest.param("normal-schema", 12, 0, [], id="valid-job-file"),
        pytest.param("normal-schema", 9, 1, ["CHIP_COUNT", "CHIP_COUNT"], id="nine-chips-on-910b-16"),
        pytest.param("large", 16, 1, ["TOR_LABEL"], id="bad-tor-label"),
    ],
)
def test_job_file_alone_gets_request_rules(
    tmp_path: Path, tor: str, chips: int, code: int, expected: list
) -> None:
    result = invoke(write(tmp_path, "job.yaml", ACJOB % (tor, chips, chips)), "-o", "json")
    assert result.exit_code == code, result.output
    assert [v["code"] for v in json.loads(result.stdout)["violations"]] == expected


def test_node_unknown_is_a_warning_exit_0(tmp_path: Path) -> None:
    doc = snapshot()
    doc["items"] = [obj for obj in doc["items"] if obj["metadata"]["name"] != "a1-node-01"]
    result = invoke(write(tmp_path, "s.json", doc))
    assert result.exit_code == 0, result.output
    assert "0 error(s), 1 warning(s)" in result.stdout
    assert "warning NODE_UNKNOWN" in result.stdout


def test_super_pod_size_option(tmp_path: Path) -> None:
    job = ACJOB.replace("module-910b-16", "module-a3-16-super-pod") % ("null", 16, 16)
    job = job.replace("  labels:", "  annotations: {sp-block: '64'}\n  labels:")
    path = write(tmp_path, "sp.yaml", job)
    assert invoke(path).exit_code == 0
    result = invoke(path, "--super-pod-size", "2", "-o", "json")
    assert result.exit_code == 1
    assert [v["code"] for v in json.loads(result.stdout)["violations"]] == ["SP_BLOCK"]


def _pod_with(change: str) -> dict:
    doc = snapshot()
    pod = item(doc, "Pod", "pytorch-910b-worker-0")
    if change == "request-object":
        pod["spec"]["containers"][0]["resources"]["requests"]["huawei.com/Ascend910"] = {"value": 8}
    elif change == "no-name":
        del pod["metadata"]["name"]
    elif change == "rank-word":
        pod["metadata"]["annotations"]["hccl/rankIndex"] = "one"
    elif change == "containers-string":
        pod["spec"]["containers"] = "ascend"
    return doc


MALFORMED = [
    # (file name, content, expected text in the single Error line)
    pytest.param("t.json", SNAPSHOT.read_text()[:20000], "t.json: not valid JSON: ", id="truncated-json"),
    pytest.param(
        "t.json",
        '{"kind": "List", "items": [}',
        "t.json: not valid JSON: Expecting value at line 1",
        id="json-syntax",
    ),
    pytest.param("t.yaml", "kind: Pod\nmetadata: {name: [x\n", "t.yaml: not valid YAML: ", id="yaml-syntax"),
    pytest.param("t.yaml", "42\n", "t.yaml: document 1: not a Kubernetes object (got int)", id="yaml-scalar"),
    pytest.param(
        "t.json", "[1, 2]", "t.json: document 1: not a Kubernetes object (got a list)", id="json-array"
    ),
    pytest.param(
        "t.json",
        '{"apiVersion": "v1", "items": []}',
        "t.json: document 1: not a Kubernetes object (no `kind`)",
        id="missing-kind",
    ),
    pytest.param("t.bin", b"\xff\xfe\x00garbage", "t.bin: not UTF-8 text", id="binary"),
    pytest.param(
        "t.json",
        _pod_with("request-object"),
        "t.json: Pod default/pytorch-910b-worker-0: spec.containers[0].resources.requests"
        "[huawei.com/Ascend910] must be an integer, got a mapping",
        id="request-is-an-object",
    ),
    pytest.param("t.json", _pod_with("no-name"), "t.json: Pod at document 1 items[", id="pod-without-name"),
    pytest.param(
        "t.json",
        _pod_with("rank-word"),
        "t.json: Pod default/pytorch-910b-worker-0: annotation hccl/rankIndex must be an integer, got 'one'",
        id="rank-index-word",
    ),
    pytest.param(
        "t.json",
        _pod_with("containers-string"),
        "t.json: Pod default/pytorch-910b-worker-0: spec.containers must be a list, got a string",
        id="containers-a-string",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), MALFORMED)
def test_malformed_input_exits_2_with_one_line(
    tmp_path: Path, name: str, content: object, message: str
) -> None:
    path = write(tmp_path, name, content)  # type: ignore[arg-type]
    result = invoke(path)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"Error: {tmp_path}/")
    assert message in errors[0], errors[0]
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), "only a clean exit, never an uncaught exception"
    assert result.stdout == ""


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = invoke(str(tmp_path / "nope.json"))
    assert result.exit_code == 2
    assert f"Error: {tmp_path}/nope.json: no such file" in result.stderr


def test_console_script_passes_exit_codes_through(tmp_path: Path) -> None:
    """The installed `ufcctl` entry point (not only CliRunner) exits 0 / 1 / 2."""
    script = Path(sys.executable).parent / "ufcctl"
    if not script.exists():
        pytest.skip("ufcctl console script not installed in this environment")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    codes = [
        subprocess.run([str(script), "placement", "validate", path], capture_output=True, env=env).returncode
        for path in (str(SNAPSHOT), broken_snapshot(tmp_path), write(tmp_path, "x.json", "{"))
    ]
    assert codes == [0, 1, 2]


def test_malformed_list_item_is_named_by_index(tmp_path: Path) -> None:
    doc = snapshot()
    doc["items"].insert(3, copy.deepcopy(doc["items"][0]) | {"metadata": "oops"})
    result = invoke(write(tmp_path, "s.json", doc))
    assert result.exit_code == 2
    assert "s.json: Node at document 1 items[3]: metadata must be a mapping" in result.stderr
