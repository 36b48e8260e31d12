"""Executable reference models of each family's documented semantics, and planted bugs."""
