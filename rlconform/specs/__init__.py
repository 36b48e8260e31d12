"""Cross-family specs: properties that hold for every family whose runs they can read."""
