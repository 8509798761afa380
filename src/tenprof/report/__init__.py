"""The report: the one registry of what a profile shows and writes (the report's sections, the export
formats, the drawings), the merged report of many ranks, and the HTML page, each built from the
analyses and written by the renderers.

Between cli (which parses and prints) and renderers (which format plain data): cli -> report ->
renderers -> analyses.
"""
