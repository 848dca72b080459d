"""Shared fixtures of the interpreter tests: a parser with every dialect deplo uses, and seeded
random inputs that are never zero."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from deplo.passes.pipeline import DIALECTS
from deplo.tools.deplo_opt import STANDARD_DIALECTS


@pytest.fixture(scope="session")
def parse():
    ctx = Context()
    for name, get in {**STANDARD_DIALECTS, **DIALECTS}.items():
        ctx.register_dialect(name, get)

    def parse_module(src: str) -> ModuleOp:
        module = Parser(ctx, src).parse_module()
        module.verify()
        return module

    return parse_module


@pytest.fixture
def rand():
    """rand(*shape, dtype=np.float32): normal values pushed away from zero."""
    rng = np.random.default_rng(1234)

    def make(*shape: int, dtype=np.float32) -> np.ndarray:
        x = rng.standard_normal(shape)
        x = x + np.where(x >= 0, 0.1, -0.1)
        return x.astype(dtype)

    return make
