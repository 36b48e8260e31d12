"""rlconform: property-based conformance tests for the step/reset semantics of RL environment APIs."""

__version__ = "0.1.0"
