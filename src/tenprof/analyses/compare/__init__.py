"""Runs and ranks set beside each other: the diff of two runs (with the keys that match a line across
edits), the merged ranks report, and the rule for a difference beyond noise."""
