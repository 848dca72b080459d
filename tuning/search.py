"""SP-MCTS (single-player Monte Carlo tree search) over a plan space.

Why this search: a kernel's plan space is a tree of decisions (the class, then each knob given
the earlier ones) far too large to enumerate (a matmul has >100k legal plans), and evaluations
are expensive (a GPU run or a lowering plus ptxas). SP-MCTS (Schadd et al., "Single-Player
Monte-Carlo Tree Search", 2008) spends them where the rewards have been good, and its variance
term keeps exploring subtrees whose results are spread out, where one very fast plan may hide.

The tree is given by three functions (`Tree`): which knob to decide next given the decided ones,
that knob's legal values, and a rollout that completes a partial plan (the planner's heuristic).
A reward is log(default time / time): 0 for the heuristic's plan, positive when faster. An
evaluation that fails (an illegal or unlowerable plan) earns a low reward and is not returned.

    results = sp_mcts(tree, evaluate, budget=64)     # [Result(knobs, time_us)], fastest first
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

HEURISTIC_ROLLOUTS = 0.25  # the rest descend at random: an unbiased look into the subtree
BEST_WEIGHT = 0.3  # of a node's best reward in its value, the rest its mean (test/python/tuning)
FAILED_REWARD = -3.0  # a failed plan: as bad as one e^3 (20x) slower than the default


@dataclass(frozen=True)
class Tree:
    next_knob: Callable[[dict], str | None]  # None: the partial plan is complete
    domain: Callable[[str, dict], list]  # the legal values of a knob given the decided ones
    rollout: Callable[[dict], dict | None]  # a complete plan extending a partial one, or None


@dataclass(frozen=True)
class Result:
    knobs: dict
    time_us: float | None


def plan_id(knobs: dict) -> str:
    """The canonical text of a plan: the identity of an evaluation."""
    return json.dumps(knobs, sort_keys=True)


@dataclass
class _Node:
    knobs: dict
    visits: int = 0
    total: float = 0.0
    squares: float = 0.0
    children: dict = field(default_factory=dict)  # plan_id(child knobs) -> _Node
    untried: list | None = None  # child knob dicts not expanded yet
    exhausted: bool = False
    best: float = -math.inf  # the best reward found below

    def add(self, reward: float) -> None:
        self.visits += 1
        self.total += reward
        self.squares += reward * reward
        self.best = max(self.best, reward)

    def score(self, parent_visits: int, c: float, d: float) -> float:
        """UCT on the subtree's mean reward blended with its best (`BEST_WEIGHT`), plus the
        SP-MCTS variance term sqrt((sum r^2 - n mean^2 + D) / n). The best counts because a
        tuner wants the fastest plan, not a good average: a matmul's subtree averages far below
        a row reduction's (most random matmul plans are slow) while holding the fastest plans."""
        if not self.visits:
            return math.inf
        mean = self.total / self.visits
        explore = c * math.sqrt(2 * math.log(parent_visits) / self.visits)
        spread = math.sqrt(max(0.0, self.squares - self.visits * mean * mean + d) / self.visits)
        value = (1 - BEST_WEIGHT) * mean + BEST_WEIGHT * self.best
        return value + explore + spread


