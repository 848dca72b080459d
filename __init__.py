"""deplo: a hackable ML compiler in Python on xDSL (torch -> tir -> loop -> tile -> kernel -> cuda).

`deplo.compile(...)` is the Python API (tools/api.py), imported lazily so that `import
deplo.dialects` does not load torch.
"""


def __getattr__(name: str):
    if name in ("compile", "capture", "Compiled"):
        from deplo.tools import api

        return getattr(api, name)
    raise AttributeError(name)
