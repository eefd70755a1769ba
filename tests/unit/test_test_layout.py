"""pytest's default import mode (rootdir-relative basenames, no __init__.py) refuses to collect two
test files with the same basename: the whole run stops at collection. This keeps CI from meeting it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each: {clashes}"


def test_each_lab_module_runs_on_one_xdist_worker(tmp_path) -> None:
    """scripts/test.sh runs `-n 3 --dist loadgroup`; a lab module split over two workers would run its
    lab twice under one name (pytest 9 + xdist 3.8 broke this silently). Same conftest, toy modules."""
    import os
    import shutil
    import subprocess
    import sys

    suite = tmp_path / "integration"
    suite.mkdir()
    shutil.copy(TESTS / "integration" / "conftest.py", suite / "conftest.py")
    for name in ("a", "b", "c"):
        (suite / f"test_{name}.py").write_text(
            "import os, pytest\n"
            "@pytest.mark.parametrize('i', range(6))\n"
            "def test_x(i):\n"
            f"    open({str(tmp_path / name)!r}, 'a').write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
        )
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}  # the conftest imports tests.helpers
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup",
         str(suite)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = {name: set((tmp_path / name).read_text().split()) for name in ("a", "b", "c")}
    assert all(len(w) == 1 for w in workers.values()), workers


def test_the_modules_sharing_the_deployed_lab_form_one_group() -> None:
    """They share one session fixture (one lab, one deploy): on two workers it would be built twice
    under one lab name. Every other lab module keeps a group of its own; molecule spreads."""
    from tests.helpers.lab import STACK_MODULES
    from tests.integration.conftest import xdist_group_of

    present = {p.name for p in (TESTS / "integration").glob("test_*.py")}
    assert STACK_MODULES <= present, STACK_MODULES - present
    assert {xdist_group_of(m) for m in STACK_MODULES} == {"stack"}
    others = sorted(present - STACK_MODULES - {"test_molecule.py"})
    assert [xdist_group_of(m) for m in others] == [m.removesuffix(".py") for m in others]
    assert xdist_group_of("test_molecule.py") is None


def test_a_scenario_without_an_idempotence_step_names_the_lab_test_that_checks_it() -> None:
    import re

    import yaml

    from tests.integration.test_molecule import IDEMPOTENCE_ON_LAB, SCENARIOS

    root = TESTS.parent
    for scenario in SCENARIOS:
        config = yaml.safe_load((root / "molecule" / scenario / "molecule.yml").read_text())
        if "idempotence" in config["scenario"]["test_sequence"]:
            continue
        assert scenario in IDEMPOTENCE_ON_LAB, f"molecule/{scenario}: no idempotence step, no lab test named"
        path, name = IDEMPOTENCE_ON_LAB[scenario].split("::")
        source = (root / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), IDEMPOTENCE_ON_LAB[scenario]
        assert "changed" in source, path
