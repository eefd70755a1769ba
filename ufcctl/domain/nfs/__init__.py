"""NFS domain: export options (kernel exports(5) lines, nfs-ganesha equivalents), the dataset layout."""
