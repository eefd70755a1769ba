"""Rolling node work across a fleet: batch plans, node states, failure budget, sliding window."""
