"""The model: config.json in, normalised config, layers with their cache specs, family verdict,
checkpoint format and weights out."""
