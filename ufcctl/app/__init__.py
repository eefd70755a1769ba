"""app layer (see ARCHITECTURE.md)."""
