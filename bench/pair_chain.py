"""CPU per iteration of MCMCTreePair's strict pair chain on CMS-2-k (issue 32).

Captures the arguments of the first ``mcmc_tree_pair_bits`` calls a seeded ``mine()``
makes (MCMCTreePair, strict, ε = 1, d 4) on the benchmark's CMS-2-k data, then re-runs the
chain kernel alone on copies of them, ``--iters`` iterations per chain, and reports
process CPU (``getrusage``) per iteration with the 1-minute load. ``--profile`` adds what a
step does on average: leaves recounted, popcount passes and words, moves accepted.

Usage::

    nice python -m bench.pair_chain [--k 16] [--iters 10000] [--chains 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

import numpy as np

from bench.settings import CMS_BASE_ROWS, CMS_BOOL, CMS_NUMERIC, DATA_SEED, RUN_SEED


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def capture_chains(k: int, chains: int) -> list[tuple]:
    """The argument tuples of the first ``chains`` pair chains of a seeded MCMCTreePair run
    on CMS-2-``k`` (the chains themselves run 1 iteration; the tuples are copied before)."""
    from dpcore.data.samples import generate_cms_like_dataset
    from dpcore.redescriptions import bitset_mcmc as B
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import family_type
    from dpcore.registry import MCMCTREEPAIR

    data = generate_cms_like_dataset(CMS_BASE_ROWS * k, n_bool=CMS_BOOL,
                                     n_numeric=CMS_NUMERIC, seed=DATA_SEED)
    captured: list[tuple] = []
    real = B.mcmc_tree_pair_bits

    def spy(*args):
        if len(captured) < chains:
            captured.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
        return real(*args)

    B.mcmc_tree_pair_bits = spy
    try:
        params = family_type(MCMCTREEPAIR)(algorithm=MCMCTREEPAIR, in_tr=chains, mc_iter=10,
                                           depth=4).validate()
        mine(data, params, rng=np.random.default_rng(RUN_SEED), seed=RUN_SEED, threads=1)
    finally:
        B.mcmc_tree_pair_bits = real
    return captured


def run_chain(args: tuple, iters: int, seed: int, stats=None) -> np.ndarray:
    """Run one captured chain for ``iters`` iterations from its own start; its trace."""
    from dpcore.redescriptions import bitset_mcmc as B

    a = list(args)
    # mcmc_tree_pair_bits(cands_l, bits_l, off_l, fan_l, depth_l, nodes_l, cands_r, bits_r,
    #   off_r, fan_r, depth_r, nodes_r, y, n_classes, n_rows, max_depth, eps, mc_iter, rng,
    #   trace, stats, hastings, count_scale)
    a[5], a[11] = a[5].copy(), a[11].copy()
    a[17] = iters
    a[18] = np.random.default_rng(seed)
    a[19] = np.zeros(iters, dtype=np.float64)
    a[20] = stats
    B.mcmc_tree_pair_bits(*a)
    return a[19]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--iters", type=int, default=10_000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--trace-digest", action="store_true",
                    help="print a digest of every chain's trace (same draws ⇒ same digest)")
    ap.add_argument("--profile", action="store_true",
                    help="count what the steps do (interpreted: slow, use --iters ≤ 500)")
    ap.add_argument("--replay", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.replay:
        return _profile_replay(ns.replay, ns.iters)
    chains = capture_chains(ns.k, ns.chains)
    if ns.profile:
        return _profile(chains, ns.iters)
    run_chain(chains[0], 50, 0)   # compiled or loaded before any timing
    for rep in range(ns.repeats):
        for c, args in enumerate(chains):
            load = os.getloadavg()[0]
            t0 = _cpu()
            trace = run_chain(args, ns.iters, 1000 + c)
            cpu = _cpu() - t0
            line = (f"rep {rep} chain {c}: {cpu:.2f} s CPU, {1e6 * cpu / ns.iters:.1f} µs/iter, "
                    f"load {load:.1f}")
            if ns.trace_digest:
                import hashlib
                line += " trace " + hashlib.sha256(trace.tobytes()).hexdigest()[:16]
            print(line, flush=True)
    return 0


_ARG_KEYS = tuple(f"a{i}" for i in range(23))


def _profile(chains: list[tuple], iters: int) -> int:
    """Replay every captured chain with numba disabled (a child process, so that the
    module-level helpers can be wrapped and counted)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for c, args in enumerate(chains):
            path = os.path.join(tmp, f"chain{c}.npz")
            np.savez(path, **{k: (v if isinstance(v, np.ndarray) else np.array(v))
                              for k, v in zip(_ARG_KEYS, args)
                              if not isinstance(v, np.random.Generator) and v is not None})
            env = dict(os.environ, NUMBA_DISABLE_JIT="1")
            subprocess.run([sys.executable, "-m", "bench.pair_chain", "--replay", path,
                            "--iters", str(iters)], env=env, check=True)
    return 0


