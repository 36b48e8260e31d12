"""pytest plugin (placeholder until the plugin module lands)."""
