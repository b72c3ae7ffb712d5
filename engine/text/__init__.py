"""Text below every decision-maker: how a decision, a unit, a source or a string from a config
becomes words that are safe where they are shown (words: decisions worded per language · safe:
inert Markdown and plain terminal text · sources: readable source titles · units: the one unit
convention). It knows no engine, model or layout, so every layer may import it."""
