"""Importers: turn traces (our own capture's or ones users bring) into profile tables. No torch here."""
