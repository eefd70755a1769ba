"""Monitoring: metric registry, alert rules, dashboards, sizing, health report."""
