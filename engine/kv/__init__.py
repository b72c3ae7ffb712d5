"""KV cache: one spec class per cache family, stored dtypes, vLLM and SGLang sizing."""
