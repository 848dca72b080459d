"""The one error type of the frontend: a message a user can act on, printed without a traceback."""


class FrontendError(Exception):
    """An expression that does not evaluate, an op deplo does not support, a bad model source."""
