"""roles/etcd's controller-side decisions (vars/main.yml), evaluated by Ansible's own templar from
an etcd_probe result: how each member starts, the split refusal, which units to start, wait for,
restart, which timers to change, and what the one ufc_files call writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import add_all_plugin_dirs, init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.role_tasks import ROOT

ROLE = ROOT / "roles" / "etcd"
HOSTS = ["cp1", "cp2", "cp3"]
CLUSTERS = ["core", "events", "pods"]
ADDRESSES = {"cp1": "10.0.0.11", "cp2": "10.0.0.12", "cp3": "10.0.0.13"}
ENV = "/etc/etcd/etcd-{}.env"
UNIT = "/etc/systemd/system/etcd-{}.service"
RUNNING = {"active": "active", "enabled": "enabled"}
STOPPED = {"active": "inactive", "enabled": "disabled"}


@pytest.fixture(scope="module")
def role_vars() -> dict[str, Any]:
    init_plugin_loader()
    add_all_plugin_dirs(str(ROLE))
    loader = DataLoader()
    return {
        **loader.load_from_file(str(ROLE / "defaults" / "main.yml"), trusted_as_template=True),
        **loader.load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True),
    }


def _units(**states: dict[str, str]) -> dict[str, dict[str, str]]:
    """Every member unit and timer running and enabled, except those named (cluster_kind=state)."""
    units = {f"etcd-{c}.service": dict(RUNNING) for c in CLUSTERS}
    units |= {f"ufcctl-etcd-{k}@{c}.timer": dict(RUNNING) for c in CLUSTERS for k in ("defrag", "backup")}
    names = {"unit": "etcd-{}.service", "timer": "ufcctl-etcd-defrag@{}.timer",
             "backup": "ufcctl-etcd-backup@{}.timer"}
    for key, state in states.items():
        cluster, kind = key.split("_")
        units[names[kind].format(cluster)] = state
    return units


def _state(data: dict[str, bool] | None = None, **changes: Any) -> dict[str, Any]:
    """An etcd_probe result of a converged member (every cluster: data, running, healthy)."""
    state = {
        "data": {c: True for c in CLUSTERS} | (data or {}),
        "units": _units(),
        "health": {c: True for c in CLUSTERS},
        "certs": {},
        "package_installed": True,
        "masked": True,
    }
    return state | changes


def _evaluate(role_vars: dict[str, Any], expression: str, host: str = "cp3", **facts: Any) -> Any:
    """`expression` as Ansible evaluates it in the role on `host` of a 3-member lab, with `facts` set."""
    groups = {f"etcd_{c}": list(HOSTS) for c in CLUSTERS} | {"kube_control_plane": list(HOSTS)}
    hostvars = {h: {"ansible_host": ADDRESSES[h], "__etcd_state": _state()} for h in HOSTS}
    hostvars |= facts.pop("hostvars", {})
    variables = {
        **role_vars,
        "inventory_hostname": host,
        "group_names": [*groups],
        "groups": groups,
        "hostvars": hostvars,
        "ansible_host": ADDRESSES[host],
        "ansible_play_hosts": list(HOSTS),
        "ansible_check_mode": False,
        "etcd_pki_controller_dir": "/nonexistent/pki",
        "__etcd_clusters": list(CLUSTERS),
        "__etcd_state": _state(),
        **facts,
    }
    hostvars[host] = {"ansible_host": ADDRESSES[host], "__etcd_state": variables["__etcd_state"]}
    topology = Templar(loader=DataLoader(), variables=variables).template(
        trust_as_template("{{ groups | ufcctl_etcd_clusters(hostvars) }}")
    )
    return Templar(loader=DataLoader(), variables={**variables, "__etcd_topology": topology}).template(
        trust_as_template(expression)
    )


def _probed(**answers: bool) -> dict[str, Any]:
    """The registered loop of `ufcctl-etcd-member --probe` over the clusters named."""
    return {
        "results": [
            {"__etcd_cluster": c, "stdout": f'{{"running": {str(up).lower()}}}'} for c, up in answers.items()
        ]
    }


@pytest.mark.parametrize(
    ("data", "running", "expected"),
    [
        pytest.param({}, None, dict.fromkeys(CLUSTERS, "restart-safe"), id="converged"),
        pytest.param({"pods": False}, _probed(pods=True), {"pods": "join"}, id="join-a-running-cluster"),
        pytest.param({"pods": False}, _probed(pods=False), {"pods": "new"}, id="bootstrap-when-none-answers"),
        pytest.param({"pods": False}, {"skipped": True}, {"pods": "new"}, id="check-mode-probe-skipped"),
    ],
)
def test_how_each_member_starts(role_vars, data, running, expected) -> None:
    facts = {"__etcd_state": _state(data)} | ({"__etcd_running": running} if running else {})
    start = _evaluate(role_vars, "{{ __etcd_start }}", **facts)
    assert start == dict.fromkeys(CLUSTERS, "restart-safe") | expected


@pytest.mark.parametrize(
    ("holders", "expected"),
    [
        pytest.param({"cp1": True, "cp2": True}, {"pods": ["cp1", "cp2"]}, id="two-holders"),
        pytest.param({"cp1": True, "cp2": False}, {"pods": ["cp1"]}, id="one-holder"),
        pytest.param({"cp1": False, "cp2": False}, {}, id="a-new-cluster-everywhere"),
    ],
)
def test_a_member_without_data_is_refused_next_to_members_holding_data(role_vars, holders, expected) -> None:
    hostvars = {
        h: {"ansible_host": ADDRESSES[h], "__etcd_state": _state({"pods": held})}
        for h, held in holders.items()
    }
    facts = {
        "__etcd_state": _state({"pods": False}),
        "__etcd_running": _probed(pods=False),
        "hostvars": hostvars,
    }
    assert _evaluate(role_vars, "{{ __etcd_split }}", **facts) == expected


def test_a_holder_outside_the_play_or_the_cluster_is_not_counted(role_vars) -> None:
    hostvars = {
        "cp1": {"ansible_host": ADDRESSES["cp1"], "__etcd_state": _state({"pods": True})},
        "cp2": {"ansible_host": ADDRESSES["cp2"], "__etcd_state": _state({"pods": False})},
    }
    facts = {
        "__etcd_state": _state({"pods": False}),
        "__etcd_running": _probed(pods=False),
        "hostvars": hostvars,
        "ansible_play_hosts": ["cp2", "cp3"],  # cp1 not in this run
    }
    assert _evaluate(role_vars, "{{ __etcd_split }}", **facts) == {}


@pytest.mark.parametrize(
    ("units", "data", "check", "written", "expected"),
    [
        pytest.param({}, {}, False, [], [], id="all-running"),
        pytest.param({"core_unit": STOPPED}, {}, False, [], ["core"], id="stopped"),
        pytest.param(
            {"core_unit": {"active": "active", "enabled": "disabled"}},
            {},
            False,
            [],
            ["core"],
            id="running-not-enabled",
        ),
        pytest.param({"pods_unit": STOPPED}, {"pods": False}, False, [], [], id="joining-started-by-join"),
        pytest.param(
            {"core_unit": STOPPED}, {}, True, [UNIT.format("core")], [], id="check-mode-unit-not-there"
        ),
        pytest.param({"core_unit": STOPPED}, {}, True, [], ["core"], id="check-mode-unit-there"),
    ],
)
def test_members_to_start(role_vars, units, data, check, written, expected) -> None:
    facts = {
        "__etcd_state": _state(data, units=_units(**units)),
        "__etcd_running": _probed(pods=True),
        "__etcd_written": {"changed_paths": written},
        "ansible_check_mode": check,
    }
    assert _evaluate(role_vars, "{{ __etcd_to_start }}", **facts) == expected


def test_members_to_wait_for(role_vars) -> None:
    facts = {
        "__etcd_state": _state({"pods": False}, health={"core": True, "events": False, "pods": False}),
        "__etcd_running": _probed(pods=True),
        "__etcd_started": {"results": [{"__etcd_cluster": "core", "changed": True}]},
    }
    # core: started now; events: unhealthy when probed; pods: joins
    assert _evaluate(role_vars, "{{ __etcd_to_wait }}", **facts) == ["core", "events", "pods"]
    assert _evaluate(role_vars, "{{ __etcd_to_wait }}") == []


def _defrag(*clusters: str, want: bool = True) -> list[dict[str, Any]]:
    return [{"unit": f"ufcctl-etcd-defrag@{c}.timer", "want": want} for c in clusters]


def _backup(*clusters: str, want: bool = True) -> list[dict[str, Any]]:
    return [{"unit": f"ufcctl-etcd-backup@{c}.timer", "want": want} for c in clusters]


@pytest.mark.parametrize(
    ("units", "overrides", "backup", "written", "check", "expected"),
    [
        pytest.param({}, {}, True, [], False, [], id="as-wanted"),
        pytest.param({"events_timer": STOPPED}, {}, True, [], False, _defrag("events"), id="stopped-timer"),
        pytest.param({"pods_backup": STOPPED}, {}, True, [], False, _backup("pods"),
                     id="stopped-backup-timer"),
        pytest.param({}, {"pods": {"defrag_enabled": False}}, True, [], False, _defrag("pods", want=False),
                     id="disabled-by-override"),
        pytest.param(
            {"pods_timer": STOPPED}, {"pods": {"defrag_enabled": False}}, True, [], False, [],
            id="already-disabled"
        ),
        pytest.param({}, {}, False, [], False, _backup(*CLUSTERS, want=False), id="backups-disabled"),
        pytest.param(
            {},
            {},
            True,
            ["/etc/systemd/system/ufcctl-etcd-backup@.timer"],
            False,
            [t for c in CLUSTERS for t in (*_defrag(c), *_backup(c))],
            id="unit-changed-reload-all",
        ),
        pytest.param(
            {}, {}, True, ["/etc/systemd/system/ufcctl-etcd-defrag@.timer"], True, [],
            id="unit-changed-check-mode"
        ),
    ],
)
def test_timers_to_change(role_vars, units, overrides, backup, written, check, expected) -> None:
    facts = {
        "__etcd_state": _state(units=_units(**units)),
        "etcd_cluster_overrides": overrides,
        "etcd_backup_enabled": backup,
        "__etcd_written": {"changed_paths": written},
        "ansible_check_mode": check,
    }
    assert _evaluate(role_vars, "{{ __etcd_timers }}", **facts) == expected


@pytest.mark.parametrize(
    ("written", "data", "expected"),
    [
        pytest.param([ENV.format("events")], {}, ["etcd-events.service"], id="settings-changed"),
        pytest.param(
            [UNIT.format("core"), ENV.format("pods")],
            {},
            ["etcd-core.service", "etcd-pods.service"],
            id="unit-and-settings",
        ),
        pytest.param(
            ["/etc/ufcctl/etcd-defrag/core.json", "/etc/etcd/pki/agent.crt"],
            {},
            [],
            id="agent-and-certificates-need-no-restart",
        ),
        pytest.param([ENV.format("pods")], {"pods": False}, [], id="new-member-is-started-not-restarted"),
    ],
)
def test_members_to_restart(role_vars, written, data, expected) -> None:
    facts = {
        "__etcd_state": _state(data),
        "__etcd_running": _probed(pods=False),
        "__etcd_written": {"changed_paths": written},
    }
    assert _evaluate(role_vars, "{{ __etcd_restart }}", **facts) == expected


def test_each_cluster_renders_with_its_own_overrides(role_vars) -> None:
    """ufc_files renders with {__etcd_cluster: <name>}: the per-cluster role vars follow it."""
    facts = {"etcd_cluster_overrides": {"events": {"snapshot_count": 200000}}}
    expression = ("{{ [__etcd_cluster_settings.snapshot_count, __etcd_data_dir, "
                  "__etcd_cluster_member.client_port, __etcd_cluster_topology.name] }}")
    assert _evaluate(role_vars, expression, __etcd_cluster="events", **facts) == [
        200000,
        "/var/lib/etcd-events",
        2383,
        "events",
    ]
    assert _evaluate(role_vars, expression, __etcd_cluster="core", **facts) == [
        100000,
        "/var/lib/etcd-core",
        2379,
        "core",
    ]


def test_the_files_of_a_member(role_vars) -> None:
    files = _evaluate(role_vars, "{{ __etcd_member_files + __etcd_agent_files }}")
    by_dest = {f["dest"]: f for f in files}
    for cluster in CLUSTERS:
        env = by_dest[ENV.format(cluster)]
        assert (env["template"], env["vars"], env["group"], env["mode"]) == (
            "etcd.env.j2",
            {"__etcd_cluster": cluster},
            "etcd",
            "0640",
        )
        assert by_dest[UNIT.format(cluster)]["template"] == "etcd.service.j2"
        assert by_dest[f"/etc/ufcctl/etcd-defrag/{cluster}.json"]["mode"] == "0640"
    assert by_dest["/usr/local/sbin/ufcctl-etcd-member"]["vars"]["__etcd_launcher"]["module"] == (
        "ufcctl.nodeside.etcd_join"
    )
    assert by_dest["/usr/local/sbin/ufcctl-etcd-backup"]["vars"]["__etcd_launcher"]["module"] == (
        "ufcctl.nodeside.etcd_backup"
    )
    # per cluster: agent config, settings, unit; once: zip, 3 launchers, 2 template units x 2 timers
    assert len(files) == 3 * 3 + 8
    directories = {d["path"]: d for d in _evaluate(role_vars, "{{ __etcd_directories }}")}
    assert (directories["/var/lib/etcd-pods"]["owner"], directories["/var/lib/etcd-pods"]["mode"]) == (
        "etcd",
        "0700",
    )
    assert directories["/etc/kubernetes/pki/etcd"]["mode"] == "0750"


@pytest.mark.parametrize(
    ("to_issue", "signed", "expected"),
    [
        pytest.param(
            {}, {}, {"member": "PROBED member", "agent": "PROBED agent"}, id="converged-keeps-probed"
        ),
        pytest.param(
            {"agent": ["no certificate"]},
            {"agent": "SIGNED agent"},
            {"member": "PROBED member", "agent": "SIGNED agent"},
            id="signed-now",
        ),
        pytest.param(
            {"agent": ["no key"]}, {}, {"member": "PROBED member"}, id="check-mode-unsigned-left-out"
        ),
    ],
)
def test_certificates_written(role_vars, to_issue, signed, expected) -> None:
    probed = {n: {"cert": f"PROBED {n}"} for n in ("member", "agent", "apiserver-etcd-client")}
    results = [
        {"__etcd_csr": {"__etcd_cert": {"name": name}}, "certificate": pem} for name, pem in signed.items()
    ] + [{"__etcd_csr": {"__etcd_cert": {"name": "member"}}, "skipped": True}]
    facts = {
        "__etcd_state": _state(certs=probed),
        "__etcd_to_issue": to_issue,
        "__etcd_signed": {"results": results},
        "group_names": ["etcd_core"],  # not a control-plane host: no apiserver certificate
        "__etcd_ca_pem": "",  # no CA yet (check mode before the first run): no CA copies either
    }
    files = _evaluate(role_vars, "{{ __etcd_cert_files }}", **facts)
    assert {Path(f["dest"]).stem: f["content"] for f in files} == expected
    assert all((f["owner"], f["group"], f["mode"]) == ("root", "root", "0644") for f in files)


def test_the_ca_certificate_goes_to_members_and_control_planes(role_vars) -> None:
    probed = {n: {"cert": "PEM"} for n in ("member", "agent", "apiserver-etcd-client")}
    facts = {"__etcd_state": _state(certs=probed), "__etcd_to_issue": {}, "__etcd_ca_pem": "CA PEM"}
    files = {f["dest"]: f for f in _evaluate(role_vars, "{{ __etcd_cert_files }}", **facts)}
    for dest in ("/etc/etcd/pki/ca.crt", "/etc/kubernetes/pki/etcd/ca.crt"):
        assert files[dest]["src"] == "/nonexistent/pki/ca.crt"
    assert "/etc/kubernetes/pki/apiserver-etcd-client.crt" in files


def test_the_probe_reads_members_and_certificates_and_new_clusters_get_bootstrap_settings(role_vars) -> None:
    """tasks/facts.yml's etcd_probe arguments and tasks/members.yml's bootstrap files (filters over
    ufcctl/domain/etcd/member_plan.py, once Jinja namespace() loops)."""
    import yaml

    probe = next(t for t in yaml.safe_load((ROLE / "tasks" / "facts.yml").read_text()) if "etcd_probe" in t)
    health = _evaluate(role_vars, probe["etcd_probe"]["health"], __etcd_clusters=["core", "pods"])
    assert [(h["cluster"], h["url"], h["cert"]) for h in health] == [
        ("core", "https://127.0.0.1:2379/health", "/etc/etcd/pki/agent.crt"),
        ("pods", "https://127.0.0.1:2385/health", "/etc/etcd/pki/agent.crt")]
    certs = _evaluate(role_vars, probe["etcd_probe"]["certs"])
    assert {c["name"]: c["key"] for c in certs} == {
        "member": "/etc/etcd/pki/member.key", "agent": "/etc/etcd/pki/agent.key",
        "apiserver-etcd-client": "/etc/kubernetes/pki/apiserver-etcd-client.key"}
    members = yaml.safe_load((ROLE / "tasks" / "members.yml").read_text())
    boot = next(t for t in members if str(t.get("name", "")).startswith("Write the bootstrap"))
    facts = {"__etcd_state": _state({"pods": False}), "__etcd_running": _probed(pods=False)}
    assert _evaluate(role_vars, boot["ufc_files"]["files"], **facts) == [
        {"dest": "/etc/etcd/etcd-pods-bootstrap.env", "template": "etcd-bootstrap.env.j2",
         "vars": {"__etcd_cluster": "pods"}, "mode": "0644"}]


def test_the_role_decides_in_filters_not_in_jinja_loops() -> None:
    """No `namespace()` accumulation loop in the role's vars or tasks: a decision is a filter over
    ufcctl/domain (roles/etcd/filter_plugins/ufcctl_etcd_member.py), tested as Python."""
    texts = {p.relative_to(ROLE).as_posix(): p.read_text() for p in sorted(ROLE.glob("*/*.yml"))}
    assert "vars/main.yml" in texts and "tasks/facts.yml" in texts
    assert [name for name, text in texts.items() if "namespace(" in text] == []
