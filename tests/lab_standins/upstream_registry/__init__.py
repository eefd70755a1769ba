"""LAB UPSTREAM REGISTRY: an upstream image registry for lab tests, never packaged, never on real nodes.

- `image.py`: builds a deterministic test OCI image (seeded random layers) in pure Python;
- `push.py`: pushes it to a registry with the HTTP API v2 (monolithic uploads, urllib);
- `registry.py`: runs Debian's docker-registry (distribution 2.8) as a plain registry with access
  logging inside a lab container, and parses its access log (blob GETs per client).
"""
