"""The names of the families, and the groups of them the cross-family specs apply to.

One place for every family name: a spec says which families it applies to with these groups, a
library's family takes its name from here, and nothing else writes a family name as a literal.
A family a user checks a factory with is named by the ``--api`` the user types, everywhere
(results, reports, reproducers, ``replay(family=...)``, ``rlconform list --family``); a family
without a user API has a name of its own. Results written before this naming (schema version 1)
are read through ``rlconform.reports.document.V1_FAMILY_NAMES``.
What a spec needs to know of a family beyond whether it applies (its array library, how its dtypes
are known, whether its data has terminal observations) is a fact of the family's contract
(:class:`rlconform.envs.driver.Contract`), never a branch on one of these names.
"""

#: Gymnasium single envs under wrappers, and a user's own wrapper (``--api gymnasium.Wrapper``)
GYMNASIUM_ENV = "gymnasium.Wrapper"
GYMNASIUM_VECTOR = "gymnasium.vector"
SB3_VECENV = "sb3.VecEnv"
#: an SB3 algorithm: what its collection code stores in its buffer (rlconform.libraries.sb3.algorithm_family)
SB3_ALGORITHM = "sb3.Algorithm"
#: TorchRL envs are driven with TensorDicts: the specs that read transitions, env logs and
#: observations apply to them; those that read Gymnasium/SB3 tuples, infos or a seed + i
#: convention do not (each such spec says why in its own docstring)
TORCHRL_ENVBASE = "torchrl.EnvBase"
TORCHRL_COLLECTOR = "torchrl.collector"
TORCHRL_REPLAY = "torchrl.ReplayBuffer"
#: a return estimator (GAE, TD(0), TD(1), TD(lambda)) fed TorchRL collector batches
#: (rlconform.libraries.torchrl.value_estimators)
TORCHRL_VALUE_ESTIMATOR = "torchrl.ValueEstimator"
#: Isaac Lab's DirectRLEnv contract (torch tensors out, same-step autoreset): the specs that read
#: transitions, env logs and decoded observations apply to it
ISAACLAB_DIRECT = "isaaclab.DirectRLEnv"
#: Isaac Lab's RslRlVecEnvWrapper (dones and extras["time_outs"], no terminal observation)
ISAACLAB_RSL_RL = "isaaclab.rsl_rl"
#: Isaac Lab envs and wrappers checked vectorized, in torch, at scale (the torch tier)
ISAACLAB_TORCH = "isaaclab"
#: an RSL-RL runner: what its own collection stores and the returns and advantages it computes
#: (rlconform.libraries.rsl_rl)
RSL_RL_RUNNER = "rsl_rl.Runner"
#: a skrl agent: what it stores in its memory and the returns it computes (rlconform.libraries.skrl)
SKRL_AGENT = "skrl.Agent"
#: a user's own env in env-author mode (its observations are not decodable; ``--api gymnasium.Env``)
USER_ENV = "gymnasium.Env"
#: a ready-made vector env, vectorized natively (rlconform.libraries.gymnasium.native_vector)
NATIVE_VECTOR = "gymnasium.VectorEnv"

#: the families whose outputs are Gymnasium/SB3 tuples of NumPy values (their contracts say
#: ``array_namespace="numpy"``), driven with the reference envs
TUPLE_FAMILIES = frozenset({GYMNASIUM_ENV, GYMNASIUM_VECTOR, SB3_VECENV})
#: the tuple families that batch over sub-envs
VECTOR_FAMILIES = frozenset({GYMNASIUM_VECTOR, SB3_VECENV})
#: every family whose runs carry the transitions a training loop extracts
TRANSITION_FAMILIES = TUPLE_FAMILIES | {TORCHRL_ENVBASE, ISAACLAB_DIRECT, ISAACLAB_RSL_RL}
