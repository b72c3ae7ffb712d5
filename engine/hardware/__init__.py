"""Hardware: the GPU catalog and the gates a model must pass on a GPU."""
