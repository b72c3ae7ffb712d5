"""Hardware: the GPU catalog (``data/gpus.yaml``); the gates a model must pass on a GPU are
``engine.gates``."""
