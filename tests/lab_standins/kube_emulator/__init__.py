"""LAB KUBE EMULATOR: kubeadm and kubelet stand-ins (and kubeadm's apiserver emulator for joins).

Not Kubernetes. Served under the real binary names from the lab mirror because kubelet, kubeadm and
kube-apiserver cannot be installed here; what each checks and what it does not is in kubeadm.py's
and kubelet.py's docstrings. Never packaged, never on a real node.
"""
