"""Monitoring as data: the metric registry, vmalert rules, Grafana dashboards and sizing for 16k nodes."""
