"""The tree-pair diagram (paper Figure 1): two released trees, leaves linked by noisy counts.

The left-view tree grows from its root on the left towards its leaves in the
middle; the right-view tree is mirrored (root on the right). Left leaf *i* and
right leaf *j* are joined by a line whose width is the noisy intersection
``ExtractionRecord.noisy_table[i][j]`` (negative noisy counts are clipped to 0).
Trees and noisy counts are DP releases, so analysts may see this diagram.
The leaves of the selected redescription's queries are highlighted.
"""

from __future__ import annotations

from collections.abc import Iterable

import plotly.graph_objects as go

from dpcore.redescriptions.results import ExtractionRecord, TreeRecord

__all__ = ["tree_layout", "tree_pair_figure", "MAX_LINE_WIDTH"]

MAX_LINE_WIDTH = 14.0
_NODE = "#4c78a8"
_LEAF = "#9ecae9"
_HIGHLIGHT = "#f58518"
_LINK = "rgba(120, 120, 120, 0.45)"
_LINK_HIGHLIGHT = "rgba(245, 133, 24, 0.85)"


def tree_layout(tree: TreeRecord) -> tuple[dict[int, tuple[int, float]], dict[int, float]]:
    """Positions of a tree's nodes: ``{node id: (depth, y)}`` and ``{leaf index: y}``.

    Leaves are stacked top to bottom in depth-first order (so edges never cross); an
    inner node sits at the mean y of its children. y is rescaled to [0, 1] (1 = top).
    """
    nodes = {n.id: n for n in tree.nodes}
    root = next((n for n in tree.nodes if n.parent < 0), None)
    pos: dict[int, tuple[int, float]] = {}
    leaf_y: dict[int, float] = {}
    if root is None:
        return pos, leaf_y
    counter = [0]

    def visit(node_id: int) -> float:
        node = nodes[node_id]
        children = [c for c in node.children if c in nodes]
        if not children:
            y = float(counter[0])
            counter[0] += 1
            if node.leaf >= 0:
                leaf_y[node.leaf] = y
        else:
            y = sum(visit(c) for c in children) / len(children)
        pos[node_id] = (node.depth, y)
        return y

    visit(root.id)
    top = max(counter[0] - 1, 1)
    pos = {k: (d, 1.0 - y / top) for k, (d, y) in pos.items()}      # first leaf on top
    leaf_y = {k: 1.0 - y / top for k, y in leaf_y.items()}
    return pos, leaf_y


def _node_label(tree: TreeRecord, node) -> str:
    if node.leaf >= 0:
        return f"leaf {node.leaf}: {tree.leaf_text(node.leaf)}"
    if node.attribute is None:
        return "node"
    if node.threshold is not None:
        return f"split on {node.attribute} at {node.threshold:.4g}"
    return f"split on {node.attribute}"


def _tree_traces(tree: TreeRecord, pos: dict, x_of, highlight: set[int], side: str
                 ) -> list[go.Scatter]:
    nodes = {n.id: n for n in tree.nodes}
    ex, ey, labels_x, labels_y, labels = [], [], [], [], []
    for n in tree.nodes:
        if n.parent >= 0 and n.parent in pos and n.id in pos:
            (d0, y0), (d1, y1) = pos[n.parent], pos[n.id]
            ex += [x_of(d0, False), x_of(d1, n.leaf >= 0), None]
            ey += [y0, y1, None]
            if n.branch is not None:
                labels_x.append((x_of(d0, False) + x_of(d1, n.leaf >= 0)) / 2)
                labels_y.append((y0 + y1) / 2)
                labels.append(n.branch.text())
    traces = [go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#bbbbbb", width=1),
                         hoverinfo="skip", showlegend=False),
              go.Scatter(x=labels_x, y=labels_y, mode="markers",
                         marker=dict(size=6, color="rgba(0,0,0,0)"), text=labels,
                         hovertemplate="%{text}<extra></extra>", showlegend=False)]
    xs, ys, colors, sizes, texts, hover = [], [], [], [], [], []
    for node_id, (d, y) in pos.items():
        n = nodes[node_id]
        is_leaf = n.leaf >= 0
        xs.append(x_of(d, is_leaf))
        ys.append(y)
        lit = is_leaf and n.leaf in highlight
        colors.append(_HIGHLIGHT if lit else (_LEAF if is_leaf else _NODE))
        sizes.append(13 if lit else (9 if is_leaf else 11))
        texts.append(f"{side}{n.leaf}" if is_leaf else (n.attribute or ""))
        hover.append(_node_label(tree, n))
    traces.append(go.Scatter(
        x=xs, y=ys, mode="markers+text", text=texts, hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        textposition="top center", textfont=dict(size=9),
        marker=dict(color=colors, size=sizes, line=dict(color="white", width=1)),
        showlegend=False))
    return traces


