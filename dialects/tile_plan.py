"""The plan of a tile kernel: every schedule decision for one kernel, as one typed attribute of
`tile.kernel`, printed, parsed and verified (part of the tile dialect).

    plan matmul(chain = [200, 100], k = 300, tensor_cores = false, splittable = true,
                slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 4, reg_n = 4,
                threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4,
                buffers = 2, copy = cp_async, unroll = 32}

A plan has three parts:
- its **class**: the shape of schedule (a `KernelClass` below): `matmul`, `row_reduce`,
  `attention` or `pointwise`. Which classes a kernel may take is decided from its loop nest
  (passes/tile/planner.py); the class says which tile passes carry the plan out.
- its **facts** (in parentheses): what the planner read off the kernel's loop nest, fixed for
  the kernel (extents, which inputs a stage would copy). They make the plan checkable on its
  own: the verifier needs nothing but the attribute, and a plan is re-targeted to a smaller
  shape of the same kernel by changing its facts (`retarget`).
- its **knobs** (in braces): the decisions. Each knob is carried out by exactly one tile pass
  (`KernelClass.steps`), whose option of the same name (kebab-case) sets it.

`KernelClass.violations` is the one list of legality rules: the verifier of `tile.kernel`, the
planner, pinned plan files and pass options all go through it, and `space` enumerates the legal
plans of a kernel from it (the tuner's input).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.ir import Data
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from deplo.hardware import (
    MAX_BLOCK,
    MAX_BLOCK_THREADS,
    MAX_GRID,
    MAX_SHARED_MEMORY_BYTES,
    SHARED_MEMORY_BYTES,
    WARP,
)

MAX_BUFFERS = 4
"""Shared buffers a stage may cycle through (`buffers`): a pipeline of up to 3 copies in
flight, the depth multistage GEMMs on sm_80/sm_90 use (CUTLASS takes 3 to 5)."""

Value = int | bool | str | tuple
"""A fact or knob value: an int, a bool, an identifier, or a tuple of ints / identifiers."""


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


# --------------------------------------------------------------------------------------------
# knobs


@dataclass(frozen=True)
class Knob:
    """A decision: its name (the option of the pass that carries it out, kebab-cased), its type
    (`int`, `bool` or a tuple of the identifiers it may be) and what it controls; a knob added
    after plans were stored has the `default` that keeps their kernels as they were."""

    name: str
    type: type | tuple[str, ...]
    doc: str
    default: Value | None = None
    least: int = 1  # an int knob's smallest value (0 where 0 means "off")

    def convert(self, value: object) -> Value:
        """A value of this knob's type from a JSON / option value; ValueError if it is not one."""
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if value in ("true", "false"):
                return value == "true"
        elif self.type is int:
            if isinstance(value, int) and not isinstance(value, bool):
                if value < self.least:
                    raise ValueError(f"expected an integer >= {self.least}, got {value}")
                return value
        elif isinstance(value, str) and value in self.type:
            return value
        want = {bool: "true or false", int: "an integer"}.get(self.type) or " or ".join(self.type)  # type: ignore[call-overload]
        raise ValueError(f"expected {want}, got {value!r}")


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("splits", int, "K in this many slices on their own blocks, summed by a 2nd kernel"),
        Knob("split_sum", ("kernel", "last_block"),
             "who adds the K slices up: a second kernel, or the last block of each output tile "
             "to finish its slice (one launch); nothing to add with one split", default="kernel"),
        Knob("mma", bool, "tensor cores: warps of mma.sync m16n8k16 (f16/bf16, fp32 accumulators)"),
        Knob("warps_m", int, "warps per block along the rows (mma)"),
        Knob("warps_n", int, "warps per block along the columns (mma)"),
        Knob("frags_m", int, "16-row fragments per warp (mma; attention: query-row tiles a warp, "
                             "each K and V fragment feeding one mma of each)"),
        Knob("frags_n", int, "8-column fragments per warp (mma)"),
        Knob("reg_m", int, "rows of outputs per thread (register tile)"),
        Knob("reg_n", int, "columns of outputs per thread (register tile)"),
        Knob("interleave", bool, "a thread's register-tile rows and columns are strided by the "
                                 "threads (neighbouring lanes, neighbouring outputs) rather than "
                                 "contiguous"),
        Knob("threads_m", int, "threads per block along the rows (thread.y)"),
        Knob("threads_n", int, "threads per block along the columns (thread.x)"),
        Knob("k_chunk", int, "K walked in chunks of this many elements (0: not chunked)",
             least=0),
        Knob("stage", bool, "each K chunk's input tiles copied to shared memory"),
        Knob("transpose", bool, "staged [rows][k] slabs stored [k][rows] (SIMT): a thread's "
                                "register-tile rows and columns read as 128-bit vectors, "
                                "interleaved in 16-byte groups", default=False),
        Knob("stage_inputs", ("none", "reused", "crossed", "all"),
             "input slabs copied to shared memory: those read twice or more; those read across "
             "their rows (a transpose), then those read twice or more; or all"),
        Knob("pad", int, "elements added to each row of 2-D shared buffers (bank conflicts)",
             least=0),
        Knob("buffers", int, "shared buffers per staged input, taken in turn (n > 1: with "
                             "cp_async the next n - 1 chunks are copied while this one is read)"),
        Knob("copy", ("sync", "cp_async"), "how stages copy: loads and stores, or cp.async"),
        Knob("grid_dims", int, "outer free loops mapped to block.x/y/z (at most 3)", least=0),
        Knob("leave_innermost", bool, "the innermost of 2+ outer loops is left for the threads "
                                      "when nothing inside it could be"),
        Knob("chunk", int, "the innermost outer loop split into blocks of this many elements "
                           "on block.x, its threads striding through each (0: not split)",
             least=0),
        Knob("tile_rows", int, "pointwise: the loop before the innermost split into blocks of "
                               "this many on block.y, each thread walking them (a 2-D output "
                               "tile, whose reads across rows stage_inputs=crossed stages, "
                               "or whose convolution window's rows and halo a block stages "
                               "once; 0: not split)", default=0, least=0),
        Knob("threads", int, "threads per block (a multiple of the warp size); attention: "
                             "threads a row (also 1 to 16 lanes)"),
        Knob("vector", int, "row_reduce: neighbouring elements of the row a thread takes at "
                            "each step of its share, one wide access (16 bytes at most; "
                            "fact contiguous); 1: one element a step, strided by the threads",
             default=1),
        Knob("rows", int, "attention: query rows a block (thread.y)"),
        Knob("stage_keys", int, "attention rows: keys a step whose K and V tiles the block "
                                "copies to shared memory (0: read where they are)", least=0),
        Knob("lane_keys", int, "attention rows: 0, a row's threads split its head dim; n > 0, "
                               "each owns n keys a step (q . k over its part of the head dim, "
                               "head_parts; partial sums added across the lanes once, at the "
                               "end)",
             default=0, least=0),
        Knob("head_parts", int, "attention rows with lane_keys: the head dim in this many "
                                "parts, each a lane's (the lanes of a key add their q . k)",
             default=1),
        Knob("group_heads", int, "attention rows (SIMT): query heads of one K/V head a block "
                                 "runs together (thread.z), their rows reading each key's K and "
                                 "V at the same time (grouped-query attention; fact kv_group)",
             default=1),
        Knob("warps", int, "attention on tensor cores: warps a block, 16 x frags_m query rows "
                           "each"),
        Knob("key_block", int, "attention on tensor cores: keys a step of the key loop (a "
                               "multiple of 16)"),
        Knob("key_splits", int, "attention (tensor cores, or lanes that own keys): the keys "
                                "in this many slices on block.z, each a partial (m, l, O) in a "
                                "scratch buffer; the last slice of a row block to finish "
                                "combines them (split-KV)",
             default=1),
        Knob("unroll", int, "innermost loops of at most this many iterations are unrolled "
                            "(0: none)", least=0),
    )
}
"""Every knob of every class, defined once; a class lists the ones it has."""


