from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs.transforms import MultiStepTransform


def make():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(1000, ndim=2), transform=MultiStepTransform(n_steps=3, gamma=0.99)
    )
