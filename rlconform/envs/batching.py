"""Reading batched outputs per sub-env: observation batches and Gymnasium's masked info dicts.

These helpers only index; they never convert or repair values, so a wrong dtype or a misplaced
entry in the library's output stays visible to the specs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class BatchShapeError(ValueError):
    """The output is not a batch of ``num_envs`` elements."""


def split_batch(batch: Any, num_envs: int) -> list[Any]:
    """One element per sub-env from a batched observation (array, dict, tuple of arrays or of strings)."""
    if isinstance(batch, Mapping):
        per_key = {key: split_batch(value, num_envs) for key, value in batch.items()}
        return [{key: values[i] for key, values in per_key.items()} for i in range(num_envs)]
    if isinstance(batch, tuple):
        if len(batch) == num_envs and all(isinstance(value, str) for value in batch):
            # a Text leaf batched by Gymnasium's vectorizers (batch_space makes a Tuple of one Text
            # per sub-env): one string per sub-env, not a Tuple observation's parts
            return list(batch)
        parts = [split_batch(value, num_envs) for value in batch]
        return [tuple(part[i] for part in parts) for i in range(num_envs)]
    if hasattr(batch, "shape") and len(getattr(batch, "shape", ())) >= 1:
        if batch.shape[0] != num_envs:
            raise BatchShapeError(f"batch of {batch.shape[0]} observations for {num_envs} sub-envs")
        return [batch[i] for i in range(num_envs)]
    if isinstance(batch, list) and len(batch) == num_envs:
        return list(batch)
    raise BatchShapeError(f"cannot split a {type(batch).__name__} into {num_envs} observations")


def unbatch_infos(infos: Mapping[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's vector info dict (values batched, ``_key`` masks) as one dict per sub-env.

    A key whose mask is missing is read for every sub-env; the API spec reports missing masks.
    Infos already listed per sub-env (Gymnasium's ``DictInfoToList`` converts them so) are read
    as they are: an info layout the stack changed is no reason to lose the transitions.
    """
    if isinstance(infos, (list, tuple)) and len(infos) == num_envs and all(isinstance(i, Mapping) for i in infos):
        return [dict(info) for info in infos]
    per_env: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        mask = infos.get(f"_{key}")
        if isinstance(value, Mapping):
            nested = unbatch_infos(value, num_envs)
            for i in range(num_envs):
                if mask is None or bool(mask[i]):
                    per_env[i][key] = nested[i]
            continue
        for i in range(num_envs):
            if mask is not None and not bool(mask[i]):
                continue
            try:
                per_env[i][key] = value[i]
            except (IndexError, TypeError, KeyError):
                per_env[i][key] = value
    return per_env


def missing_masks(infos: Mapping[str, Any]) -> list[str]:
    """Top-level keys of a Gymnasium vector info dict that lack their ``_key`` mask.

    Nested dicts are only required to have the outer mask: Gymnasium's own statistics wrapper
    documents ``infos["episode"]["r"]`` under the single mask ``infos["_episode"]``."""
    return [key for key in infos if not (key.startswith("_") and key[1:] in infos) and f"_{key}" not in infos]


def as_bool_list(values: Any, num_envs: int) -> list[bool]:
    array = np.asarray(values)
    if array.shape != (num_envs,):
        raise BatchShapeError(f"flags of shape {array.shape} for {num_envs} sub-envs")
    return [bool(v) for v in array]


def as_float_list(values: Any, num_envs: int) -> list[float]:
    array = np.asarray(values)
    if array.shape != (num_envs,):
        raise BatchShapeError(f"rewards of shape {array.shape} for {num_envs} sub-envs")
    return [float(v) for v in array]


def leaf_bytes(value: Any) -> int:
    """Bytes of an observation's leaves (arrays, tensors, strings, numbers; dicts, tuples and
    lists summed): what recording one costs, which bounds how far a long episode is driven."""
    if isinstance(value, dict):
        return sum(leaf_bytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(leaf_bytes(v) for v in value)
    if isinstance(value, (str, bytes)):
        return len(value)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    element_size = getattr(value, "element_size", None)
    if callable(element_size):
        return int(element_size() * value.numel())
    return 8
