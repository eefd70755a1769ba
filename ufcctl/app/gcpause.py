"""Pausing Python's cyclic garbage collector around bulk loads that build no reference cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Loading 16k hosts or a 100,000-pod snapshot allocates millions of acyclic dicts and lists; the
    collector's passes over them cost a third of the inventory load and more than all placement rules
    (tests/benchmarks/bench_inventory.py, bench_placement.py). Reference counting alone frees them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
