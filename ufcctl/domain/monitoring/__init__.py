"""Monitoring as data: the metric registry, vmalert rules, Grafana dashboards, sizing for 16k nodes and the health report."""
