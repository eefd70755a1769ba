"""Node runtime configuration: containerd's config.toml and registry mirrors (certs.d hosts.toml)."""