# --------------------------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class Plan:
    """A kernel class, its facts and its knobs (both in the class's order)."""

    kind: str
    facts: tuple[tuple[str, Value], ...] = ()
    knobs: tuple[tuple[str, Value], ...] = ()

    @property
    def cls(self) -> KernelClass:
        return CLASSES[self.kind]

    def knob(self, name: str, default: Value | None = None) -> Value:
        if default is None and name in KNOBS:
            default = KNOBS[name].default
        return dict(self.knobs).get(name, default)  # type: ignore[return-value]

    @property
    def knob_dict(self) -> dict[str, Value]:
        return dict(self.knobs)

    @property
    def facts_dict(self) -> dict[str, Value]:
        return dict(self.facts)


    def missing(self) -> list[str]:
        return [n for n in self.cls.knob_names(self.knob_dict)
                if n not in self.knob_dict and KNOBS[n].default is None]

    def violations(self) -> list[tuple[str, str]]:
        """(knob, why) for every rule this plan breaks; empty when it is legal."""
        if self.missing():
            return [(n, "missing") for n in self.missing()]
        extra = [n for n in self.knob_dict if n not in self.cls.knob_names(self.knob_dict)]
        if extra:
            return [(n, f"not a knob of a {self.kind} plan") for n in extra]
        return self.cls.violations(dict(self.facts), self.knob_dict)

    def steps(self) -> list[str]:
        """The tile passes that carry this plan out, in order: the class's steps, less those
        whose knobs all belong to another mode (tile-register-tile when mma is on)."""
        return self.cls.active_steps(self.knob_dict)

    def text(self) -> str:
        """`matmul(chain = [200, 100], ...) {splits = 1, ...}`: the attribute's syntax."""
        facts = ", ".join(f"{n} = {value_text(v)}" for n, v in self.facts)
        knobs = ", ".join(f"{n} = {value_text(v)}" for n, v in self.knobs)
        return f"{self.kind}({facts}) {{{knobs}}}"


def value_text(v: Value) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, tuple):
        return "[" + ", ".join(map(value_text, v)) + "]"
    return str(v)


def parse_plan(parser: Parser | AttrParser) -> Plan:
    """The inverse of `Plan.text`."""
    pos = parser.pos
    kind = parser.parse_identifier()
    if kind not in CLASSES:
        parser.raise_error(f"unknown plan kind '{kind}'; expected one of {', '.join(CLASSES)}",
                           pos)

    def entry() -> tuple[str, Value]:
        name = parser.parse_identifier()
        parser.parse_punctuation("=")
        return name, _parse_value(parser)

    facts = parser.parse_comma_separated_list(parser.Delimiter.PAREN, entry)
    knobs = parser.parse_comma_separated_list(parser.Delimiter.BRACES, entry)
    cls = CLASSES[kind]
    names = [n for n, _ in facts]
    if names != [*cls.facts, *(o for o in cls.optional_facts if o in names)]:
        extra = f" (then optionally {', '.join(cls.optional_facts)})" if cls.optional_facts else ""
        parser.raise_error(f"a {kind} plan's facts are {', '.join(cls.facts)}{extra}", pos)
    for name, value in knobs:
        if name not in KNOBS:
            parser.raise_error(f"unknown knob '{name}'", pos)
        try:
            KNOBS[name].convert(value)
        except ValueError as e:
            parser.raise_error(f"knob {name}: {e}", pos)
    return Plan(kind, tuple(facts), tuple(knobs))


def _parse_value(parser: Parser | AttrParser) -> Value:
    if (i := parser.parse_optional_integer(allow_boolean=False)) is not None:
        return i
    if parser.parse_optional_punctuation("[") is not None:
        if parser.parse_optional_punctuation("]") is not None:
            return ()
        items = [_parse_value(parser)]
        while parser.parse_optional_punctuation(",") is not None:
            items.append(_parse_value(parser))
        parser.parse_punctuation("]")
        return tuple(items)
    word = parser.parse_identifier()
    return {"true": True, "false": False}.get(word, word)


@irdl_attr_definition
class PlanAttr(Data[Plan]):
    """`#tile.plan<matmul(...) {...}>`; on `tile.kernel` printed as `plan matmul(...) {...}`."""

    name = "tile.plan"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Plan:
        with parser.in_angle_brackets():
            return parse_plan(parser)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.text())

    def verify(self) -> None:
        try:
            bad = self.data.violations()
        except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError):
            # (facts are the planner's reading of a loop nest; an edited one may not parse as
            # one: `chain = []`, `slabs = [zz9]`)
            facts = ", ".join(f"{n} = {value_text(v)}" for n, v in self.data.facts)
            raise VerifyException(f"a {self.data.kind} plan's facts ({facts}) are not ones "
                                  "the planner reads off a loop nest") from None
        if bad:
            knob, why = bad[0]
            raise VerifyException(f"knob {knob}: {why}")


# --------------------------------------------------------------------------------------------
# kernel classes


@dataclass(frozen=True)
class KernelClass:
    """One shape of schedule: the facts it is checked against, and its steps — each tile pass
    that carries it out with the knobs that pass owns, in pipeline order."""

    name: str
    doc: str
    facts: tuple[str, ...]
    steps: tuple[tuple[str, tuple[str, ...]], ...]
    optional_facts: tuple[str, ...] = ()  # printed only where they say something

    def knob_names(self, knobs: dict[str, Value]) -> list[str]:
        return [k for _, ks in self.steps for k in ks]

    def active_steps(self, knobs: dict[str, Value]) -> list[str]:
        active = set(self.knob_names(knobs))
        return [step for step, ks in self.steps if not ks or active & set(ks)]

    def implied(self, knobs: dict) -> dict:
        """Knobs that setting `knobs` implies (a register tile implies no tensor cores)."""
        return {}

    def step_names(self) -> list[str]:
        return [step for step, _ in self.steps]

    def owner(self, knob: str, knobs: dict | None = None) -> str | None:
        """The tile pass that carries out `knob` in this class (in the mode of `knobs`)."""
        return next((step for step, ks in self.steps if knob in ks), None)

    def violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        return _common_violations(knobs)

    def domain(self, knob: str, facts: dict, knobs: dict) -> Sequence[Value]:
        """The values the space enumerates for `knob`, given the earlier knobs (a legal
        subset; `violations` has the final word)."""
        return _COMMON_DOMAINS[knob](facts, knobs)


