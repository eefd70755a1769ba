"""Kinds of rollout: one module each (what to run, its marker task, its extra vars and gates)."""
