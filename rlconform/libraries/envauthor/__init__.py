"""Env-author mode: a user's own ``gymnasium.Env`` checked for what holds for any env, and run
through every installed stack (Gymnasium vector modes, SB3, TorchRL) that must give the same
transitions (family ``user.env``, ``--api gymnasium.Env``)."""

from rlconform.core.catalog import Library
from rlconform.libraries.envauthor.options import ENV_AUTHOR_OPTIONS

LIBRARY = Library(
    name="envauthor",
    title="env-author mode: your own env through every installed stack",
    modules=(
        "rlconform.libraries.envauthor.family",
        "rlconform.libraries.envauthor.specs",
    ),
    # the planted envs are Gymnasium envs, built once to read their docstrings
    modules_when_importable={"gymnasium": ("rlconform.libraries.envauthor.planted",)},
    options={"gymnasium.Env": ENV_AUTHOR_OPTIONS},
)
