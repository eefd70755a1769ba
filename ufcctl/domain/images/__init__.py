"""Container image distribution (pure logic, no I/O): tiered pull-through registry caches per ToR and
super pod, each node's mirror list (mirrors, cache_config), and the preheat plan (preheat)."""
