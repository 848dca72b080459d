"""The one error type of the frontend: a message a user can act on, printed without a traceback."""


class FrontendError(Exception):
    """An expression that does not evaluate, an op deplo does not support, a bad model source;
    `op`: the ATen op it is about, where there is one."""

    op: object = None


class UnsupportedOpError(FrontendError):
    """An ATen op with no converter (the importer then tries PyTorch's decomposition of it)."""

    def __init__(self, message: str, op: object = None):
        super().__init__(message)
        self.op = op