def _common_violations(knobs: dict) -> list[tuple[str, str]]:
    bad = []
    stage = knobs.get("stage", knobs.get("stage_inputs", "none"))
    if knobs.get("copy") == "cp_async" and stage in (False, "none"):
        bad.append(("copy", "cp_async needs a stage (nothing is staged)"))
    return bad


_COMMON_DOMAINS = {
    "unroll": lambda f, k: (0, 32),
    "copy": lambda f, k: ("sync", "cp_async") if k.get("stage", k.get("stage_inputs"))
    not in (False, "none") else ("sync",),
    "stage_inputs": lambda f, k: ("none", "reused", "all"),
    "threads": lambda f, k: tuple(t for t in (32, 64, 128, 256, 512, 1024)
                                  if t <= max(WARP, _round_up(f.get("extent", 1024), WARP))),
    "grid_dims": lambda f, k: (0, 1, 2, 3),
    "leave_innermost": lambda f, k: (False, True),
    "chunk": lambda f, k: (0,) + tuple(c for c in (128, 256, 512, 1024, 2048, 4096)
                                       if f.get("leaf") and c < _round_up(f["chain"][-1], WARP)),
}


def _threads_violations(knobs: dict) -> list[tuple[str, str]]:
    """`threads` caps the block: the passes use at most the mapped extent rounded up to a warp."""
    t = knobs["threads"]
    if not WARP <= t <= MAX_BLOCK_THREADS or t % WARP:
        return [("threads", f"expected a multiple of {WARP} in [{WARP}, {MAX_BLOCK_THREADS}], "
                            f"got {t}")]
    return []


