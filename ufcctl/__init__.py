"""ufcctl: deploy and operate ultra-large Ascend NPU Kubernetes clusters with Ansible."""

__version__ = "0.1.0"
