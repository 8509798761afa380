"""Readers of the trace formats tenprof takes in, each to plain events or columns and nothing of a profile:
Kineto / Chrome JSON traces (plain, gzip or zstd, streamed in chunks of whole events) and Nsight Compute
reports. The importers of the passes (`tenprof.importers.<pass>_import`) build tables from what they read."""
