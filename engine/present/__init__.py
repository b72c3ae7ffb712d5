"""Presentation: the numbers, tables and series the app draws; the shared view state."""
