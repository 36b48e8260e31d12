from stable_baselines3 import DQN
from stable_baselines3.common.buffers import ReplayBuffer


class EpisodeEndBuffer(ReplayBuffer):
    """Stores every episode end the same way: time-outs lose their flag."""

    def add(self, obs, next_obs, action, reward, done, infos):
        infos = [{k: v for k, v in info.items() if k != "TimeLimit.truncated"} for info in infos]
        super().add(obs, next_obs, action, reward, done, infos)


def make(env):
    return DQN("MlpPolicy", env, replay_buffer_class=EpisodeEndBuffer)
