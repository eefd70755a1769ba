"""Container images on the nodes: registry mirrors and caches, preheating (pure logic, no I/O)."""
