"""numba kernels of the tree miners, one module per concern.

* :mod:`~dpcore.redescriptions.kernels.layout` — the heap layout of a tree (``nodes``,
  ``perm``, ``leaf_of_row``), routing and re-laying out rows, the true leaf×leaf table;
* :mod:`~dpcore.redescriptions.kernels.moves` — which splits a node may take, the MCMC
  proposal and random growth, and :func:`apply_move`, the structural half of every step;
* :mod:`~dpcore.redescriptions.kernels.hastings` — the proposal ratio q(T′→T)/q(T→T′) and
  :func:`hastings_accept`, the decision half of every step, and faithful mode's stopping rule;
* :mod:`~dpcore.redescriptions.kernels.scores` — the Gini score (Δ = 2) and the pair
  purity (Δ = 1);
* :mod:`~dpcore.redescriptions.kernels.expmech` — createDTExpMech;
* :mod:`~dpcore.redescriptions.kernels.reselect` — extractReds' search on one noisy table,
  for the intervals' bootstrap (post-processing of released counts, 0 ε; it reads no data).

The chains the miners run (strict and faithful mode) are on row bitsets,
:mod:`dpcore.redescriptions.bitset_mcmc`; they use the same moves, proposal ratio and
acceptance (faithful chains run without the proposal ratio, as the paper accepts;
docs/PRIVACY.md §8). Nothing here is differentially private by
itself: the kernels read coded data, and ``dpcore.redescriptions.trees`` charges the ε of
every chain or tree before calling them (docs/PRIVACY.md §7). The names below are the
kernels' public API, re-exported so that ``kernels.<name>`` keeps working.
"""

from dpcore.redescriptions.kernels.expmech import expmech_tree, split_utilities
from dpcore.redescriptions.kernels.hastings import (
    growth_options,
    hastings_accept,
    hastings_workspace,
    log_growth_probability,
    log_proposal_ratio,
    metropolis_hastings_accept,
    move_options,
    scores_stabilised,
)
from dpcore.redescriptions.kernels.layout import (
    ABSENT,
    ATTR,
    END,
    EQUALS,
    GROW,
    KEPT,
    KIND,
    LEAF,
    MISSING,
    MULTIWAY,
    NCHILD,
    SPLIT,
    START,
    THR,
    THRESHOLD,
    child_of,
    contingency,
    count_internal,
    init_tree,
    internal_nodes,
    leaf_rows_for_codes,
    mark_absent,
    node_depths,
    partition_node,
    relayout,
    stop_node,
    subtree_leaves,
    tree_capacity,
)
from dpcore.redescriptions.kernels.moves import (
    apply_move,
    grow_structure,
    growth_stops,
    kept_stay_useful,
    propose_move,
    propose_pair_move,
    random_split,
    random_split_move,
    replace_split,
    used_in_kept_subtrees,
    used_on_path,
    useful_at,
    valid_move,
)
from dpcore.redescriptions.kernels.scores import (
    gini_contribution,
    pair_table,
    purity_contribution,
    purity_from_table,
)

__all__ = [
    "ABSENT", "ATTR", "END", "EQUALS", "GROW", "KEPT", "KIND", "LEAF", "MISSING", "MULTIWAY",
    "NCHILD", "SPLIT", "START", "THR", "THRESHOLD",
    "apply_move", "child_of", "contingency", "count_internal", "expmech_tree",
    "gini_contribution", "grow_structure", "growth_options", "growth_stops",
    "hastings_accept", "hastings_workspace", "init_tree", "internal_nodes",
    "kept_stay_useful", "leaf_rows_for_codes", "log_growth_probability",
    "log_proposal_ratio", "mark_absent",
    "metropolis_hastings_accept", "move_options", "node_depths", "pair_table",
    "partition_node", "propose_move", "propose_pair_move", "purity_contribution",
    "purity_from_table", "random_split", "random_split_move", "relayout",
    "replace_split", "scores_stabilised", "split_utilities", "stop_node", "subtree_leaves",
    "tree_capacity", "used_in_kept_subtrees", "used_on_path", "useful_at", "valid_move",
]
