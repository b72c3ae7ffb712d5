"""Presentation: what the app and the reports show, computed from a Study.

charts_data: numbers with formulas, table rows and chart series · messages: the verdict, gates
and layout in the reader's language · study_report: the Study as JSON and Markdown · artifacts:
the files the app downloads · learn, text. The words, units, sources and text safety they share
live one layer down, in ``engine.text``.
"""
