"""Capture: the only layer that imports torch. One child process per pass runs the user's script."""
