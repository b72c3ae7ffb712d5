"""Software: pinned engine flag tables and registries, versions, parsers, checkpoint formats."""
