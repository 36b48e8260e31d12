from torchrl.objectives.value import GAE


def make(value_network):
    return GAE(gamma=0.99, lmbda=0.95, value_network=value_network, shifted=True)
