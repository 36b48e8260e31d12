"""Vectorized checks of Isaac Lab's torch-native env contract (``DirectRLEnv`` / ``ManagerBasedRLEnv``).

Why a separate path from the trace-based families: an Isaac Lab env steps thousands of sub-envs
per call on a GPU. Recording every call as per-sub-env NumPy rows (what the ``isaaclab`` family
does for the reference env's exact checks) costs a Python loop per sub-env per step and a host
copy of every output. The checks here stay in torch on the env's device: each step is checked
with a few tensor operations whatever the number of sub-envs.
"""
