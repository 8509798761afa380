"""tenprof's version, for every layer that writes it down (meta.json, the report): here rather than in
the package root, which is the public API and imports other layers' code lazily."""

VERSION = "0.1.0"  # as pyproject.toml's [project] version
