"""Fleet rollouts: kinds of rollout, the run store, the planning, start and resume of runs, and the
executor that runs nodes through long-lived Ansible processes behind the rollout gate.

Imports go one way (tests/unit/test_import_graph.py): `catalog.py` (the kinds, listed once) on
top, imported only by the callers; `runs.py` (start, resume) over `executor.py` (the main loop) over
its parts (`admission`, `chunks`, `drainpool`, `writer`, `job`); the kinds (`kinds/`) over `kind.py`,
`drain.py` and `planning.py`. Nothing here imports `ufcctl.app` or `ufcctl.cli`: a caller hands
`runs.start` a loaded inventory and `runs.resume` a loader.

Layering inside the package (tests/unit/test_layers.py): `store.py` and `storefile.py` are
adapters (engine level: sqlite3); everything else is use-case level (app). The pure policy they
apply (plan, window, budget, node states) lives in `ufcctl/domain/rollout/`.
"""
