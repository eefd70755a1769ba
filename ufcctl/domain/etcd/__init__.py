"""etcd domain: cluster topology and apiserver wiring, the defrag rule language, and defrag policy."""
