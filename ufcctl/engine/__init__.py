"""engine layer (see ARCHITECTURE.md)."""
