"""One package per library: its families, reference models, planted bugs, own specs and systems."""
