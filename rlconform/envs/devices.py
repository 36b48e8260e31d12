"""Whether a system that runs on CUDA can run here: its rows say why not, instead of leaving the GPU
path out silently (the torch tier's ``*.cuda`` systems, the learners' ``*.cuda`` systems). Torch is
imported only when asked."""

from __future__ import annotations


def cuda_reason() -> str | None:
    """Why a CUDA system cannot run here (None: it can)."""
    import torch

    return None if torch.cuda.is_available() else "no CUDA device here (torch.cuda.is_available() is False)"
