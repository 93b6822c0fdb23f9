"""Plain-Python references for the sequence kernels (dpcore.sequences.kernels), written for
clarity rather than speed: containment, supports, GSP candidates, consecutive-pattern
compression, sequence reconstruction (Xu et al. 2015, Algorithm 2, with the same tie
rules as the kernel), shrinking, and brute-force frequent sequences."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations


def is_subsequence(seq, record) -> bool:
    """seq ⊆ record, gaps allowed."""
    it = iter(record)
    return all(any(x == y for y in it) for x in seq)


def supports(records, patterns) -> dict[tuple, int]:
    """Number of records containing each pattern."""
    return {tuple(p): sum(is_subsequence(p, r) for r in records) for p in patterns}


def all_subsequences(record, max_length=None) -> set[tuple]:
    """Every distinct non-empty subsequence of a (short) record."""
    n = len(record)
    top = n if max_length is None else min(n, max_length)
    return {tuple(record[i] for i in idx) for m in range(1, top + 1)
            for idx in combinations(range(n), m)}


def frequent_sequences(records, min_support, max_length=None) -> dict[tuple, int]:
    """Brute force: every sequence contained in ≥ min_support records."""
    count: Counter = Counter()
    for r in records:
        count.update(all_subsequences(list(r), max_length))
    return {p: c for p, c in count.items() if c >= min_support}


def gsp_candidates(frequent, k) -> set[tuple]:
    """All k-sequences over the frequent items whose (k−1)-subsequences are all frequent."""
    frequent = {tuple(s) for s in frequent}
    items = sorted({x for s in frequent for x in s})
    if k == 2:
        return {(a, b) for (a,) in frequent for (b,) in frequent}
    out = set()
    for s1 in frequent:
        for x in items:
            cand = s1 + (x,)
            if all(cand[:t] + cand[t + 1:] in frequent for t in range(k)):
                out.add(cand)
    return out


def compress(seq, period, k) -> list:
    """Left-to-right: a run p^j of a ``period``-item pattern with j > k becomes p^k."""
    seq, out, i, n = list(seq), [], 0, len(seq)
    while i < n:
        if i + 2 * period <= n:
            p, j = seq[i:i + period], 1
            while seq[i + j * period:i + (j + 1) * period] == p:
                j += 1
            if j > k:
                out += p * k
                i += j * period
                continue
        out.append(seq[i])
        i += 1
    return out


def reconstruct(seq, cands, k, lmax) -> list:
    """Algorithm 2, untruncated: ties by c-score, then more distinct items, then the
    lexicographically smaller candidate; item ties by the smaller item."""
    contained = sorted(c for c in {tuple(c) for c in cands} if is_subsequence(c, seq))
    if not contained:
        return []
    remaining = set(contained)
    gnodes = {c[:-1] for c in contained}

    def children(g):
        return sum(1 for c in remaining if c[:-1] == g)

    def key(c):
        subs = {c[:t] + c[t + 1:] for t in range(k)}
        score = sum(children(u) for u in subs if u in gnodes)
        return (-score, -len(set(c)), c)

    best = min(remaining, key=key)
    out = list(best)
    remaining.remove(best)
    while len(out) < lmax:
        gn = {g for g in gnodes if is_subsequence(g, out)}
        kids = [c for c in remaining if c[:-1] in gn]
        if kids:
            count = Counter(c[-1] for c in kids)
            x = min(count, key=lambda i: (-count[i], i))
            remaining -= {c for c in kids if c[-1] == x}
            out.append(x)
        else:
            if not remaining:
                break
            best = min(remaining, key=key)
            out += list(best)
            remaining.remove(best)
    return out


def shrink(seq, cands, k, lmax, truncate=True) -> list:
    """Shrinking of one record: deletion, compression (periods 1–3), reconstruction."""
    seq = list(seq)
    if len(seq) <= lmax:
        return seq
    relevant = {x for c in cands for x in c}
    seq = [x for x in seq if x in relevant]
    for period in (1, 2, 3):
        if len(seq) <= lmax:
            break
        seq = compress(seq, period, k)
    if len(seq) > lmax:
        seq = reconstruct(seq, cands, k, lmax)
        if truncate:
            seq = seq[:lmax]
    return seq


def _replay_concentrated(lv, bound, remaining, calls) -> int:
    """A level that took the rest of the pool (``remaining``) and verified all of C_k on
    records shrunk to ``bound``: check its record, append its call, return the pool left."""
    assert lv.prune_sensitivity == 0
    if not lv.verify_sensitivity:   # stopped as too noisy: nothing spent
        return remaining
    assert lv.verify_length == bound and lv.verify_epsilon_nano == remaining
    assert lv.verify_sensitivity == min(math.comb(bound, lv.length), lv.candidates)
    calls.append((remaining, lv.verify_sensitivity))
    return 0


def _reused_bound_plan(n_candidates, k, bound, level_nano, threshold):
    """(Δ, records' bound) of a non-pruned strict PFS2 level verifying on a carried bound,
    re-decided from public values: the halving rule, or the bound the noise gives."""
    from dpcore.sequences.strategy import noise_bound, verify_sensitivity
    delta, length = verify_sensitivity(n_candidates, k, bound)
    shorter = noise_bound(n_candidates, k, bound, delta, level_nano, threshold)
    if shorter is None:
        return delta, length
    return min(math.comb(shorter, k), n_candidates), shorter


def replay_level_calls(res, params):
    """Every level call (nano-ε, sensitivity) of a strict run, and the budget it left,
    rebuilt from the RELEASED result and public parameters only (N̂, L_f, lmax, the
    released frequent sequences and each level's released record: |C_k|, the bound it read
    from a relevant-length histogram, whether it pruned, and |C′_k|), through the public
    allocation rules of dpcore.sequences.strategy. For PFS2 it also re-decides, from those
    values alone, whether each level buys a relevant-length histogram and which bound it
    prunes with, and asserts that the run decided the same.

    Returns (calls, unspent pool, per level (its budget, pruning part, verification part,
    the length bound its plan used)).
    """
    from dpcore.sequences.candidates import generate_candidates
    from dpcore.sequences.params import PFS2, PRUNE, VERIFY, plan_budget
    from dpcore.sequences.strategy import (
        LENGTH_SHARE,
        VERIFY_LENGTH_SHARE,
        concentrate_bound,
        level_budget,
        plausible_length,
        split_level_budget,
        verify_budget,
        verify_sensitivity,
        wants_length_histogram,
    )
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    remaining = plan.get(PRUNE, 0) + plan[VERIFY]
    threshold = params.theta * max(res.noisy_records, 1.0)
    calls, parts = [], []
    # level 1's candidates are the declared alphabet (public); the reference weight is the
    # released level-1 supports, each item not released counted at θ·N̂
    ref_length = res.lmax
    support = {p.items[0]: p.noisy_support for p in res.patterns if p.length == 1}
    n_items = res.levels[0].candidates if res.levels else 0
    ref_weight = sum(support.values()) + (n_items - len(support)) * threshold
    for lv in res.levels:
        left = res.max_frequent_length - lv.length + 1
        budget = level_budget(remaining, left, lv.candidates, threshold)
        if budget < 2:
            break
        if params.algorithm != PFS2:
            if lv.verify_sensitivity:
                calls.append((budget, lv.verify_sensitivity))
                remaining -= budget
            continue
        concentrated = concentrate_bound(lv.candidates, lv.length, max(lv.length, ref_length),
                                         budget, remaining, threshold)
        if concentrated is not None:   # the rest of the pool, all of C_k, the last level
            assert lv is res.levels[-1]
            remaining = _replay_concentrated(lv, concentrated, remaining, calls)
            break
        prune, verify = split_level_budget(budget, plan[PRUNE], plan[VERIFY])
        k, length_nano = lv.length, int(prune * LENGTH_SHARE)
        best, weight = k, 0.0
        if k > 1:
            earlier = [p.items for p in res.patterns if p.length == k - 1]
            cands = generate_candidates(earlier, k)
            assert cands.shape[0] == lv.candidates
            weight = sum(support[x] for x in {int(x) for x in cands.ravel()})
            best = plausible_length(max(k, ref_length), weight, ref_weight, k)
        wants = wants_length_histogram(
            lv.candidates, k, res.lmax, prune, verify, threshold, params.zeta, length_nano,
            res.noisy_records, params.eta, carried=max(k, ref_length), plausible=best)
        assert wants == (lv.length_epsilon_nano > 0), f"level {k}: histogram decision"
        bound = max(k, ref_length)
        if lv.length_epsilon_nano:
            assert lv.length_epsilon_nano == length_nano
            assert k <= lv.relevant_length <= bound
            bound = ref_length = lv.relevant_length
            ref_weight = weight
            calls.append((lv.length_epsilon_nano, 1))
            prune -= lv.length_epsilon_nano
            remaining -= lv.length_epsilon_nano
        parts.append((budget, prune + lv.length_epsilon_nano, verify, bound))
        if lv.prune_sensitivity:
            assert lv.prune_epsilon_nano == prune and lv.prune_length == bound
            calls.append((prune, lv.prune_sensitivity))
            remaining -= prune
            kept = lv.kept_after_pruning
            if lv.verify_length_epsilon_nano:   # a bound read for the survivors' records
                assert lv.verify_length_epsilon_nano == int(verify * VERIFY_LENGTH_SHARE)
                assert k <= lv.verify_length <= bound
                calls.append((lv.verify_length_epsilon_nano, 1))
                verify -= lv.verify_length_epsilon_nano
                remaining -= lv.verify_length_epsilon_nano
                delta = math.comb(lv.verify_length, k)
                assert lv.verify_sensitivity in (0, min(delta, kept))
            elif kept:
                delta, length = verify_sensitivity(kept, k, bound)
                assert lv.verify_sensitivity in (0, delta)
                assert lv.verify_sensitivity == 0 or lv.verify_length == length
            if lv.verify_sensitivity:
                share = verify_budget(verify, lv.verify_sensitivity, threshold, left)
                calls.append((share, lv.verify_sensitivity))
                remaining -= share
        elif lv.verify_sensitivity:
            if ref_length < res.lmax:   # a bound read earlier: reused for the verification
                assert (lv.verify_sensitivity, lv.verify_length) == _reused_bound_plan(
                    lv.candidates, k, bound, prune + verify, threshold)
            else:
                assert (lv.verify_sensitivity, lv.verify_length) == (lv.candidates, 0)
            calls.append((prune + verify, lv.verify_sensitivity))
            remaining -= prune + verify
        if lv.verify_length_epsilon_nano and lv.frequent:
            # the miner carries the bound read for the survivors to the later levels, with
            # the released level-1 supports of the items of FS_k as its weight
            ref_length = lv.verify_length
            ref_weight = sum(support[x] for x in {x for p in res.patterns if p.length == k
                                                  for x in p.items})
    return calls, remaining, parts