@dataclass(frozen=True)
class PointwiseClass(KernelClass):
    def violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        bad = _common_violations(knobs) + _threads_violations(knobs)
        if not 0 <= knobs["grid_dims"] <= 3:
            bad.append(("grid_dims", f"expected 0 to 3 grid axes, got {knobs['grid_dims']}"))
        chunk = knobs["chunk"]
        if chunk < 0 or chunk % WARP:
            bad.append(("chunk", f"expected 0 or a multiple of {WARP}, got {chunk}"))
        elif chunk and not facts["leaf"]:
            bad.append(("chunk", "the innermost outer loop holds loops of its own: it cannot "
                                 "be split over blocks"))
        elif chunk and not knobs["grid_dims"]:
            bad.append(("chunk", "a split innermost loop needs a grid axis (grid_dims >= 1)"))
        rows, chain = knobs.get("tile_rows", 0), facts["chain"]
        if rows < 0:
            bad.append(("tile_rows", f"expected 0 or more rows, got {rows}"))
        elif rows and (not chunk or knobs["grid_dims"] < 2 or len(chain) < 2
                       or chain[-2] % rows or chain[-2] // rows > MAX_GRID[1]):
            bad.append(("tile_rows", f"{rows} rows a tile need a split innermost loop (chunk), "
                                     "two grid axes and a loop before it of a multiple of "
                                     f"{rows}, at most {MAX_GRID[1]} tiles (the chain is "
                                     f"{list(chain)})"))
        return bad

    def domain(self, knob: str, facts: dict, knobs: dict) -> Sequence[Value]:
        chain = facts["chain"]
        if knob == "tile_rows":
            return (0,) + tuple(r for r in (8, 16, 32) if knobs["chunk"] and len(chain) >= 2
                                and knobs["grid_dims"] >= 2 and chain[-2] % r == 0
                                and chain[-2] // r <= MAX_GRID[1])
        if knob == "stage_inputs":
            return ("none", "reused", "crossed", "all") if knobs.get("tile_rows") \
                else ("none", "reused", "all")
        return super().domain(knob, facts, knobs)


@dataclass(frozen=True)
class RowClass(KernelClass):
    """A row reduction or a flash-attention row: the innermost `grid_dims` outer loops (the
    rows) on blocks, `threads` threads over the reduced (or head) dim, whose extent bounds
    them. Facts: `rows`, the extents of the outer loops (the innermost 3)."""

    limit: str = "extent"

    def violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        bad = _common_violations(knobs) + _threads_violations(knobs)
        top = _round_up(facts[self.limit], WARP)
        if not bad and knobs["threads"] > top:
            bad.append(("threads", f"{knobs['threads']} threads for {facts[self.limit]} "
                                   f"elements: at most {top} (one warp past the extent)"))
        low = 1 if facts["rows"] else 0
        if not low <= knobs["grid_dims"] <= 3:
            bad.append(("grid_dims", f"expected {low} to 3 grid axes (the rows must be on "
                                     f"blocks), got {knobs['grid_dims']}"))
        vector = knobs.get("vector", 1)
        if vector not in self.domain("vector", facts, knobs):
            size = facts.get("contiguous")
            each = f"{size} bytes each" if size else "the row's accesses are not contiguous"
            bad.append(("vector", f"expected 1 or a power of two up to 16 bytes of the row's "
                                  f"elements ({each}) dividing its {facts[self.limit]}, got "
                                  f"{vector}"))
        return bad

    def domain(self, knob: str, facts: dict, knobs: dict) -> Sequence[Value]:
        if knob == "vector":
            size = facts.get("contiguous", 0)
            return (1,) + tuple(v for v in (2, 4, 8) if size and v * size <= 16
                                and facts[self.limit] % v == 0)
        if knob == "threads":
            return _COMMON_DOMAINS["threads"]({"extent": facts[self.limit]}, knobs)
        if knob == "grid_dims":
            return tuple(range(1, len(facts["rows"]) + 1)) or (0,)
        return super().domain(knob, facts, knobs)


ATTENTION_MMA = ("warps", "frags_m", "key_block", "stage", "buffers")
ATTENTION_SIMT = ("threads", "group_heads", "rows", "stage_keys", "lane_keys", "head_parts",
                  "stage_inputs")
MMA_ACCUMULATORS = 128
"""A lane's fp32 accumulators on tensor cores (frags_m x frags_n x 4 a product): 4 x 8 fragments
are a 64 x 64 warp tile, CUTLASS's largest for mma.sync; past it ptxas's 255 registers cannot
also hold the fragments. Attention: D / 2 a row tile, at most half as many (Q's fragments and
the scores share the lane: ptxas spills at 4 tiles of D 64 and 2 of D 128)."""
STAGE_PAD = 8  # halves added to each staged K / V row: 16-byte rows off the bank alignment
HOISTED_Q = 64
"""lane_keys: the most of the head dim (its part, with head_parts) whose q a lane keeps in
registers beside its accumulator (twice that many registers; past it q is read at every step,
through L1). The heuristic's and the tuner's parts are at most this: past it the accumulator,
the K and V rows in flight and the rest spill (a whole head dim of 128: 255 registers and
spills, NVRTC sm_90)."""


def _parts(facts: dict, knobs: dict) -> tuple[int, ...]:
    """The head_parts a lane's part of the head dim fits HOISTED_Q with (past it, it spills),
    dividing the head dim and the threads."""
    d, t = facts["head_dim"], knobs["threads"]
    return tuple(p for p in (1, 2, 4, 8) if d % p == 0 and t % p == 0 and d // p <= HOISTED_Q)


def _split_violations(facts: dict, knobs: dict, step: int) -> list[tuple[str, str]]:
    """key_splits: slices of whole key steps (`step` keys), on block.z."""
    splits, rows = knobs.get("key_splits", 1), facts["rows"]
    if splits not in (1, 2, 4, 8, 16):
        return [("key_splits", f"expected 1, 2, 4, 8 or 16 slices of the keys, got {splits}")]
    if splits > 1 and not rows_on_grid(facts, knobs):
        return [("key_splits", "slices of the keys go on block.z: the query rows and at most "
                               "one loop around them on the grid (grid_dims), not "
                               f"{len(rows)} loops with grid_dims {knobs['grid_dims']}")]
    if not _slices_fill(facts["keys"], step, splits):
        return [("key_splits", f"{splits} slices of {facts['keys']} keys, {step} a step: a "
                               "slice without a step")]
    return []


def lane_step(knobs: dict) -> int:
    """Keys a step of rows whose lanes own keys: lane_keys for each key lane of a part."""
    return max(1, knobs["threads"] // knobs.get("head_parts", 1)) * knobs.get("lane_keys", 0)


def rows_on_grid(facts: dict, knobs: dict) -> bool:
    """The query rows and at most one loop around them on the grid: block.z is free."""
    return 1 <= len(facts["rows"]) <= 2 and knobs["grid_dims"] == len(facts["rows"])


def _group_violations(facts: dict, knobs: dict) -> list[tuple[str, str]]:
    """group_heads g > 1: g divides the query heads a K/V head serves, every grid loop (the
    heads among them) on the grid, a row's lanes within a warp, K and V read where they are,
    one slice of the keys."""
    g, group = knobs.get("group_heads", 1), facts.get("kv_group", 1)
    if g == 1:
        return []
    if g < 1 or group % g or g > MAX_BLOCK[2]:
        return [("group_heads", f"expected a divisor of the {group} query head(s) a K/V head "
                                f"serves (fact kv_group) up to {MAX_BLOCK[2]} (thread.z), "
                                f"got {g}")]
    why = ("the heads' loop must be on the grid (grid_dims)"
           if knobs["grid_dims"] != len(facts["rows"]) else
           "a row's lanes must be one warp's at most" if knobs["threads"] > WARP else
           "K and V are read where they are (stage_keys 0)" if knobs.get("stage_keys", 0) else
           "one slice of the keys (key_splits 1)" if knobs.get("key_splits", 1) != 1 else "")
    return [("group_heads", f"{g} heads a block: {why}")] if why else []


def _slices_fill(keys: int, step: int, splits: int) -> bool:
    """Every one of `splits` slices of whole steps has a step (the last is the shortest)."""
    steps = -(-keys // step)
    return (splits - 1) * -(-steps // splits) < steps


def _splits_domain(facts: dict, knobs: dict, step: int) -> tuple[int, ...]:
    return tuple(s for s in (1, 2, 4, 8, 16) if s == 1 or rows_on_grid(facts, knobs)
                 and _slices_fill(facts["keys"], step, s))


@dataclass(frozen=True)
class AttentionClass(RowClass):
    """Flash-attention rows: also fewer threads than a warp a row (a group of lanes shares the
    head dim) and `rows` query rows a block (thread.y) — or, with `mma` (fact `tensor_cores`:
    an f16/bf16 row tensor cores can run; `queries`: its query rows, on whichever grid loop),
    `warps` warps of `frags_m` 16-row tiles walking `key_block` keys a step on mma.sync."""

    def implied(self, knobs: dict) -> dict:
        if set(knobs) & set(ATTENTION_MMA) - {"buffers"}:  # (buffers: matmuls' too)
            return {"mma": True}
        if set(knobs) & set(ATTENTION_SIMT):
            return {"mma": False}
        return {}

    def knob_names(self, knobs: dict[str, Value]) -> list[str]:
        """(key_splits, both modes' knob, where the rows' step lists it: after their knobs.)"""
        drop = ATTENTION_SIMT if knobs.get("mma") else ATTENTION_MMA
        names = [k for _, ks in self.steps for k in ks if k not in drop]
        return [k for n, k in enumerate(names) if k not in names[n + 1:]]

    def active_steps(self, knobs: dict[str, Value]) -> list[str]:
        steps = super().active_steps(knobs)
        return [s for s in steps if s != "tile-attention-rows"] if knobs.get("mma") else steps

    def owner(self, knob: str, knobs: dict | None = None) -> str | None:
        if knob == "key_splits" and knobs is not None and not knobs.get("mma"):
            return "tile-attention-rows"  # (both passes carry it out, each in its mode)
        return super().owner(knob)

    def violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        if knobs["mma"]:
            return self.mma_violations(facts, knobs)
        t, rows, heads = knobs["threads"], knobs["rows"], knobs.get("group_heads", 1)
        lanes = t < WARP and t >= 1 and not t & (t - 1)
        bad = super().violations(facts, {**knobs, "threads": WARP} if lanes else knobs)
        if bad and bad[0][0] == "threads" and not lanes:  # (a row's lanes: a power of two)
            bad[0] = ("threads", f"expected a power of two below {WARP} (a query row's lanes) "
                                 f"or a multiple of {WARP} in [{WARP}, {MAX_BLOCK_THREADS}], "
                                 f"got {t}")
        block = t * rows * heads
        if not bad and block > MAX_BLOCK_THREADS:
            bad.append(("rows", f"{rows} rows of {t} threads ({heads} head(s)): more than "
                                f"{MAX_BLOCK_THREADS} threads a block"))
        elif not bad and block > WARP and block % WARP:
            bad.append(("rows", f"{rows} rows of {t} threads ({heads} head(s)): a block past "
                                "one warp must be whole warps (the shuffles name every lane)"))
        if rows < 1 or rows > max(1, (facts["rows"] or (1,))[-1]):
            bad.append(("rows", f"expected 1 to {(facts['rows'] or (1,))[-1]} query rows a "
                                f"block, got {rows}"))
        step = knobs.get("stage_keys", 0)
        if step not in (0, 16, 32, 64, 128):
            bad.append(("stage_keys", f"expected 0 (no staging), 16, 32, 64 or 128 keys a step, "
                                      f"got {step}"))
        elif step and (smem := attention_stage_bytes(facts, knobs)) > SHARED_MEMORY_BYTES:
            bad.append(("stage_keys", f"{step} keys of K and V take {smem} bytes of shared "
                                      f"memory, more than {SHARED_MEMORY_BYTES}"))
        own = knobs.get("lane_keys", 0)
        if own not in (0, 1, 2, 4, 8):
            bad.append(("lane_keys", f"expected 0 (the head dim split) or 1, 2, 4 or 8 keys a "
                                     f"lane, got {own}"))
        elif own and t > WARP:
            bad.append(("lane_keys", f"{t} threads a row: lanes that own keys are one warp's "
                                     "at most (their max and sums are shuffles)"))
        elif own and step:
            bad.append(("lane_keys", "lanes that own keys read K and V where they are: "
                                     "stage_keys must be 0"))
        elif (parts := knobs.get("head_parts", 1)) not in (1, 2, 4, 8) or (parts > 1 and (
                not own or facts["head_dim"] % parts or t % parts)):
            bad.append(("head_parts", f"expected 1, 2, 4 or 8 parts of the head dim, with "
                                      f"lane_keys, dividing the head dim and the {t} threads; "
                                      f"got {parts}"))
        elif own and not facts.get("own_keys"):
            bad.append(("lane_keys", "the row is not one key loop with one q . k and the "
                                     "standard online update its lanes can own keys of "
                                     "(fact own_keys)"))
        elif knobs.get("key_splits", 1) != 1 and not own:
            bad.append(("key_splits", "slices of the keys need lanes that own keys (lane_keys) "
                                      "or tensor cores"))
        elif own and t >= 1 and not bad:
            bad += _split_violations(facts, knobs, lane_step(knobs))
        return bad or _group_violations(facts, knobs)

    def mma_violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        if knobs.get("group_heads", 1) != 1:
            return [("group_heads", "query heads grouped in a block are rows' (SIMT); on "
                                    "tensor cores expected 1")]
        bad = _common_violations(knobs)
        queries = facts.get("queries", 1)
        if not facts.get("tensor_cores"):
            bad.append(("mma", "the row is not an f16/bf16 flash row tensor cores can run "
                               "(fact tensor_cores)"))
        if not 1 <= knobs["grid_dims"] <= 3:
            bad.append(("grid_dims", f"expected 1 to 3 grid axes (the query rows on blocks), "
                                     f"got {knobs['grid_dims']}"))
        frags = knobs.get("frags_m", 1)
        if knobs["warps"] not in (1, 2, 4, 8) or 16 * knobs["warps"] > _round_up(queries, 16):
            bad.append(("warps", f"expected 1, 2, 4 or 8 warps of 16 rows, at most the "
                                 f"{queries} query rows rounded up to 16; got {knobs['warps']}"))
        elif frags not in (1, 2, 4) or 16 * frags * knobs["warps"] > _round_up(queries, 16):
            bad.append(("frags_m", f"expected 1, 2 or 4 tiles of 16 rows a warp, the block's "
                                   f"{knobs['warps']} warps at most the {queries} query rows "
                                   f"rounded up to 16; got {frags}"))
        elif frags > 1 and frags * facts["head_dim"] // 2 > MMA_ACCUMULATORS // 2:
            bad.append(("frags_m", f"{frags} tiles of 16 rows with a head dim of "
                                   f"{facts['head_dim']}: more than {MMA_ACCUMULATORS // 2} fp32 "
                                   "accumulators a lane (ptxas spills)"))
        kb = knobs["key_block"]
        if kb not in (16, 32, 64, 128):
            bad.append(("key_block", f"expected 16, 32, 64 or 128 keys a step, got {kb}"))
        elif knobs["stage"] and facts["head_dim"] % 16:
            bad.append(("stage", f"a head dim of {facts['head_dim']} is not a whole number of "
                                 "16-wide fragments: the padding of the staged rows would be read"))
        elif knobs["stage"] and (smem := attention_stage_bytes(facts, knobs)) > SHARED_MEMORY_BYTES:
            n = knobs.get("buffers", 1)
            one = attention_stage_bytes(facts, {**knobs, "buffers": 1}) <= SHARED_MEMORY_BYTES
            bad.append(("buffers" if one else "stage",
                        f"{kb} keys of K and V{f' in {n} buffers' if n > 1 else ''} take {smem} "
                        f"bytes of shared memory, more than {SHARED_MEMORY_BYTES}"))
        buffers = knobs.get("buffers", 1)
        if not 1 <= buffers <= MAX_BUFFERS or (buffers > 1 and not knobs["stage"]):
            bad.append(("buffers", f"expected 1 to {MAX_BUFFERS} buffers of the staged K and V "
                                   f"tiles (more than one only with stage), got {buffers}"))
        if kb in (16, 32, 64, 128):
            bad += _split_violations(facts, knobs, kb)
        return bad

    def domain(self, knob: str, facts: dict, knobs: dict) -> Sequence[Value]:
        if knob == "mma":
            return (False, True) if facts.get("tensor_cores") else (False,)
        if knob == "warps":
            top = _round_up(facts.get("queries", 1), 16)
            return tuple(w for w in (1, 2, 4, 8) if 16 * w <= top)
        if knob == "frags_m":
            top = _round_up(facts.get("queries", 1), 16)
            return tuple(f for f in (1, 2, 4) if 16 * f * knobs["warps"] <= top
                         and (f == 1 or f * facts["head_dim"] // 2 <= MMA_ACCUMULATORS // 2))
        if knob == "key_block":
            return (16, 32, 64)
        if knob == "key_splits":
            if knobs["mma"]:
                return _splits_domain(facts, knobs, knobs["key_block"])
            return _splits_domain(facts, knobs, lane_step(knobs)) \
                if knobs.get("lane_keys", 0) else (1,)
        if knob == "stage":
            return (False, True) if facts["head_dim"] % 16 == 0 else (False,)
        if knob == "buffers":  # (those whose tiles fit beside each other in static memory)
            return tuple(n for n in range(1, MAX_BUFFERS + 1) if n == 1 or knobs["stage"] and
                         attention_stage_bytes(facts, {**knobs, "buffers": n})
                         <= SHARED_MEMORY_BYTES)
        if knob == "threads":
            return (1, 2, 4, 8, 16, *super().domain(knob, facts, knobs))
        if knob == "lane_keys":
            keyed = facts.get("own_keys") and knobs["threads"] <= WARP \
                and not knobs.get("stage_keys", 0) and _parts(facts, knobs)
            return (0, 1, 2, 4) if keyed else (0,)
        if knob == "head_parts":
            return (_parts(facts, knobs) or (1,)) if knobs["lane_keys"] else (1,)
        if knob == "stage_keys":
            return tuple(k for k in (0, 16, 32, 64) if not k or attention_stage_bytes(
                facts, {**knobs, "stage_keys": k}) <= SHARED_MEMORY_BYTES)
        if knob == "rows":
            top = (facts["rows"] or (1,))[-1]
            per = knobs["threads"] * knobs.get("group_heads", 1)
            return tuple(r for r in (1, 2, 4, 8, 16, 32, 64)
                         if r <= top and r * per <= MAX_BLOCK_THREADS)
        if knob == "group_heads":
            g = facts.get("kv_group", 1)
            ok = knobs["threads"] <= WARP and knobs["grid_dims"] == len(facts["rows"])
            return tuple(d for d in range(1, min(g, MAX_BLOCK[2]) + 1) if g % d == 0) \
                if ok else (1,)
        return super().domain(knob, facts, knobs)


@dataclass(frozen=True)
class MatmulClass(KernelClass):
    """A contraction on 2-D tiles. Facts: `chain` the extents of the free loops around the
    reduction (outermost first; the last two are the rows and the columns), `k` its length,
    `tensor_cores` whether it is a plain f16/bf16 product mma.sync can run, `splittable`
    whether K may be split (one float sum), `slabs` the inputs a K-chunk stage copies, each as
    the loop indices of its non-unit dims (i rows, j columns, k the reduction) and its element
    bytes (`ik4`: an fp32 A), `gather` (optional) whether B is gathered in the K loop (an
    implicit GEMM's conv window: tensor cores take it only staged, unsplit). Knobs: tensor cores (`mma`) choose between warps x fragments
    and threads x register tiles; the rest apply to both."""

    def implied(self, knobs: dict) -> dict:
        if set(knobs) & set(MMA_TILE):
            return {"mma": True}
        if set(knobs) & set(SIMT_TILE):
            return {"mma": False}
        return {}

    def knob_names(self, knobs: dict[str, Value]) -> list[str]:
        drop = SIMT_TILE if knobs.get("mma") else MMA_TILE
        return [k for _, ks in self.steps for k in ks if k not in drop]

    def violations(self, facts: dict, knobs: dict) -> list[tuple[str, str]]:
        bad = _common_violations(knobs)
        splits, k = knobs["splits"], facts["k"]
        if splits != 1 and (splits < 1 or not facts["splittable"] or k % splits):
            why = ("K cannot be split (it is not one float sum)" if not facts["splittable"]
                   else f"expected a divisor of K = {k}")
            return bad + [("splits", f"{splits}: {why}")]
        rows, cols = facts["chain"][-2], facts["chain"][-1]
        accs = facts.get("accumulators", 1)
        if knobs.get("split_sum", "kernel") == "last_block" and batched(facts):
            bad.append(("split_sum", "last_block: a batch of products would share the counters "
                                     "of one block tile"))
        if knobs["mma"]:
            if not facts["tensor_cores"]:
                bad.append(("mma", "tensor cores need a plain product of f16 or bf16 inputs "
                                   "(acc + A * B, fp32 accumulation); this kernel has none"))
            elif splits > 1 and (k // splits) % 16:
                bad.append(("mma", f"with tensor cores a K slice must be a multiple of 16 "
                                   f"(K = {k} in {splits} slices)"))
            elif facts.get("gather") and splits > 1:
                bad.append(("splits", f"{splits}: a gathered B (fact gather) is staged whole "
                                      "along K; tensor cores take it unsplit"))
            elif facts.get("gather") and not (knobs["stage"] and knobs["k_chunk"]):
                bad.append(("stage", "a gathered B (fact gather) reaches tensor cores only "
                                     "through its staged K chunks (stage = true, k_chunk > 0)"))
            elif facts.get("gather") and -(-k // 16) * 16 % knobs["k_chunk"]:
                bad.append(("k_chunk", f"{knobs['k_chunk']}: a gathered B (fact gather) is "
                                       f"staged in every chunk: expected a divisor of K = {k} "
                                       "rounded up to 16 (no remainder loop)"))
            for name, n, unit in (("m", rows, 16), ("n", cols, 8)):
                w, f = knobs[f"warps_{name}"], knobs[f"frags_{name}"]
                if w * f * unit > max(unit, _pow2_ceil(n)):
                    bad.append((f"frags_{name}", f"a block tile of {w * f * unit} for {n} "
                                                 f"{'rows' if name == 'm' else 'columns'}"))
            if knobs["warps_m"] * knobs["warps_n"] * WARP > MAX_BLOCK_THREADS:
                bad.append(("warps_n", f"{knobs['warps_m']} x {knobs['warps_n']} warps: more "
                                       f"than {MAX_BLOCK_THREADS} threads"))
            if knobs["frags_m"] * knobs["frags_n"] * 4 * accs > MMA_ACCUMULATORS:
                bad.append((max(("frags_n", "frags_m"), key=knobs.__getitem__),
                            f"{knobs['frags_m']} x {knobs['frags_n']} fragments of {accs} "
                            f"product(s): more than {MMA_ACCUMULATORS} fp32 accumulators a lane"))
        else:
            for name, n in (("reg_m", rows), ("reg_n", cols)):
                if not 1 <= knobs[name] <= n:
                    bad.append((name, f"{knobs[name]}: expected 1 to {n} (the "
                                      f"{'rows' if name == 'reg_m' else 'columns'})"))
            tm, tn = knobs["threads_m"], knobs["threads_n"]
            for name, t, limit in (("threads_m", tm, MAX_BLOCK[1]), ("threads_n", tn, MAX_BLOCK[0])):
                if not 1 <= t <= limit:
                    bad.append((name, f"expected 1 to {limit} threads, got {t}"))
            if tm * tn > MAX_BLOCK_THREADS:
                bad.append(("threads_n", f"{tm} x {tn} threads: more than {MAX_BLOCK_THREADS}"))
            if knobs["reg_m"] * knobs["reg_n"] * accs > 64:  # (blame the larger)
                bad.append((max(("reg_n", "reg_m"), key=knobs.__getitem__),
                            f"{knobs['reg_m']} x {knobs['reg_n']} outputs of {accs} product(s): "
                            "more than 64 fp32 accumulators a thread"))
        if bad:
            return bad
        bm, _ = block_tile(knobs)
        if -(-rows // bm) > MAX_GRID[1]:
            bad.append(("threads_m" if not knobs["mma"] else "warps_m",
                        f"{-(-rows // bm)} blocks along the rows: more than {MAX_GRID[1]}"))
        kc, kk = knobs["k_chunk"], reduce_length(facts, knobs)
        step = 16 if knobs["mma"] else 1
        if kc and (kc < 1 or kc % step or kc >= kk):
            walk = f"K = {kk}" if knobs["splits"] == 1 else \
                f"the {kk} of K = {facts['k']} a block walks in {knobs['splits']} splits"
            bad.append(("k_chunk", f"{kc}: expected 0 or {'a multiple of 16 ' * (step > 1)}"
                                   f"below {walk}"))
        if not knobs["stage"]:
            for name, none in (("pad", 0), ("buffers", 1)):
                if knobs[name] != none:
                    bad.append((name, f"{knobs[name]} needs stage = true"))
        elif not kc:
            bad.append(("stage", "staging needs K chunks (k_chunk > 0)"))
        elif knobs["buffers"] > 1 and kk // kc < knobs["buffers"]:
            bad.append(("buffers", f"{knobs['buffers']} buffers for {kk // kc} whole K "
                                   f"chunk(s) of {kc} (K = {kk}): more buffers than chunks"))
        if knobs["buffers"] > MAX_BUFFERS:
            bad.append(("buffers", f"expected 1 to {MAX_BUFFERS} buffers, got {knobs['buffers']}"))
        if not bad and (smem := shared_bytes(facts, knobs)) > MAX_SHARED_MEMORY_BYTES:
            # (blamed on a pad past the chunk it pads where no pad would fit)
            culprit = "pad" if knobs["pad"] > kc and shared_bytes(
                facts, {**knobs, "pad": 0}) <= MAX_SHARED_MEMORY_BYTES else "k_chunk"
            bad.append((culprit, f"the staged chunks take {smem} bytes of shared memory, more "
                                   f"than {MAX_SHARED_MEMORY_BYTES} (k_chunk, tile, buffers and "
                                   "pad)"))
        return bad

    def domain(self, knob: str, facts: dict, knobs: dict) -> Sequence[Value]:
        """Powers of two, blocks of 32 to 512 threads (fewer only when the outputs are), K
        slices of at least 128, chunks of 16 to 64, 16-byte padding."""
        splits = knobs.get("splits", 1)
        rows, cols = facts["chain"][-2], facts["chain"][-1]
        if knob == "splits":
            k = facts["k"]
            more = [d for d in range(2, 65) if k % d == 0 and k // d >= 128]
            return (1, *more) if facts["splittable"] else (1,)
        if knob == "split_sum":
            return ("kernel", "last_block") if splits > 1 and not batched(facts) else ("kernel",)
        if knob == "mma":
            ok = facts["tensor_cores"] and (facts["k"] // splits) % 16 == 0
            return (False, True) if ok else (False,)
        if knob in ("warps_m", "warps_n"):
            n, unit = (rows, 16) if knob == "warps_m" else (cols, 8)
            return tuple(w for w in (1, 2, 4) if w * unit <= max(unit, _pow2_ceil(n)))
        if knob in ("frags_m", "frags_n"):
            n, unit, w = (rows, 16, knobs["warps_m"]) if knob == "frags_m" else (
                cols, 8, knobs["warps_n"])
            return tuple(f for f in (1, 2, 4, 8) if w * f * unit <= max(unit, _pow2_ceil(n)))
        if knob in ("reg_m", "reg_n"):
            return tuple(r for r in (1, 2, 4, 8) if r <= (rows if knob == "reg_m" else cols))
        if knob in ("threads_m", "threads_n"):
            n, r = (rows, knobs["reg_m"]) if knob == "threads_m" else (cols, knobs["reg_n"])
            top = min(32, _pow2_ceil(-(-n // r)))
            options = [1 << e for e in range(top.bit_length())]
            if knob == "threads_n":  # a block of 32 to 512 threads, fewer only for tiny outputs
                tm = knobs["threads_m"]
                least = min(32, _pow2_ceil(-(-rows // knobs["reg_m"])) * top)
                fit = [t for t in options if least <= tm * t <= 512]
                return tuple(fit) or (options[-1],)
            return tuple(options)
        if knob == "interleave":
            return (False, True)
        if knob == "k_chunk":
            return (0, *(c for c in (16, 32, 64) if c < reduce_length(facts, knobs)))
        if knob == "stage":
            return (False, True) if knobs["k_chunk"] else (False,)
        if knob == "transpose":  # (of the slabs a later step stages, if any)
            return (False, True)
        if knob == "pad":
            eb = min((slab_parts(s)[1] for s in facts["slabs"]), default=4)
            return (0, 16 // eb) if knobs["stage"] else (0,)
        if knob == "buffers":
            chunks = reduce_length(facts, knobs) // max(1, knobs["k_chunk"])  # (whole: staged)
            top = max(1, min(MAX_BUFFERS, chunks)) if knobs["stage"] else 1
            return tuple(range(1, top + 1))
        if knob == "unroll":
            return (0, 32)
        return super().domain(knob, facts, knobs)


MMA_TILE = ("warps_m", "warps_n", "frags_m", "frags_n")
SIMT_TILE = ("reg_m", "reg_n", "interleave", "threads_m", "threads_n", "transpose")


def batched(facts: dict) -> bool:
    """A batch of products: a free loop with more than one iteration outside the rows."""
    return any(e > 1 for e in facts["chain"][:-2])


def block_tile(knobs: dict) -> tuple[int, int]:
    """Rows x columns of outputs per block."""
    if knobs.get("mma"):
        return knobs["warps_m"] * 16 * knobs["frags_m"], knobs["warps_n"] * 8 * knobs["frags_n"]
    return knobs["threads_m"] * knobs["reg_m"], knobs["threads_n"] * knobs["reg_n"]


def reduce_length(facts: dict, knobs: dict) -> int:
    """Elements of K one block walks: K / splits, rounded up to 16 with tensor cores."""
    k = facts["k"] // max(1, knobs.get("splits", 1))
    return _round_up(k, 16) if knobs.get("mma") else k


def slab_parts(code: str) -> tuple[str, int]:
    """`ik4` -> ("ik", 4): a slab's dims (i rows, j columns, k the reduction) and element bytes."""
    dims = code.rstrip("0123456789")
    return dims, int(code[len(dims):])


def staged_slabs(facts: dict, knobs: dict) -> list[list[int]]:
    """The shapes of the shared buffers a matmul plan's K-chunk stages allocate (one buffer;
    unit dims dropped, the innermost of 2-D ones padded), with their element bytes last. A slab
    is staged when threads share it: one not indexed by j is read alike by the threads along
    the columns, so it is staged when there are several (likewise i and the rows); with tensor
    cores every lane shares its warp's tiles."""
    if not knobs["stage"]:
        return []
    bm, bn = block_tile(knobs)
    size = {"i": bm, "j": bn, "k": knobs["k_chunk"]}
    across = {"i": knobs.get("threads_n", 1), "j": knobs.get("threads_m", 1)}
    out = []
    for code in facts["slabs"]:
        dims, eb = slab_parts(code)
        if knobs["mma"]:
            shared = True
        elif "i" in dims or "j" in dims:
            shared = across["i" if "i" in dims else "j"] > 1
        else:
            shared = across["i"] * across["j"] > 1
        if not shared:
            continue
        kept = [d for d in dims if size[d] != 1]
        shape = [size[d] for d in kept] or [1]
        if knobs.get("transpose") and len(kept) >= 2 and kept[-1] == "k":
            shape[-2:] = shape[-1:-3:-1]  # tile-stage-chunks stores a [rows][k] slab k-major
        if len(shape) >= 2:
            shape[-1] += knobs["pad"]
        out.append([*shape, eb])
    return out


def attention_stage_bytes(facts: dict, knobs: dict) -> int:
    """Shared memory of an attention plan's staged K and V tiles: mma, 16-bit with padded rows;
    SIMT rows (`stage_keys`), counted at 4 bytes an element (a 16-bit row takes half)."""
    if knobs.get("mma"):
        return 2 * knobs["key_block"] * (facts["head_dim"] + STAGE_PAD) * 2 * \
            knobs.get("buffers", 1)
    return 2 * knobs["stage_keys"] * facts["head_dim"] * 4


def shared_bytes(facts: dict, knobs: dict) -> int:
    """Shared memory of a matmul plan's K-chunk stages, all buffers."""
    return sum(math.prod(s) for s in staged_slabs(facts, knobs)) * knobs["buffers"]


CLASSES: dict[str, KernelClass] = {
    c.name: c
    for c in (
        MatmulClass(
            "matmul",
            "a contraction on 2-D tiles of outputs: blocks x threads (or warps of tensor cores), "
            "K in chunks staged in shared memory",
            ("chain", "k", "tensor_cores", "splittable", "slabs"),
            (
                ("tile-split-k", ("splits", "split_sum")),
                ("tile-tensor-core", ("mma", "warps_m", "warps_n", "frags_m", "frags_n")),
                ("tile-register-tile", ("reg_m", "reg_n", "interleave", "transpose")),
                ("tile-map-2d", ("threads_m", "threads_n")),
                ("tile-chunk-reduce", ("k_chunk",)),
                ("tile-stage-chunks", ("stage",)),
                ("tile-pad-shared", ("pad",)),
                ("tile-double-buffer", ("buffers",)),
                ("tile-cp-async", ("copy",)),
                ("tile-unroll", ("unroll",)),
            ),
            ("accumulators", "column_step", "gather"),
        ),
        RowClass(
            "row_reduce",
            "one block per row of a reduction (RMSNorm, softmax): the threads share the "
            "reduction (strided + tile.combine) and the epilogue",
            ("rows", "extent"),
            (
                ("tile-map-grid", ("grid_dims",)),
                ("tile-cooperative-reduce", ("threads", "vector")),
                ("tile-stage-inputs", ("stage_inputs",)),
                ("tile-cp-async", ("copy",)),
                ("tile-unroll", ("unroll",)),
            ),
            optional_facts=("contiguous",),
        ),
        AttentionClass(
            "attention",
            "flash-attention rows on blocks, `rows` a block: each row's threads share the head "
            "dim (q.k combined per key, the accumulator split across them); or (f16/bf16, "
            "mma) warps of `frags_m` 16-row tiles on tensor cores, `key_block` keys a step; "
            "causal key loops stop at the block's (warp's) last row; `key_splits` slices of the "
            "keys on block.z (split-KV)",
            ("rows", "head_dim", "keys"),
            (
                ("tile-map-grid", ("grid_dims",)),
                ("tile-attention-mma", ("mma", "warps", "frags_m", "key_block", "stage",
                                        "key_splits")),
                ("tile-attention-rows", ("threads", "group_heads", "rows", "stage_keys",
                                         "lane_keys", "head_parts", "key_splits")),
                ("tile-stage-inputs", ("stage_inputs",)),
                ("tile-double-buffer", ("buffers",)),
                ("tile-cp-async", ("copy",)),
                ("tile-unroll", ("unroll",)),
            ),
            optional_facts=("own_keys", "tensor_cores", "queries", "kv_group"),
            limit="head_dim",
        ),
        PointwiseClass(
            "pointwise",
            "outer free loops on blocks, the innermost free loop on threads (strided when "
            "longer than the block) or split in chunks over block.x and threads; any kernel "
            "can take it",
            ("chain", "leaf"),
            (
                ("tile-map-grid", ("grid_dims", "leave_innermost", "chunk", "tile_rows")),
                ("tile-map-threads", ("threads",)),
                ("tile-stage-inputs", ("stage_inputs",)),
                ("tile-cp-async", ("copy",)),
                ("tile-unroll", ("unroll",)),
            ),
            optional_facts=("crossed", "halo"),
        ),
    )
}


# --------------------------------------------------------------------------------------------
# the space


def space(kind: str, facts: tuple[tuple[str, Value], ...]) -> Iterator[Plan]:
    """Every legal plan of class `kind` for these facts, knob by knob in the class's order (the
    tuner's tree: one decision per level), each knob over `KernelClass.domain`."""
    cls = CLASSES[kind]
    fd = dict(facts)

    def walk(knobs: dict) -> Iterator[dict]:
        todo = [n for n in cls.knob_names(knobs) if n not in knobs]
        if not todo:
            if not cls.violations(fd, knobs):
                yield knobs
            return
        name = todo[0]
        for v in cls.domain(name, fd, knobs):
            yield from walk({**knobs, name: v})

    for knobs in walk({}):
        yield Plan(kind, facts, tuple((n, knobs[n]) for n in cls.knob_names(knobs)))


def sample(kind: str, facts: tuple[tuple[str, Value], ...], rng, tries: int = 200) -> Plan:
    """A random legal plan of class `kind`: each knob drawn uniformly from its domain given the
    earlier ones (`rng`: a `random.Random`); the first legal plan if none is drawn in `tries`."""
    cls, fd = CLASSES[kind], dict(facts)
    for _ in range(tries):
        knobs: dict = {}
        while todo := [n for n in cls.knob_names(knobs) if n not in knobs]:
            knobs[todo[0]] = rng.choice(list(cls.domain(todo[0], fd, knobs)))
        if not cls.violations(fd, knobs):
            return Plan(kind, facts, tuple((n, knobs[n]) for n in cls.knob_names(knobs)))
    return next(space(kind, facts))


def retarget(plan: Plan, facts: tuple[tuple[str, Value], ...]) -> Plan:
    """The same plan for other facts of the same kernel (e.g. a smaller shape for checking a
    tuned plan): each knob kept where still legal, else the nearest legal value of its domain."""
    cls, fd = plan.cls, dict(facts)
    knobs: dict = {}
    for name in itertools.chain(cls.knob_names(plan.knob_dict)):
        want = plan.knob(name)
        options = list(cls.domain(name, fd, knobs)) or [want]
        if want not in options:
            if isinstance(want, int) and not isinstance(want, bool):
                options.sort(key=lambda v: (abs(v - want), v))
            want = options[0]
        knobs[name] = want
    new = Plan(plan.kind, facts, tuple(knobs.items()))
    return new if not new.violations() else next(space(plan.kind, facts), new)


class PlanError(VerifyException):
    """An illegal plan, in one line: the kernel, the knob and why (a user error)."""

    def __init__(self, kernel: str, knob: str, why: str):
        self.kernel, self.knob, self.why = kernel, knob, why
        what = "kind" if knob == "kind" else f"knob {knob}"  # (the plan file's "kind" field)
        super().__init__(f"kernel @{kernel}: {what}: {why}")
