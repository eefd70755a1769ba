"""Fleet rollouts: the executor (sliding window over ansible-runner runs), the run store (sqlite
under .ufc/), the drain guard, and the kinds of rollout (`kinds/`, one module each).

Layering inside the package (tests/unit/test_layers.py): `store.py` and `storefile.py` are
adapters (engine level: sqlite3); everything else is use-case level (app). The pure policy they
apply (plan, window, budget, node states) lives in `ufcctl/domain/rollout/`.
"""
