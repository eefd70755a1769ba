"""report layer (see ARCHITECTURE.md)."""
