"""torchrl"""
