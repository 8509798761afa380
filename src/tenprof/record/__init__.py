"""Running passes: the parent's side of a recording (`tenprof run`'s launcher, the in-process profile),
which starts or wraps the script, hands each pass's raw files to the importers and writes the profile.

Above `tenprof.capture` (the code that runs inside the script's process, with torch) and the importers;
it imports no torch itself.
"""