def _profile_replay(path: str, iters: int) -> int:
    from dpcore.redescriptions import bitset_mcmc as B
    from dpcore.redescriptions.kernels.layout import SPLIT

    z = np.load(path)
    args = [z[k] if k in z.files else None for k in _ARG_KEYS]
    for i in (3, 9, 13, 14, 15, 21, 22):
        args[i] = args[i].item()
    counts = {"lanes popcounted": 0, "passes over a moved node": 0,
              "popcount words": 0, "count_bits words": 0,
              "node lanes (nodes counted)": 0, "fill_pair_bits calls": 0,
              "bitset words written": 0, "accepted": 0, "leaves recounted": 0}
    real = {n: getattr(B, n) for n in ("and_count", "count_bits", "_node_lanes",
                                        "_fill_pair_bits", "hastings_accept",
                                        "_recount_moved")}

    def and_count(a, b):
        counts["lanes popcounted"] += 1
        counts["passes over a moved node"] += 1
        counts["popcount words"] += a.size
        return real["and_count"](a, b)

    def count_bits(a):
        counts["count_bits words"] += a.size
        return real["count_bits"](a)

    def node_lanes(*a):
        counts["node lanes (nodes counted)"] += 1
        return real["_node_lanes"](*a)

    def fill_pair_bits(h, nodes, cands, fanout, child_bits, child_offset, node_bits, root,
                       memo):
        counts["fill_pair_bits calls"] += 1
        real["_fill_pair_bits"](h, nodes, cands, fanout, child_bits, child_offset, node_bits,
                                root, memo)
        # Each split node at or below h writes its two children's bitsets.
        n_int = sum(1 for u in range(nodes.shape[1])
                    if nodes[SPLIT, u] >= 0 and _below(u, h, fanout))
        counts["bitset words written"] += 2 * n_int * node_bits.shape[1]

    def recount(h, on_left, nodes, fanout, *rest):
        counts["leaves recounted"] += len(B.subtree_leaves(h, nodes, fanout))
        return real["_recount_moved"](h, on_left, nodes, fanout, *rest)

    def accept(*a):
        ok = real["hastings_accept"](*a)
        counts["accepted"] += int(ok)
        return ok

    B.and_count = and_count
    B.count_bits, B._node_lanes = count_bits, node_lanes
    B._fill_pair_bits, B.hastings_accept, B._recount_moved = fill_pair_bits, accept, recount
    run_chain(tuple(args), iters, 1000)
    print(f"{os.path.basename(path)}, {iters} iterations, words per bitset "
          f"{args[1].shape[1]}; per iteration:")
    for k, v in counts.items():
        print(f"  {k}: {v / iters:.2f}")
    return 0


def _below(u: int, h: int, fanout: int) -> bool:
    """True when heap node ``u`` is ``h`` or below it."""
    while u > h:
        u = (u - 1) // fanout
    return u == h


if __name__ == "__main__":
    sys.exit(main())
