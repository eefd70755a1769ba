"""Property tests: what a simple correct allocator builds is valid; one corrupted chip id is caught."""

from __future__ import annotations

from dataclasses import dataclass

from allocator import Allocator, JobSpec, SimNode, cluster_objects, job_objects
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufcctl.domain.placement import PROFILES, validate
from ufcctl.domain.placement.profiles import profile_for

TYPES = PROFILES.types()
NPU = "huawei.com/Ascend910"


@dataclass
class Scenario:
    nodes: list[SimNode]
    objects: list[dict]

    def placed_pods(self) -> list[dict]:
        return [
            obj
            for obj in self.objects
            if obj["kind"] == "Pod" and obj["spec"].get("nodeName") and NPU in obj["metadata"]["annotations"]
        ]


@st.composite
def job_specs(draw: st.DrawFn, accel: str, name: str, labeled_module: bool) -> JobSpec:
    profile = profile_for(accel)
    chips_per_node = profile.chips_per_node
    selector: str | None = accel
    if accel == "module":
        selector = draw(st.sampled_from(["module", None])) if labeled_module else None
    tor_affinity = draw(st.sampled_from([None, "null", "normal-schema", "large-model-schema"]))
    kind = draw(st.sampled_from(["acjob", "podgroup"]))
    if profile.super_pod:
        if draw(st.booleans()):
            per_block = draw(st.integers(1, 2))
            pods = per_block * draw(st.integers(1, 2))
            return JobSpec(
                name,
                selector,
                pods,
                chips_per_node,
                sp_block=per_block * chips_per_node,
                tor_affinity=tor_affinity,
                kind=kind,
            )
        chips = draw(st.sampled_from([1, *range(2, chips_per_node + 1, 2)]))
        return JobSpec(
            name,
            selector,
            1,
            chips,
            sp_block=chips if chips < chips_per_node else chips_per_node,
            tor_affinity=tor_affinity,
            kind=kind,
        )
    pods = draw(st.integers(1, 3))
    chips = draw(st.sampled_from(sorted(profile.allowed_counts(pods > 1))))
    return JobSpec(name, selector, pods, chips, tor_affinity=tor_affinity, kind=kind)


@st.composite
def bad_chips(draw: st.DrawFn, chips: int) -> frozenset[int]:
    """At most one bad chip, and none in about 3 nodes of 4: a multi-pod SuperPoD job needs whole clean
    nodes, which a bad chip in most nodes made so rare that such jobs were hardly ever placed."""
    if draw(st.booleans()):
        return frozenset()
    return frozenset(draw(st.sets(st.integers(0, chips - 1), max_size=1)))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
    labeled_module = draw(st.booleans())
    nodes: list[SimNode] = []
    for accel in types:
        chips = profile_for(accel).chips_per_node
        for i in range(draw(st.integers(1, 5))):
            name = f"{accel}-{i}"
            nodes.append(
                SimNode(
                    name=name,
                    ip=f"10.{TYPES.index(accel)}.0.{i + 1}",
                    accelerator_type=accel if accel != "module" or labeled_module else None,
                    # Four nodes per physical SuperPoD; every profile gets ids, only SuperPoD jobs read them.
                    super_pod_id=i // 4 if profile_for(accel).super_pod else None,
                    tor=i % 2,
                    unhealthy=draw(bad_chips(chips)),
                    network_unhealthy=draw(bad_chips(chips)),
                )
            )
    allocator = Allocator(nodes)
    job_objs: list[dict] = []
    for j in range(draw(st.integers(1, 6))):
        job = draw(job_specs(draw(st.sampled_from(types)), f"job-{j}", labeled_module))
        job_objs.extend(job_objects(job, allocator.place(job)))
    return Scenario(nodes, cluster_objects(nodes) + job_objs)


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(scenarios())
def test_allocator_placements_are_always_valid(scenario: Scenario) -> None:
    report = validate(scenario.objects)
    assert [v.to_dict() for v in report.violations] == []
    assert report.valid


def _entries(pod: dict) -> list[str]:
    return pod["metadata"]["annotations"][NPU].split(",")


@FAST
@given(scenarios(), st.data())
def test_a_single_corrupted_chip_id_is_always_caught(scenario: Scenario, data: st.DataObject) -> None:
    placed = scenario.placed_pods()
    if not placed:
        return  # nothing was placed: nothing to corrupt (hypothesis draws plenty of placed scenarios)
    victim = data.draw(st.sampled_from(placed), label="pod")
    entries = _entries(victim)
    index = data.draw(st.integers(0, len(entries) - 1), label="entry")
    node = next(n for n in scenario.nodes if n.name == victim["spec"]["nodeName"])
    chips_per_node = node.profile.chips_per_node
    others = {
        entry
        for pod in placed
        if pod is not victim and pod["spec"]["nodeName"] == node.name
        for entry in _entries(pod)
    }
    choices = {
        "out-of-range": (f"Ascend910-{data.draw(st.integers(chips_per_node, 4096))}", "CHIP_MISSING"),
        "garbage": (
            data.draw(st.sampled_from(["Ascend910-", "Ascend910-x", "npu3", "Ascend310-1", ""])),
            "CHIP_MISSING",
        ),
    }
    if others:
        choices["held-by-another-pod"] = (data.draw(st.sampled_from(sorted(others))), "CHIP_CONFLICT")
    if len(entries) > 1:
        choices["repeat-own-chip"] = (entries[(index + 1) % len(entries)], "COUNT_MISMATCH")
    if node.unhealthy:
        choices["unhealthy-chip"] = (f"Ascend910-{min(node.unhealthy)}", "CHIP_UNHEALTHY")
    kind = data.draw(st.sampled_from(sorted(choices)), label="corruption")
    replacement, expected = choices[kind]
    entries[index] = replacement
    victim["metadata"]["annotations"][NPU] = ",".join(entries)
    if not victim["metadata"]["annotations"][NPU]:
        expected = "COUNT_MISMATCH"  # a blank annotation lists no chips at all

    report = validate(scenario.objects)
    pod_ref = f"{victim['metadata']['namespace']}/{victim['metadata']['name']}"
    assert not report.valid
    # A conflict is reported on the later of the two holders, naming the other one in the message.
    caught = [
        v
        for v in report.violations
        if v.code.value == expected and (v.pod == pod_ref or pod_ref in v.message)
    ]
    assert caught, f"{kind}: {[v.to_dict() for v in report.violations]}"
