"""The tree-pair diagram (paper Figure 1) as a Sankey of the noisy intersections.

Rows flow from the left-view tree's root (left edge) through its splits to its leaves,
across to the right-view tree's leaves, and up through its splits to its root (right
edge). A flow's width is a noisy count: the band from left leaf *i* to right leaf *j*
is ``ExtractionRecord.noisy_table[i][j]`` (negative noisy counts drawn as 0), and a
tree band is the sum of the cells below it — post-processing of the released table.
Each leaf (or collapsed subtree) is labelled with the split test on the edge that leads to
it (e.g. ``L3 [LAB_BNP > 400]``); an inner node says its split on hover, as each tree band
does, because a label written beside an inner node runs into the next column of bars.
With the table's public noise scale, each band's tooltip also carries the 90 % interval of
the true count it stands for (:class:`dpcore.redescriptions.intervals.FlowNoise`, 0 ε).

At 20 × 16 leaves the full picture has hundreds of crossing bands, so by default only
the selected redescription's own leaves are drawn (orange), with the splits on their
paths: a subtree whose leaves are all in the query is one orange node, a subtree with
none of them one grey node ("other: … (k leaves)"), and the flows between two grey
nodes are left out. The full trees are one toggle away
(:func:`render_tree_pair`). Trees and noisy counts are DP releases, so analysts may
see this diagram.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from dpcore.redescriptions.intervals import DEFAULT_COVERAGE, FlowNoise
from dpcore.redescriptions.results import ExtractionRecord, TreeNode, TreeRecord

__all__ = ["Unit", "tree_units", "tree_pair_figure", "render_tree_pair", "QUERY_COLOR",
           "OTHER_COLOR", "PATH_COLOR"]

QUERY_COLOR = "#f58518"
PATH_COLOR = "#4c78a8"
OTHER_COLOR = "#b0b0b0"
_QUERY_LINK = "rgba(245, 133, 24, 0.75)"
_PATH_LINK = "rgba(76, 120, 168, 0.35)"
_OTHER_LINK = "rgba(160, 160, 160, 0.30)"
_MIDDLE_LINK = "rgba(160, 160, 160, 0.40)"
_LABEL_CHARS = 34
#: Pixels between two nodes of a column (room for a label).
_PAD = 16
#: Where the columns stand (fraction of the plot's width; the right tree mirrors the left):
#: the roots, the deepest inner nodes, and the leaves. A left leaf's label has the middle
#: (from _UNIT_X to the right leaves), a right leaf's the gap up to the right tree's
#: deepest inner nodes.
_ROOT_X, _INNER_X, _UNIT_X = 0.01, 0.12, 0.30
#: The right leaves stand this much further left than the mirror of the left ones, so
#: that their labels have as much room as the left ones.
_UNIT_X_RIGHT_SHIFT = 0.06
#: Pixels above the plot for the views' names.
_HEADING_PX = 18


@dataclass(frozen=True)
class Unit:
    """A node of the drawn tree: a leaf, or a collapsed subtree (``collapsed``).

    ``leaves`` are the leaf indices below it; ``query``: all of them belong to the
    selected redescription's query on this side.
    """

    node: int
    leaves: tuple[int, ...]
    collapsed: bool
    query: bool


def _children(tree: TreeRecord) -> tuple[dict[int, TreeNode], TreeNode | None]:
    nodes = {n.id: n for n in tree.nodes}
    root = next((n for n in tree.nodes if n.parent < 0), None)
    return nodes, root


def _leaves_below(nodes: dict[int, TreeNode], node_id: int) -> tuple[int, ...]:
    node = nodes[node_id]
    kids = [c for c in node.children if c in nodes]
    if not kids:
        return (node.leaf,) if node.leaf >= 0 else ()
    return tuple(leaf for c in kids for leaf in _leaves_below(nodes, c))


def tree_units(tree: TreeRecord, highlight: Iterable[int], expand_all: bool = False
               ) -> tuple[list[int], list[Unit]]:
    """Which nodes of ``tree`` are drawn: (expanded inner nodes, units), depth first.

    An inner node is expanded (its children drawn) when its subtree holds both leaves of
    the query (highlighted) and others, or always with ``expand_all``; any other subtree
    is one unit: all of its leaves in the query (orange) or none (grey). So a query of
    many leaves — a disjunction, a negation — is drawn as a few whole subtrees.
    """
    nodes, root = _children(tree)
    hl = set(highlight)
    expanded: list[int] = []
    units: list[Unit] = []
    if root is None:
        return expanded, units

    def visit(node_id: int) -> None:
        node = nodes[node_id]
        kids = [c for c in node.children if c in nodes]
        below = _leaves_below(nodes, node_id)
        inside = hl & set(below)
        if kids and (expand_all or (inside and len(inside) < len(set(below)))):
            expanded.append(node_id)
            for c in kids:
                visit(c)
        else:
            units.append(Unit(node_id, below, collapsed=bool(kids),
                              query=bool(below) and set(below) <= hl))

    visit(root.id)
    return expanded, units


def _short(text: str, n: int = _LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _edge_text(node: TreeNode) -> str:
    return node.branch.text() if node.branch is not None else ""


def _unit_label(tree: TreeRecord, nodes: dict[int, TreeNode], unit: Unit, side: str) -> str:
    edge = _edge_text(nodes[unit.node])
    if unit.collapsed:
        what = f"{len(unit.leaves)} leaves" + (", all in the query" if unit.query else "")
        if not edge:
            return f"all {what}"
        return _short(f"{edge} ({what})" if unit.query else f"other: {edge} ({what})",
                      _LABEL_CHARS + 16)
    leaf = unit.leaves[0] if unit.leaves else -1
    return _short(f"{side}{leaf} {edge}".strip())


def _clip(value: float) -> float:
    return max(0.0, float(value))


def tree_pair_figure(left: TreeRecord, right: TreeRecord, extraction: ExtractionRecord,
                     highlight_left: Iterable[int] = (), highlight_right: Iterable[int] = (),
                     *, expand_all: bool = False,
                     view_names: tuple[str, str] = ("left view", "right view"),
                     height: int | None = None, title: str | None = None,
                     noise: FlowNoise | None = None) -> go.Figure:
    """The tree pair as a Sankey of noisy counts (see the module docstring).

    Parameters
    ----------
    left, right : TreeRecord
        The extraction's left-view and right-view trees.
    extraction : ExtractionRecord
        Its ``noisy_table[i][j]`` ≈ |left leaf i ∩ right leaf j| (noisy; < 0 drawn as 0).
    highlight_left, highlight_right : iterable of int
        The selected redescription's query leaves: drawn one by one, in orange.
    expand_all : bool
        Draw every leaf of both trees (else other subtrees are collapsed).
    noise : FlowNoise, optional
        The public noise of the table's cells
        (:func:`dpcore.redescriptions.intervals.flow_noise`): each flow's tooltip then
        carries the 90 % interval (rows) of the true count it stands for, from the
        released cells it sums (not clipped) and that scale only (0 ε).
    """
    raw = [[float(v) for v in row] for row in extraction.noisy_table]
    table = [[_clip(v) for v in row] for row in raw]
    hl, hr = set(highlight_left), set(highlight_right)
    nodes_l, root_l = _children(left)
    nodes_r, root_r = _children(right)
    inner_l, units_l = tree_units(left, hl, expand_all)
    inner_r, units_r = tree_units(right, hr, expand_all)

    def row_sum(leaves) -> float:
        return sum(sum(table[i]) for i in leaves if 0 <= i < len(table))

    def col_sum(leaves) -> float:
        return sum(row[j] for row in table for j in leaves if 0 <= j < len(row))

    def interval(rows, cols) -> str:
        """The flow's interval: the cells ``rows`` × ``cols`` of the released table."""
        if noise is None:
            return ""
        cells = [(i, j) for i in rows if 0 <= i < len(raw) for j in cols
                 if 0 <= j < len(raw[i])]
        low, high = noise.bounds(sum(raw[i][j] for i, j in cells), len(cells))
        return f" ({100 * DEFAULT_COVERAGE:.0f} % interval {low:.0f}–{high:.0f})"

    all_rows, all_cols = range(len(raw)), range(max((len(r) for r in raw), default=0))

    labels, colors, hovers, xs, shown = [], [], [], [], []
    index: dict[tuple[str, int], int] = {}

    def add(key, label, color, hover, x, unit=False):
        index[key] = len(labels)
        labels.append(label)
        colors.append(color)
        hovers.append(hover if unit else f"{label} — {hover}")
        xs.append(x)
        shown.append(label if unit else "")

    # Only the two leaf columns carry a written label, each with the room to its right up
    # to the next column of nodes; the inner nodes are packed near the roots and say their
    # split on hover. Written beside inner nodes, labels ran into the next column (a
    # parent spans its children, so a child's label meets its parent's bar) and, in a
    # chain-shaped tree, into each other (issue 32, point 13).
    deepest_l = max(max((n.depth for n in nodes_l.values() if n.children), default=0), 1)
    deepest_r = max(max((n.depth for n in nodes_r.values() if n.children), default=0), 1)

    def x_left(depth):
        return _ROOT_X + (_INNER_X - _ROOT_X) * depth / deepest_l

    def x_right(depth):
        return 1 - (_ROOT_X + (_INNER_X - _ROOT_X) * depth / deepest_r)

    unit_x_l, unit_x_r = _UNIT_X, 1 - _UNIT_X - _UNIT_X_RIGHT_SHIFT

    # ---- nodes: left tree (inner, then units), right units, right tree
    for nid in inner_l:
        n = nodes_l[nid]
        label = view_names[0] if n.parent < 0 else _short(_edge_text(n))
        add(("L", nid), label, PATH_COLOR,
            f"{view_names[0]}: split on {n.attribute}" if n.attribute else view_names[0],
            x_left(n.depth))
    for u in units_l:
        text = (left.leaf_text(u.leaves[0]) if not u.collapsed and u.leaves else
                _edge_text(nodes_l[u.node]))
        add(("L", u.node), _unit_label(left, nodes_l, u, "L"),
            QUERY_COLOR if u.query else OTHER_COLOR,
            f"{text} ({len(u.leaves)} leaf{'' if len(u.leaves) == 1 else 'ves'})", unit_x_l,
            unit=True)
    for u in units_r:
        text = (right.leaf_text(u.leaves[0]) if not u.collapsed and u.leaves else
                _edge_text(nodes_r[u.node]))
        add(("R", u.node), _unit_label(right, nodes_r, u, "R"),
            QUERY_COLOR if u.query else OTHER_COLOR,
            f"{text} ({len(u.leaves)} leaf{'' if len(u.leaves) == 1 else 'ves'})", unit_x_r,
            unit=True)
    for nid in inner_r:
        n = nodes_r[nid]
        label = view_names[1] if n.parent < 0 else _short(_edge_text(n))
        add(("R", nid), label, PATH_COLOR,
            f"{view_names[1]}: split on {n.attribute}" if n.attribute else view_names[1],
            x_right(n.depth))

    src, dst, val, link_colors, link_hover = [], [], [], [], []

    def link(a, b, value, color, hover):
        if value <= 0:
            return
        src.append(a)
        dst.append(b)
        val.append(value)
        link_colors.append(color)
        link_hover.append(hover)

    # ---- left tree bands: parent → child (split value on the edge = the child's label)
    for nid in inner_l:
        for c in nodes_l[nid].children:
            if ("L", c) not in index:
                continue
            leaves = _leaves_below(nodes_l, c)
            lit = bool(hl & set(leaves))
            link(index[("L", nid)], index[("L", c)], row_sum(leaves),
                 _PATH_LINK if lit else _OTHER_LINK,
                 f"{_edge_text(nodes_l[c])}: noisy count {row_sum(leaves):.0f}"
                 + interval(leaves, all_cols))
    # ---- middle bands: left unit × right unit (noisy intersections, summed); bands
    # between two grey (other) units say nothing about this redescription: not drawn
    # unless every leaf is shown
    for ul in units_l:
        for ur in units_r:
            if not (expand_all or ul.query or ur.query):
                continue
            value = sum(table[i][j] for i in ul.leaves for j in ur.leaves
                        if 0 <= i < len(table) and 0 <= j < len(table[i]))
            both = ul.query and ur.query
            link(index[("L", ul.node)], index[("R", ur.node)], value,
                 _QUERY_LINK if both else _MIDDLE_LINK,
                 f"{labels[index[('L', ul.node)]]} ∩ {labels[index[('R', ur.node)]]}: "
                 f"noisy count {value:.0f}" + interval(ul.leaves, ur.leaves))
    # ---- right tree bands: child → parent
    for nid in inner_r:
        for c in nodes_r[nid].children:
            if ("R", c) not in index:
                continue
            leaves = _leaves_below(nodes_r, c)
            lit = bool(hr & set(leaves))
            link(index[("R", c)], index[("R", nid)], col_sum(leaves),
                 _PATH_LINK if lit else _OTHER_LINK,
                 f"{_edge_text(nodes_r[c])}: noisy count {col_sum(leaves):.0f}"
                 + interval(all_rows, leaves))

    # each inner node spans the units of its subtree (so the trees' bands never cross)
    groups = {}
    for side, inner, units, nodes in (("L", inner_l, units_l, nodes_l),
                                      ("R", inner_r, units_r, nodes_r)):
        for nid in inner:
            below = set(_leaves_below(nodes, nid))
            groups[index[(side, nid)]] = [index[(side, u.node)] for u in units
                                          if set(u.leaves) <= below]
    n_units = max(len(units_l), len(units_r), 1)
    height = height or max(420, min(1100, 40 * n_units + 240))
    top_margin = (40 if title else 10) + _HEADING_PX
    fig = go.Figure(go.Sankey(
        arrangement="fixed", valueformat=".0f",
        node=dict(label=shown, color=colors, customdata=hovers, x=xs,
                  y=_stack(xs, src, dst, val, height - top_margin - 10, groups), pad=_PAD,
                  thickness=12,
                  line=dict(color="white", width=0.5),
                  hovertemplate="%{customdata}<br>noisy rows %{value:.0f}<extra></extra>"),
        link=dict(source=src, target=dst, value=val, color=link_colors,
                  customdata=link_hover, hovertemplate="%{customdata}<extra></extra>")))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=top_margin, b=10), title=title,
                      font=dict(size=12, color="#1f2430"))
    # the views' names head their trees, above the plot (no node label to collide with)
    for x, anchor, name in ((0.0, "left", f"{view_names[0]} →"),
                            (1.0, "right", f"→ {view_names[1]}")):
        fig.add_annotation(x=x, y=1, xref="paper", yref="paper", xanchor=anchor,
                           yanchor="bottom", yshift=2, showarrow=False, text=name,
                           font=dict(size=12, color=PATH_COLOR))
    return fig


