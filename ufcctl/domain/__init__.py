"""domain layer (see ARCHITECTURE.md)."""
