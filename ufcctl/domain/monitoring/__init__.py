"""Monitoring as data: metric registry, vmalert rules, Grafana dashboards, 16k-node sizing, health report."""
