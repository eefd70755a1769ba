"""Kubernetes manifests: parse rendered YAML into objects, validate them against schemas, order them."""