def _stack(xs: list[float], src: list[int], dst: list[int], val: list[float],
           plot_height: float, groups: dict[int, list[int]]) -> list[float]:
    """The y (centre, 0 = top) of each node, in pixels of a plot ``plot_height`` tall.

    The nodes of a column without ``groups`` (the two leaf columns) are stacked in
    drawing order (depth first: the trees' own order), each as tall as Plotly draws its
    flow — one scale for all, fitted to the fullest column — with :data:`_PAD` pixels
    between them so that labels of small nodes do not collide. A node in ``groups`` (an
    inner tree node) is centred on the span of the nodes listed for it (its subtree's
    leaves), so the tree bands never cross.
    """
    n = len(xs)
    inflow, outflow = [0.0] * n, [0.0] * n
    for a, b, v in zip(src, dst, val):
        outflow[a] += v
        inflow[b] += v
    size = [max(inflow[i], outflow[i]) for i in range(n)]
    columns: dict[float, list[int]] = {}
    for i, x in enumerate(xs):
        if i not in groups:
            columns.setdefault(round(x, 6), []).append(i)
    scale = min((plot_height - _PAD * (len(m) - 1)) / max(sum(size[i] for i in m), 1e-9)
                for m in columns.values()) if columns else 1.0
    scale = max(scale, 0.0)
    centre = [plot_height / 2] * n
    for members in columns.values():
        used = sum(size[i] * scale for i in members) + _PAD * (len(members) - 1)
        top = max(0.0, (plot_height - used) / 2)          # centre a short column
        for i in members:
            h = size[i] * scale
            centre[i] = top + h / 2
            top += h + _PAD
    for i, members in groups.items():
        if members:
            top = min(centre[j] - size[j] * scale / 2 for j in members)
            bottom = max(centre[j] + size[j] * scale / 2 for j in members)
            centre[i] = (top + bottom) / 2
    return [min(0.999, max(0.001, c / plot_height)) for c in centre]


