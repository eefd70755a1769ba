"""Control-plane domain: apiserver VIP (VRRP plan, haproxy sizing), component flags, config schemas."""
