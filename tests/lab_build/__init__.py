"""The lab's real components (Kubernetes, etcd) built from their published Go modules: lab code, never in
the wheel. See README.md beside this file."""
