"""A downstream project's package: an env of its own and two vectorizers it ships."""