class _Search:
    def __init__(self, tree: Tree, evaluate, budget: int, known: dict, seed: int, c: float,
                 d: float, on_result):
        self.tree, self.evaluate, self.budget = tree, evaluate, budget
        self.rng = random.Random(seed)
        self.c, self.d, self.on_result = c, d, on_result
        self.results = {pid: Result(json.loads(pid), t) for pid, t in known.items()}
        self.spent = len(self.results)  # stored evaluations count against the budget
        self.baseline = 1.0

    def time_of(self, plan: dict | None) -> tuple[bool, float | None]:
        """(known or evaluated now, time); (False, None) when the budget is spent."""
        if plan is None:
            return True, None
        pid = plan_id(plan)
        if pid in self.results:
            return True, self.results[pid].time_us
        if self.spent >= self.budget:
            return False, None
        self.spent += 1
        try:
            t = self.evaluate(plan)
        except Exception:  # noqa: BLE001 - an evaluation that raises is a failed plan
            t = None
        t = t if t is not None and math.isfinite(t) and t > 0 else None
        self.results[pid] = r = Result(plan, t)
        if self.on_result:
            self.on_result(r)
        return True, t

    def reward(self, t: float | None) -> float:
        return math.log(self.baseline / t) if t else FAILED_REWARD

    def expand(self, node: _Node) -> list:
        if node.untried is None:
            name = self.tree.next_knob(node.knobs)
            values = self.tree.domain(name, node.knobs) if name is not None else []
            node.untried = [{**node.knobs, name: v} for v in values]
            self.rng.shuffle(node.untried)
        return node.untried

    def child(self, node: _Node, knobs: dict) -> _Node:
        return node.children.setdefault(plan_id(knobs), _Node(knobs))

    def seed(self, root: _Node, plan: dict, t: float | None) -> None:
        """The heuristic's plan backed up along its own path (its kind, then its knobs), so the
        search starts knowing where the default lives."""
        node, r = root, self.reward(t)
        node.add(r)
        while (name := self.tree.next_knob(node.knobs)) is not None and name in plan:
            node = self.child(node, {**node.knobs, name: plan[name]})
            node.add(r)

    def iterate(self, root: _Node) -> bool:
        """One selection, expansion, simulation and backup; False when nothing was learnt
        (the budget is spent)."""
        path, node = [root], root
        while True:
            if self.tree.next_knob(node.knobs) is None:  # a complete plan: evaluate it
                ok, t = self.time_of(self.tree.rollout(node.knobs) or node.knobs)
                if not ok:
                    return False
                node.exhausted = True
                break
            untried = self.expand(node)
            if untried:
                node = self.child(node, untried.pop())
                path.append(node)
                ok, t = self.simulate(node, path)
                if not ok:
                    return False
                break
            live = [ch for ch in node.children.values() if not ch.exhausted]
            if not live:
                node.exhausted = True
                t = None
                break
            node = max(live, key=lambda ch: ch.score(path[-1].visits or 1, self.c, self.d))
            path.append(node)
        r = self.reward(t)
        for n in path:
            n.add(r)
        for parent in reversed(path[:-1]):  # a node whose every child is done is done
            if parent.untried == [] and all(ch.exhausted for ch in parent.children.values()):
                parent.exhausted = True
        return True

    def simulate(self, node: _Node, path: list) -> tuple[bool, float | None]:
        """The heuristic's completion of the node (half the time, and only where that plan is
        new); else a random descent to a plan, each step a node on `path` (so its reward is
        backed up and exhaustion is tracked)."""
        if self.rng.random() < HEURISTIC_ROLLOUTS:
            plan = self.tree.rollout(node.knobs)
            if plan is not None and plan_id(plan) not in self.results:
                return self.time_of(plan)
        while self.tree.next_knob(node.knobs) is not None:
            options = [k for k in self.expand(node)]
            options += [ch.knobs for ch in node.children.values() if not ch.exhausted]
            if not options:
                node.exhausted = True
                return True, None
            knobs = self.rng.choice(options)
            if knobs in node.untried:
                node.untried.remove(knobs)
            node = self.child(node, knobs)
            path.append(node)
        node.exhausted = True
        return self.time_of(self.tree.rollout(node.knobs) or node.knobs)


def sp_mcts(tree: Tree, evaluate: Callable[[dict], float | None], budget: int,
            known: dict[str, float | None] | None = None, seed: int = 0, c: float = 0.3,
            d: float = 0.01, max_iterations: int | None = None,
            on_result: Callable[[Result], None] | None = None,
            deadline: float | None = None) -> list[Result]:
    """Search for fast plans with `budget` evaluations. `known`: plan_id -> time of earlier
    evaluations (they count against the budget and are never repeated). The heuristic's plan
    (`tree.rollout({})`) is evaluated first. `on_result` sees each new evaluation as it
    finishes; `deadline` (time.monotonic()) stops the search between evaluations. Returns every
    plan with a time, fastest first."""
    search = _Search(tree, evaluate, budget, dict(known or {}), seed, c, d, on_result)
    default = tree.rollout({})
    _, t_default = search.time_of(default)
    times = sorted(r.time_us for r in search.results.values() if r.time_us)
    search.baseline = t_default or (times[len(times) // 2] if times else 1.0)
    root = _Node({})
    if default is not None:
        search.seed(root, default, t_default)
    limit = max_iterations if max_iterations is not None else 50 * max(1, budget)
    for _ in range(limit):
        if root.exhausted or (deadline is not None and time.monotonic() > deadline):
            break
        if not search.iterate(root):
            break
    done = [r for r in search.results.values() if r.time_us is not None]
    return sorted(done, key=lambda r: r.time_us)
