"""Hooks into other libraries' training loops (``integrations.trainer_callback``: a ``transformers.Trainer``
callback). Each module imports its library on import; this package imports nothing."""
