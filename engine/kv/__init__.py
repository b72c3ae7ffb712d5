"""KV cache: the stored dtypes and vLLM's and SGLang's sizing over the layers' cache specs
(``engine.model.cache_specs``)."""
