"""Presentation: what the app and the reports show, computed from a Study.

charts_data: numbers with formulas, table rows and chart series · units: the one unit convention ·
messages: the verdict, gates and layout in the reader's language · sources: readable links ·
report: the Study as JSON and Markdown · artifacts: the files the app downloads · learn, text.
"""
