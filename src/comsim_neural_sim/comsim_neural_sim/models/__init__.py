"""Networks of the neural simulator (the video DiT and the optional latent autoencoder)."""

from .transformer import NeuralSimTransformer, NeuralSimTransformerOutput

__all__ = ['NeuralSimTransformer', 'NeuralSimTransformerOutput']
