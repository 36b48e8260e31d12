"""The library-agnostic core: systems, specs, families as interfaces, the catalog, the search.

Nothing here imports an optional library (gymnasium, torch, torchrl, stable-baselines3, isaaclab)
or a package of :mod:`rlconform.libraries`; ``tests/core/test_dependency_rule.py`` checks it.
"""
