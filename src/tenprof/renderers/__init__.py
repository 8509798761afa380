"""Renderers: result objects -> text, JSON, Perfetto traces, hatchet trees. No analysis logic here."""
