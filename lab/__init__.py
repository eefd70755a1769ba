"""Emulators and stand-ins for the container lab: never packaged, never installed on real nodes.

See lab/README.md. ufcctl runs them as processes (`python -m lab.npu_emulator ...` from the
checkout root) and never imports them; tests import them from the repository root.
"""
