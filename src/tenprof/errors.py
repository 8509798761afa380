"""One exception family for everything a user can get wrong or that can go wrong outside our control.

Only `tenprof.cli.main` catches these; it prints the message as one line and exits with `exit_code`.
Messages say what happened and what to do next.
"""

from __future__ import annotations


class TenprofError(Exception):
    """Base class: a failure that is reported to the user as one clear line."""

    exit_code = 2


class UsageError(TenprofError):
    """The command line or its arguments are wrong (missing script, bad option value)."""

    exit_code = 2


class ProfileError(TenprofError):
    """A profile directory is missing, incomplete or of an unknown version."""

    exit_code = 3


class TraceFormatError(TenprofError):
    """A trace given to `tenprof import` is truncated, corrupt or not a Kineto/Chrome trace."""

    exit_code = 4


class Interrupted(TenprofError):
    """Ctrl-C stopped the command; the message says what was left (an import leaves nothing half-written)."""

    exit_code = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
