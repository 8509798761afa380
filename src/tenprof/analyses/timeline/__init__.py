"""Where the time of a run went: the summary, tallies, call-path tree, the step decomposition, the profiler's
own cost, inferred steps, the host's work and step selection."""
