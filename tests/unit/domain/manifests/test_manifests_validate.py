"""Validation of rendered manifests: every bad object gives one line naming file, object and problem."""

from __future__ import annotations

import textwrap

import pytest

from ufcctl.domain.manifests.component import NAMESPACES_FILE, prepare_component
from ufcctl.domain.manifests.objects import parse_manifest
from ufcctl.domain.manifests.order import file_order
from ufcctl.engine.k8s_schemas import KubernetesSchemas, supported_versions
from ufcctl.errors import InputError

SCHEMAS = KubernetesSchemas("1.34.4")

QUEUE_CRD = textwrap.dedent(
    """
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      scope: Namespaced
      names: {kind: Widget, plural: widgets}
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties:
                    size: {type: integer, minimum: 1}
                    port: {x-kubernetes-int-or-string: true}
                    note: {type: string, nullable: true}
                    extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
    """
)

GOOD_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {k: v}\n"


def _problems(text: str, namespaces=("ns",), crds: str = QUEUE_CRD) -> list[str]:
    # the CRD ships with another component applied earlier (preapply's CRD check is tested on its own)
    prepared = prepare_component({"f.yaml.j2": text}, namespaces, SCHEMAS, {"crd.yaml": crds},
                                 available_crds={"widgets.example.com"})
    return [str(p) for p in prepared.problems]


CASES = [
    pytest.param(GOOD_CM, [], id="good-configmap"),
    pytest.param(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\n"
        "spec: {size: 2, port: http, note: null, extra: {anything: [1]}}\n",
        [],
        id="good-custom-resource-int-or-string-nullable-open-subtree",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {k: 1}\n",
        ["f.yaml: ConfigMap/ns/a: 1 is not of type 'string', 'null' at data.k [Kubernetes 1.34]"],
        id="wrong-type",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndatas: {}\n",
        [
            "f.yaml: ConfigMap/ns/a: Additional properties are not allowed ('datas' was unexpected) "
            "at (top level) [Kubernetes 1.34]"
        ],
        id="unknown-field",
    ),
    pytest.param(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\n"
        "spec: {size: 0, colour: red}\n",
        [
            "f.yaml: Widget/ns/w: Additional properties are not allowed ('colour' was unexpected) at spec "
            "[CRD from crd.yaml] (and 1 more)"
        ],
        id="custom-resource-two-errors-one-line",
    ),
    pytest.param(
        "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w, namespace: ns}\n",
        [
            "f.yaml: Widget/ns/w: unknown kind Widget in example.com/v2: not built into Kubernetes 1.34 "
            "and no shipped CustomResourceDefinition defines it"
        ],
        id="unknown-kind-version",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        [
            "f.yaml: ConfigMap/a: metadata.namespace is missing "
            "(it would land in the kubeconfig's default namespace)"
        ],
        id="namespaced-without-namespace",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n",
        [
            "f.yaml: ConfigMap/other/a: namespace 'other' is neither created "
            "by this component nor in its namespaces"
        ],
        id="foreign-namespace",
    ),
    pytest.param(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: ns}\n",
        ["f.yaml: ClusterRole/ns/r: is cluster-scoped: remove metadata.namespace"],
        id="cluster-scoped-with-namespace",
    ),
    pytest.param(
        GOOD_CM + "---\n" + GOOD_CM,
        ["f.yaml: ConfigMap/ns/a: defined twice (first in f.yaml)"],
        id="duplicate",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ns}\n",
        ["f.yaml: ConfigMap/ns/<document 1, no metadata.name>: metadata.name is required"],
        id="no-name",
    ),
    pytest.param(
        "kind: [\n",
        ["f.yaml: not valid YAML at line 2, column 1: expected the node content, but found '<stream end>'"],
        id="bad-yaml",
    ),
    pytest.param("- a\n- b\n", ["f.yaml: <document 1>: is not a mapping (an object)"], id="not-an-object"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_problem_lines(text: str, expected: list[str]) -> None:
    assert _problems(text) == expected


def test_every_bad_object_is_reported_not_only_the_first() -> None:
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: ns}\ndata: {k: 1}\n"
    text = "---\n".join(bad % name for name in ("a", "b", "c"))
    assert [p.split(":")[1].strip() for p in _problems(text)] == [
        "ConfigMap/ns/a",
        "ConfigMap/ns/b",
        "ConfigMap/ns/c",
    ]


def test_missing_namespaces_are_generated_first() -> None:
    prepared = prepare_component(
        {"20-cm.yaml.j2": GOOD_CM, "10-x.yaml.j2": GOOD_CM.replace("name: a", "name: b")}, ["ns"], SCHEMAS
    )
    assert prepared.ok, prepared.problems
    assert prepared.order == (NAMESPACES_FILE, "10-x.yaml", "20-cm.yaml")
    assert "name: ns" in prepared.files[NAMESPACES_FILE]


def test_namespace_defined_by_a_template_is_not_generated_again() -> None:
    ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n"
    prepared = prepare_component({"50-all.yaml.j2": ns + "---\n" + GOOD_CM}, ["ns"], SCHEMAS)
    assert prepared.ok and NAMESPACES_FILE not in prepared.files


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({"b.yaml": GOOD_CM, "a.yaml": GOOD_CM}, ["a.yaml", "b.yaml"], id="by-name"),
        pytest.param({"a.yaml": GOOD_CM, "z.yaml": QUEUE_CRD}, ["z.yaml", "a.yaml"], id="crd-first"),
        pytest.param(
            {
                "a.yaml": GOOD_CM,
                "m.yaml": QUEUE_CRD,
                "z.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n",
            },
            ["z.yaml", "m.yaml", "a.yaml"],
            id="namespace-then-crd",
        ),
    ],
)
def test_file_order(files: dict[str, str], expected: list[str]) -> None:
    objects = [o for name, text in files.items() for o in parse_manifest(text, name)[0]]
    assert file_order(list(files), objects) == expected


def test_unsupported_kube_version_names_the_supported_ones() -> None:
    with pytest.raises(InputError) as err:
        KubernetesSchemas("1.12.0")
    assert "kubernetes-validate has no schemas for 1.12" in err.value.message
    assert "1.34" in (err.value.hint or "")
    # the default (1.34) and the upgrade target (1.35) both validate (pyproject: kubernetes-validate>=1.35)
    assert {(1, 34), (1, 35)} <= set(supported_versions())
