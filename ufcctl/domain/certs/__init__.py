"""Certificates ufcctl issues or kubeadm manages: where each one lives and how long it has left."""
