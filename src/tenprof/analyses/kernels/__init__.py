"""What each kernel did: hardware counters and their roofline, warp stalls, and the kernels of compiled
code with their generated source."""