def tree_pair_figure(left: TreeRecord, right: TreeRecord, extraction: ExtractionRecord,
                     highlight_left: Iterable[int] = (), highlight_right: Iterable[int] = (),
                     *, height: int = 520, title: str | None = None) -> go.Figure:
    """The two trees with leaf-to-leaf links weighted by the noisy intersections.

    Parameters
    ----------
    left, right : TreeRecord
        The extraction's left-view and right-view trees.
    extraction : ExtractionRecord
        Its ``noisy_table[i][j]`` ≈ |left leaf i ∩ right leaf j| (noisy; < 0 clipped to 0).
    highlight_left, highlight_right : iterable of int
        Leaf indices to highlight (the selected redescription's query leaves).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    hl, hr = set(highlight_left), set(highlight_right)
    pos_l, leaf_y_l = tree_layout(left)
    pos_r, leaf_y_r = tree_layout(right)
    depth_l = max((d for d, _ in pos_l.values()), default=0)
    depth_r = max((d for d, _ in pos_r.values()), default=0)
    gap = 3.0
    leaf_x_l = float(max(depth_l, 1))
    leaf_x_r = leaf_x_l + gap
    total = leaf_x_r + max(depth_r, 1)

    def x_left(depth: int, is_leaf: bool) -> float:
        return leaf_x_l if is_leaf else float(depth)

    def x_right(depth: int, is_leaf: bool) -> float:
        return leaf_x_r if is_leaf else total - float(depth)

    fig = go.Figure()
    table = extraction.noisy_table
    peak = max((max(0.0, v) for row in table for v in row), default=0.0)
    for i, row in enumerate(table):
        for j, value in enumerate(row):
            width = max(0.0, float(value))
            if width <= 0 or i not in leaf_y_l or j not in leaf_y_r:
                continue
            lit = i in hl and j in hr
            fig.add_trace(go.Scatter(
                x=[leaf_x_l, leaf_x_r], y=[leaf_y_l[i], leaf_y_r[j]], mode="lines",
                line=dict(width=max(0.5, MAX_LINE_WIDTH * width / peak) if peak else 0.5,
                          color=_LINK_HIGHLIGHT if lit else _LINK),
                hovertemplate=(f"left leaf {i} ∩ right leaf {j}: noisy count "
                               f"{float(value):.0f}<extra></extra>"),
                showlegend=False))
    for trace in _tree_traces(left, pos_l, x_left, hl, "L"):
        fig.add_trace(trace)
    for trace in _tree_traces(right, pos_r, x_right, hr, "R"):
        fig.add_trace(trace)
    fig.update_layout(
        height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        title=title, plot_bgcolor="white", hovermode="closest",
        xaxis=dict(visible=False, range=[-0.5, total + 0.5]),
        yaxis=dict(visible=False, range=[-0.08, 1.08]))
    fig.add_annotation(x=0, y=1.07, text="left view", showarrow=False, xanchor="left")
    fig.add_annotation(x=total, y=1.07, text="right view", showarrow=False, xanchor="right")
    return fig
