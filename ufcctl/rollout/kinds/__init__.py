"""Kinds of rollout, one module each (what to run, its marker task, its extra vars and gate hooks).

Each module defines its `KIND`; `ufcctl/rollout/catalog.py` lists them, and `resume` finds a stored
run's kind there by name.
"""
