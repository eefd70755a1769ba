"""app layer (see docs/architecture.md, "Layers of the Python package")."""
