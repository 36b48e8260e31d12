"""Gymnasium's documented vector info format, written independently for the reference models.

Each key's values are batched over sub-envs with a boolean ``_key`` mask saying which sub-envs
carry it; nested dicts are batched recursively; ``final_obs`` is an object array so that
observations of any structure fit. Gymnasium 0.29 (``gym_release``) names it ``final_observation``
and batches dict values into object arrays instead of recursively; the models follow the
installed release.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlconform.libraries.gymnasium.releases import installed as installed_release


def _empty_batch(value: Any, num_envs: int) -> np.ndarray:
    if not installed_release().nested_infos:
        # 0.29 batches Python scalars and NumPy numbers by type; anything else (arrays, NumPy
        # bools, dicts) into an object array
        if type(value) in (int, float, bool) or isinstance(value, np.number):
            return np.zeros(num_envs, dtype=type(value))
        return np.full(num_envs, None, dtype=object)
    if isinstance(value, (bool, int, float, np.number)):
        return np.zeros(num_envs, dtype=type(value))
    if isinstance(value, np.ndarray):
        return np.zeros((num_envs, *value.shape), dtype=value.dtype)
    return np.full(num_envs, None, dtype=object)


def merge_info(batched: dict[str, Any], info: dict[str, Any], env: int, num_envs: int) -> dict[str, Any]:
    """Write one sub-env's info into the batched dict (in place) and return it."""
    release = installed_release()
    for key, value in info.items():
        if release.nested_infos and key == release.final_obs_key:
            array = batched.get(key)
            if array is None:
                array = np.full(num_envs, None, dtype=object)
            array[env] = value
        elif isinstance(value, dict) and release.nested_infos:
            array = merge_info(batched.get(key, {}), value, env, num_envs)
        else:
            array = batched.get(key)
            if array is None:
                array = _empty_batch(value, num_envs)
            array[env] = value
        mask = batched.get(f"_{key}")
        if mask is None:
            mask = np.zeros(num_envs, dtype=np.bool_)
        mask[env] = True
        batched[key] = array
        batched[f"_{key}"] = mask
    return batched


def final_obs_entries(infos: dict[str, Any]) -> tuple[Any, Any]:
    """(final observations, their mask) of a batched info dict, under the installed release's
    names; (None, None) when no sub-env ended."""
    key = installed_release().final_obs_key
    return infos.get(key), infos.get(f"_{key}")


def final_entries(obs: Any, info: dict[str, Any]) -> dict[str, Any]:
    """The info entries a same-step vector env adds for a sub-env that ended, under the
    installed release's names."""
    return {installed_release().final_obs_key: obs, "final_info": info}