def render_tree_pair(left: TreeRecord, right: TreeRecord, extraction: ExtractionRecord,
                     highlight_left: Iterable[int], highlight_right: Iterable[int],
                     view_names: tuple[str, str], *, key: str,
                     noise: FlowNoise | None = None) -> None:
    """The tree-pair Sankey with its caption and the "every leaf" toggle; with the table's
    public ``noise``, each flow's tooltip carries its interval (0 ε)."""
    hl, hr = tuple(highlight_left), tuple(highlight_right)
    n_left, n_right = left.n_leaves, right.n_leaves
    st.markdown(f"**Tree pair it came from** ({n_left} × {n_right} leaves) — band width = "
                "noisy count (negative noisy counts drawn as 0); each leaf is labelled with "
                "the split on the edge that leads to it, and each inner node and band says "
                "its split on hover. Orange: this redescription's "
                "leaves and their noisy intersections; grey: the rest of each tree, one "
                "node per subtree (flows between two grey nodes are not drawn)."
                + (f" Hover a flow for its {100 * DEFAULT_COVERAGE:.0f} % interval: where the "
                   "true count lies, from the released cells and their public noise scale "
                   "only (0 ε)."
                   if noise is not None else ""))
    expand_all = st.toggle(f"Show every leaf of both trees ({n_left} × {n_right})",
                           key=f"{key}_all",
                           help="By default, subtrees without a leaf of this redescription "
                                "are drawn as one grey node each.")
    st.plotly_chart(tree_pair_figure(left, right, extraction, hl, hr, expand_all=expand_all,
                                     view_names=view_names, noise=noise), key=key)
