"""The model: config.json in, normalised config, layers, family verdict and weights out."""
