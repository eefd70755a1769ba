"""Container image distribution: tiered pull-through registry caches (per ToR, per super pod)."""
