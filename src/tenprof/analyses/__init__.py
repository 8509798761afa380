"""Analyses: pure functions from a Profile to result objects. No printing, file writing or torch here."""
