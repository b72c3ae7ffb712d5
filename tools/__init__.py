"""Developer tools: benchmarks, engine-table extraction, GPU checks."""
