"""roles/k8s_manifests' kubectl module: a label call that changed nothing is not a change.

Real kubectl prints `node/x labeled` when it patched and `node/x not labeled` when the node already
had the labels; the second contains " labeled" too, which made every rerun of deploy report a change
(found by the lab's real kubectl against the API stand-in: the second deploy changed 1 task).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
kubectl = load_file(ROOT / "roles" / "k8s_manifests" / "library" / "ufcctl_kubectl.py")


class FakeModule:
    """What label() uses of AnsibleModule: params, check_mode, run_command and fail_json."""

    def __init__(self, outputs: list[str]) -> None:
        calls = [["label", "nodes", "--overwrite", f"n{i}", "k=v"] for i in range(len(outputs))]
        self.params = {"kubectl": "kubectl", "kubeconfig": "/etc/kubernetes/admin.conf", "label_args": calls}
        self.check_mode = False
        self.outputs = list(outputs)

    def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
        return 0, self.outputs.pop(0), ""

    def fail_json(self, **kw: Any) -> None:
        raise AssertionError(kw)


@pytest.mark.parametrize(("outputs", "changed", "labelled"), [
    (["node/n1 not labeled\nnode/n2 not labeled\n"], False, 0),
    (["node/n1 not labeled\nnode/n2 labeled\n"], True, 1),
    (["node/n1 labeled\n", "node/n3 not labeled\n"], True, 1),
    (["node/n1 labeled\n", "node/n3 labeled\n"], True, 2),
])
def test_only_calls_that_patched_a_node_count_as_changes(outputs: list[str], changed: bool,
                                                         labelled: int) -> None:
    result = kubectl.label(FakeModule(outputs))
    assert result == {"changed": changed, "labelled": labelled}
