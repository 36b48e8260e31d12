"""The names of the families, and the groups of them the cross-family specs apply to.

One place for every family name: a spec says which families it applies to with these groups, a
library's family takes its name from here, and nothing else writes a family name as a literal.
"""

GYMNASIUM_ENV = "gymnasium.Env"
GYMNASIUM_VECTOR = "gymnasium.vector"
SB3_VECENV = "sb3.VecEnv"
#: TorchRL envs are driven with TensorDicts: the specs that read transitions, env logs and
#: observations apply to them; those that read Gymnasium/SB3 tuples, infos or a seed + i
#: convention do not (each such spec says why in its own docstring)
TORCHRL_ENVBASE = "torchrl.EnvBase"
TORCHRL_COLLECTOR = "torchrl.collector"
TORCHRL_REPLAY = "torchrl.replay"
#: Isaac Lab's DirectRLEnv contract (torch tensors out, same-step autoreset): the specs that read
#: transitions, env logs and decoded observations apply to it
ISAACLAB_DIRECT = "isaaclab"
#: Isaac Lab's RslRlVecEnvWrapper (dones and extras["time_outs"], no terminal observation)
ISAACLAB_RSL_RL = "isaaclab.rsl_rl"
#: Isaac Lab envs and wrappers checked vectorized, in torch, at scale (the torch tier)
ISAACLAB_TORCH = "isaaclab.torch"
#: a user's own env in env-author mode (its observations are not decodable)
USER_ENV = "user.env"

#: the families whose outputs are Gymnasium/SB3 tuples, driven with the reference envs
ALL_FAMILIES = frozenset({GYMNASIUM_ENV, GYMNASIUM_VECTOR, SB3_VECENV})
VECTOR_FAMILIES = frozenset({GYMNASIUM_VECTOR, SB3_VECENV})
#: every family whose runs carry the transitions a training loop extracts
TRANSITION_FAMILIES = ALL_FAMILIES | {TORCHRL_ENVBASE, ISAACLAB_DIRECT, ISAACLAB_RSL_RL}

# the names the specs have always used for these
TORCHRL_FAMILY = TORCHRL_ENVBASE
ISAACLAB_FAMILY = ISAACLAB_DIRECT
ISAACLAB_RSL_RL_FAMILY = ISAACLAB_RSL_RL
USER_ENV_FAMILY = USER_ENV
