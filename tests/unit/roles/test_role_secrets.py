"""Secrets never reach logs or artifacts: a task whose output can carry one is `no_log`.

A task must be no_log when it runs a kubeadm command that prints or reads the bootstrap token or
the certificate key, or when what it prints can hold a secret value: its module arguments, its
loop items and label (Ansible puts each loop item in the item's result), a template it renders
(--diff shows it) or a set_fact value. A value is secret when its variable's name says so
(token, key, password, secret, ...) or when it is computed from such a variable (role vars,
set_fact, and the registered results of tasks that must be no_log), transitively. Conditions
(when, changed_when, assert's `that`) print no values and are not counted. EXCEPTIONS names the
tasks that print such a variable on purpose, with the reason it is safe.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import pytest

from tests.helpers.role_tasks import (
    ROLES,
    ROOT,
    TaskRef,
    all_tasks,
    names_in,
    names_in_value,
    role_defaults,
    role_vars,
    strings,
)

SECRET_WORDS = {
    "token", "tokens", "key", "keys", "password", "passwords", "passwd", "pass", "passphrase",
    "secret", "secrets", "vault", "credential", "credentials",
}
# kubeadm commands that print the token or the certificate key, or read kubeadm.yaml (which holds
# both) and may quote it in an error. Words are apart by blanks (a command line, an argv list) or, in an
# argv built by a Jinja list expression, by quotes and commas (`['kubeadm', 'join', ...] + [...]`).
_WORDS = r"""['"]?[\s,]+['"]?"""
KUBEADM_SECRET = re.compile(
    rf"\bkubeadm{_WORDS}(init|join|token{_WORDS}create|certs{_WORDS}certificate-key|config{_WORDS}validate)\b"
    r"|upload-certs"
)
# Variables whose name says secret but whose value is not one.
NOT_SECRET = {
    "nfs_provisioner_image_pull_secrets": "names of Kubernetes Secrets (imagePullSecrets), not contents",
    "node_tuning_sysctl_floor_keys": "sysctl key names",
    "monitoring_apiserver_key_file": "the path of vmagent's client key for the apiserver, not the key",
    "registry_cache_tls_key_src": "the controller path of the caches' TLS key, not the key (sent secret)",
}
# Tasks that print a secret-derived value on purpose: where -> why that is safe.
MASKED = (
    "prints kubeadm's output through ufcctl_kcp_kubeadm_failure, which masks the token secret and the "
    "certificate key"
)
BOOTSTRAP = "kube_control_plane/tasks/bootstrap.yml"
KCP = "kube_control_plane/tasks/main.yml"
LB = "apiserver_lb/tasks/main.yml"
EXCEPTIONS = {
    f"{LB}: Check the VIP plan, the backends and the settings": (
        "prints the plan's problems; ufcctl/domain/controlplane/vrrp.py states the password's rule, "
        "never its value"
    ),
    f"{LB}: Say when the host's descriptor limit shrinks haproxy below the sizing asked for": (
        "prints only the sizing note (descriptor counts and connection limits), computed beside the "
        "VRRP plan but never from the password"
    ),
    f"{KCP}: Report the bootstrap as SKIPPED (configuration rendered and schema-validated only)": (
        "prints only the rendered files' names (map(attribute='name'))"
    ),
    f"{KCP}: Install the Kubernetes CA and write the kubeadm and kube-scheduler configuration": (
        "ufc_files: kubeadm.yaml and ca.key are `secret: true`, so the module adds their contents to "
        "no_log_values and the action replaces the invocation with the destination paths "
        "(tests/unit/roles/test_ufc_common_files.py)"
    ),
    f"{BOOTSTRAP}: Fail when kubeadm refused the configuration (token and certificate key masked)": MASKED,
    f"{BOOTSTRAP}: Fail when kubeadm init failed (token and certificate key masked)": MASKED,
    f"{BOOTSTRAP}: Fail when kubeadm join failed (token and certificate key masked)": MASKED,
    f"{BOOTSTRAP}: Fail when kubeadm could not upload the certificates (certificate key masked)": MASKED,
    f"{BOOTSTRAP}: Fail when kubeadm could not make the token again (token masked)": MASKED,
    f"{KCP}: Check each file against the strict schema before anything is written": (
        "its loop items are the file names (map(attribute='name')); it prints the schema errors of the "
        "rendered documents, and the token and the certificate key come from the password lookup in "
        "exactly their schema's format, so no error can quote them"
    ),
}
KN = "kube_node/tasks/main.yml"
KN_TOKEN = "kube_node/tasks/token.yml"
EXCEPTIONS |= {
    "etcd/tasks/restore.yml: Restore the snapshot into a new data directory with a new cluster token": (
        "etcd's --initial-cluster-token only tells one cluster's members from another's (etcd's "
        "configuration docs); it grants nothing, and ufcctl prints it in the restore's report"
    ),
    f"{KN}: Fail when kubeadm join failed (token masked)": (
        "prints kubeadm's output through ufcctl_kube_node_kubeadm_failure, which masks the token's secret"
    ),
    f"{KN}: Report the node done to the rollout engine": (
        "uses the join's result and configuration only in tests (is changed, is not none): no value printed"
    ),
    f"{KN_TOKEN}: Fail when kubeadm token create failed (token masked)": (
        "prints kubeadm's output through ufcctl_kube_node_kubeadm_failure with the new token masked"
    ),
}
NEVER_PRINT = {
    "ansible.builtin.import_tasks", "ansible.builtin.include_tasks", "ansible.builtin.import_role",
    "ansible.builtin.include_role", "ansible.builtin.meta",
}
ASSERT = "ansible.builtin.assert"


def secret_name(name: str) -> bool:
    return name not in NOT_SECRET and bool(SECRET_WORDS & set(name.lower().strip("_").split("_")))


def command_text(task: TaskRef) -> str:
    if task.action not in ("ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw"):
        return ""
    return " ".join(strings(task.args))


def printed_names(task: TaskRef) -> set[str]:
    """Variables whose values the task's result or diff can show."""
    if task.action in NEVER_PRINT:
        return set()
    args = task.args
    if task.action == ASSERT and isinstance(args, dict):
        args = {k: v for k, v in args.items() if k != "that"}
    if task.action == "ansible.builtin.debug" and isinstance(args, dict) and "var" in args:
        args = {**args, "var": "{{ " + str(args["var"]) + " }}"}
    names = names_in_value(args)
    names |= names_in_value([v for k, v in task.task.items() if k == "loop" or k.startswith("with_")])
    names |= names_in_value((task.task.get("loop_control") or {}).get("label"))
    if task.action == "ansible.builtin.template" and task.role and isinstance(args, dict):
        source = task.role / "templates" / str(args.get("src", ""))
        if source.is_file():
            names |= names_in(source.read_text())
    return names


def _local_taint(task: TaskRef, tainted: set[str]) -> set[str]:
    """Task and block vars computed from tainted values are tainted for this task."""
    local = set(tainted)
    changed = True
    while changed:
        changed = False
        for name, value in task.vars.items():
            if name not in local and (secret_name(name) or names_in_value(value) & local):
                local.add(name)
                changed = True
    return local


def must_be_no_log(task: TaskRef, tainted: set[str]) -> str | None:
    """Why the task must be no_log, or None."""
    command = command_text(task)
    if KUBEADM_SECRET.search(command):
        return f"runs {KUBEADM_SECRET.search(command).group(0)!r}"  # type: ignore[union-attr]
    leaked = sorted(printed_names(task) & _local_taint(task, tainted))
    return f"prints {', '.join(leaked)}" if leaked else None


def _definitions(tasks: Iterable[TaskRef]) -> dict[str, list[Any]]:
    """Every variable's definitions: defaults, role vars, set_fact values; registers map to their task."""
    found: dict[str, list[Any]] = {}
    for role in ROLES:
        for name, value in {**role_defaults(role), **role_vars(role)}.items():
            found.setdefault(name, []).append(value)
    for task in tasks:
        if task.action == "ansible.builtin.set_fact" and isinstance(task.args, dict):
            for name, value in task.args.items():
                found.setdefault(name, []).append(value)
        if "register" in task.task:
            found.setdefault(task.task["register"], []).append(task)
    return found


def tainted_names(tasks: list[TaskRef]) -> set[str]:
    definitions = _definitions(tasks)
    everything = set(definitions) | set().union(*(names_in_value(t.task) for t in tasks))
    tainted = {n for n in everything if secret_name(n)}
    changed = True
    while changed:
        changed = False
        for name, values in definitions.items():
            if name in tainted:
                continue
            for value in values:
                leaks = must_be_no_log(value, tainted) if isinstance(value, TaskRef) else None
                if leaks or (not isinstance(value, TaskRef) and names_in_value(value) & tainted):
                    tainted.add(name)
                    changed = True
                    break
    return tainted


@functools.cache
def _tasks() -> list[TaskRef]:
    return all_tasks()


@functools.cache
def _tainted() -> frozenset[str]:
    return frozenset(tainted_names(_tasks()))


def findings() -> dict[str, str]:
    """where -> why, for every task that must be no_log and is not."""
    tasks, tainted = _tasks(), set(_tainted())
    return {t.where: why for t in tasks if not t.no_log and (why := must_be_no_log(t, tainted))}


def test_tasks_whose_output_can_carry_a_secret_are_no_log() -> None:
    wrong = {where: why for where, why in findings().items() if where not in EXCEPTIONS}
    assert wrong == {}, "add `no_log: true` (or list the task in EXCEPTIONS with the reason)"


def test_every_exception_is_still_needed() -> None:
    assert set(EXCEPTIONS) <= set(findings()), "remove exceptions the scan no longer finds"


def test_the_secrets_the_roles_hold_are_recognised() -> None:
    # guards the name rule and the propagation: each of these must count as secret
    tainted = _tainted()
    for name in (
        "__kube_control_plane_token",
        "__kube_control_plane_certificate_key",
        "apiserver_lb_vrrp_auth_pass",
        "__kube_control_plane_init_doc",  # holds the token, through role vars
        "__kube_control_plane_files",  # holds the init document
        "__kube_control_plane_init",  # registered output of kubeadm init
        "__apiserver_lb_plan",  # computed with the VRRP password (set_fact)
    ):
        assert name in tainted, name
    assert "__kube_control_plane_scheduler_doc" not in tainted
    assert "kube_control_plane_config_dir" not in tainted


CMD = "ansible.builtin.command"
SHELL = "ansible.builtin.shell"
DEBUG = "ansible.builtin.debug"


def _task(name: str, body: dict[str, Any], **block: Any) -> TaskRef:
    return TaskRef(f"t: {name}", ROOT, {"name": name, **body}, **block)


@pytest.mark.parametrize(
    ("task", "flagged"),
    [
        (_task("init", {CMD: "kubeadm init --config x --upload-certs"}), True),
        (_task("join argv", {CMD: {"argv": ["kubeadm", "join", "--config", "x"]}}), True),
        (_task("join argv expression", {CMD: {"argv": "{{ ['kubeadm', 'join', '-c', x] + y }}"}}), True),
        (_task("token", {SHELL: {"cmd": "kubeadm token create --print-join-command"}}), True),
        (_task("version", {CMD: "kubeadm version"}), False),
        (_task("init no_log", {CMD: "kubeadm init", "no_log": True}), False),
        (_task("in a no_log block", {CMD: "kubeadm init"}, block_no_log=True), False),
        (_task("prints", {DEBUG: {"msg": "{{ __kube_control_plane_token }}"}}), True),
        (_task("debug var", {DEBUG: {"var": "apiserver_lb_vrrp_auth_pass"}}), True),
        (_task("loop item", {DEBUG: {"msg": "x"}, "loop": "{{ __kube_control_plane_files }}"}), True),
        (_task("condition only", {DEBUG: {"msg": "x"}, "when": "__kube_control_plane_token"}), False),
        (_task("assert that", {ASSERT: {"that": "__kube_control_plane_token != ''"}}), False),
        (_task("local var", {"ansible.builtin.copy": {"content": "{{ x }}", "dest": "/y"},
                             "vars": {"x": "{{ __kube_control_plane_certificate_key }}"}}), True),
        (_task("public file", {"ansible.builtin.copy": {
            "src": "{{ kube_control_plane_pki_controller_dir }}/ca.crt", "dest": "/etc/kubernetes/pki/ca.crt",
        }}), False),
        (_task("not a secret", {DEBUG: {"msg": "{{ nfs_provisioner_image_pull_secrets }}"}}), False),
    ],
    ids=lambda v: v.where if isinstance(v, TaskRef) else str(v),
)
def test_the_rule_flags_exactly_the_leaking_tasks(task: TaskRef, flagged: bool) -> None:
    tainted = set(_tainted())
    assert (not task.no_log and must_be_no_log(task, tainted) is not None) is flagged


def test_the_scan_sees_the_kubeadm_tasks() -> None:
    kubeadm = [t.where for t in _tasks() if KUBEADM_SECRET.search(command_text(t))]
    assert len(kubeadm) == 7, kubeadm
