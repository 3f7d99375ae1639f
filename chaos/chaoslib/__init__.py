"""Floodgate's chaos runner: real nodes, injected faults, a recorded history, checked bounds."""
