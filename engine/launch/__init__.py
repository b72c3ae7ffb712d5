"""Launch: the layout search, per-GPU memory, the plan (flags with reasons) and its renderings."""
