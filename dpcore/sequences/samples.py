"""Synthetic sequence data: the shipped samples and the benchmark shapes of Xu et al. (2015).

Everything here is synthetic; nothing is read from real data. Generation is deterministic
for a seed.

Shipped samples (``python -m dpcore.sequences.samples --write sample_data``):

* ``clickstream/`` — :func:`generate_clickstream`: page-category visits of web users, a
  first-order Markov chain over the 17 MSNBC page categories with MSNBC-like record lengths
  (mean ≈ 4.75, about 85 % of the records of at most 8 pages, a heavy tail up to thousands
  of pages). 10,000 records; private (not public_demo), so the app shows what an analyst
  sees.
* ``house_power/`` — :func:`generate_house_power`: minute-by-minute power-meter levels
  (21 levels, a mean-reverting random walk) cut into windows of 50 minutes. 2,000
  windows; public demo.

Benchmark shapes (not shipped; :func:`msnbc_shape`, :func:`bible_shape`,
:func:`house_power_shape`): the same generators at the papers' full sizes — 989,818
clickstreams over 17 items; 36,369 "verses" of a Zipf word stream over 13,905 words (mean
length 21.6, at most 100); 40,986 power windows of 50 × 21 levels. And House_Power's
size with long constant runs (:func:`generate_power_runs`, equal-width or quantile levels),
the shape of real household power data: quiet stretches of hours in one level.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.loading import write_alphabet_file, write_record_lines
from dpcore.data.sequences.schema import (
    LINES,
    SCHEMA_FILE_NAME,
    SequenceSchema,
    save_sequence_schema,
)
from dpcore.errors import ParameterError

__all__ = ["MSNBC_CATEGORIES", "generate_clickstream", "generate_house_power",
           "generate_power_runs", "EQUAL_WIDTH", "QUANTILE", "POWER_BINNINGS",
           "generate_word_stream", "msnbc_shape", "bible_shape", "house_power_shape",
           "write_sample", "write_samples", "main"]

#: The 17 page categories of the MSNBC clickstream data (UCI), in their original order.
MSNBC_CATEGORIES = ("frontpage", "news", "tech", "local", "opinion", "on-air", "misc",
                    "weather", "msn-news", "health", "living", "business", "msn-sports",
                    "sports", "summary", "bbs", "travel")

# Record lengths: geometric body (ratio 0.76) with a 3 % Pareto tail (α = 1.6, from 9 pages),
# capped: mean ≈ 4.75 and P(length ≤ 7) ≈ 0.83 < 0.85 ≤ P(length ≤ 8) ≈ 0.86 at full size,
# so η = 0.85 gives lmax = 8 as on MSNBC.
_BODY_RATIO, _TAIL_SHARE, _TAIL_ALPHA, _TAIL_FROM = 0.76, 0.03, 1.6, 9
#: The longest MSNBC record (pages).
MSNBC_MAX_LENGTH = 14_795

# Popularity, topic group and chance of staying in the category (the Markov chain). At full
# size and θ = 0.02: 15 frequent categories, about 40 frequent 2-sequences, the longest
# frequent sequence of 8 pages (MSNBC in Xu et al. 2015: 15, 32 and 8).
_POPULARITY = np.array([12, 6, 4, 5, 3, 4, 2, 3, 2, 1.5, 1.3, 1.3, 1.5, 3, 0.3, 1.0, 0.25])
_GROUP = np.array([0, 1, 2, 1, 1, 3, 4, 1, 1, 2, 4, 1, 5, 5, 1, 3, 4])
_STAY = np.array([.72, .60, .65, .70, .55, .70, .50, .60, .55, .60, .55, .55, .65, .70, .55,
                  .75, .55])


def _transition_matrix() -> tuple[np.ndarray, np.ndarray]:
    """(start probabilities, row-stochastic transitions) of the clickstream chain."""
    affinity = np.where(_GROUP[:, None] == _GROUP[None, :], 3.0, 1.0) * _POPULARITY[None, :]
    affinity[:, 0] *= 2.0  # back to the front page
    np.fill_diagonal(affinity, 0.0)
    moves = affinity / affinity.sum(axis=1, keepdims=True)
    trans = _STAY[:, None] * np.eye(len(_STAY)) + (1.0 - _STAY[:, None]) * moves
    start = _POPULARITY * np.where(np.arange(len(_POPULARITY)) == 0, 3.0, 1.0)
    return start / start.sum(), trans


def _clickstream_lengths(n: int, max_length: int, rng: np.random.Generator) -> np.ndarray:
    lengths = rng.geometric(1.0 - _BODY_RATIO, size=n).astype(np.int64)
    tail = rng.random(n) < _TAIL_SHARE
    lengths[tail] = np.floor(_TAIL_FROM * rng.random(int(tail.sum())) ** (-1.0 / _TAIL_ALPHA))
    return np.minimum(lengths, max_length)


def _markov_items(lengths: np.ndarray, start: np.ndarray, trans: np.ndarray,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """CSR records of a Markov chain: one chain per record, vectorised over records."""
    indptr = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    items = np.empty(int(indptr[-1]), dtype=np.int32)
    cum = np.cumsum(trans, axis=1)
    cum[:, -1] = 1.0
    state = np.minimum(np.searchsorted(np.cumsum(start), rng.random(lengths.size)),
                       start.size - 1).astype(np.int32)
    items[indptr[:-1]] = state
    alive = np.flatnonzero(lengths > 1)
    t = 1
    while alive.size:
        u = rng.random(alive.size)
        nxt = (u[:, None] > cum[state[alive]]).sum(axis=1).astype(np.int32)
        state[alive] = nxt
        items[indptr[alive] + t] = nxt
        t += 1
        alive = alive[lengths[alive] > t]
    return indptr, items


def generate_clickstream(n_records: int = 10_000, seed: int = 20241, *,
                         max_length: int = MSNBC_MAX_LENGTH, name: str = "clickstream",
                         public_demo: bool = False) -> SequenceDataset:
    """Markov clickstreams over the 17 MSNBC page categories (synthetic).

    Parameters
    ----------
    n_records : int
        Number of records (users' visits).
    seed : int
        Seed of the generator.
    max_length : int
        Longest record (pages); MSNBC's is 14,795.
    """
    rng = np.random.default_rng(seed)
    start, trans = _transition_matrix()
    indptr, items = _markov_items(_clickstream_lengths(n_records, max_length, rng), start,
                                  trans, rng)
    schema = SequenceSchema(
        name=name, alphabet=MSNBC_CATEGORIES, l1=8, public_demo=public_demo,
        description="Synthetic web clickstreams: each record is one visit, the page "
                    "categories a user viewed in order (17 MSNBC categories, a Markov chain "
                    "with repeats; mean length ≈ 4.75, heavy tail).",
        provenance=f"synthetic, dpcore.sequences.samples.generate_clickstream(n_records="
                   f"{n_records}, seed={seed}, max_length={max_length})",
        files={"format": LINES, "records": "records.txt", "alphabet": "alphabet.txt"})
    return SequenceDataset(schema, indptr, items)


#: Per-minute probabilities that the power level steps up / down (reflecting at both ends):
#: a mean-reverting walk whose level is ∝ (0.28/0.32)^level at equilibrium. At full size its
#: longest frequent sequence has 7 items at θ = 0.38 and 10 at θ = 0.3, as in the paper's
#: Table II for House_Power.
_POWER_UP, _POWER_DOWN, _POWER_LEVELS = 0.28, 0.32, 21


def generate_house_power(n_windows: int = 2_000, seed: int = 20242, *, window: int = 50,
                         name: str = "house_power", public_demo: bool = True
                         ) -> SequenceDataset:
    """Power-meter windows: a power level in 21 steps, one reading a minute, windows of 50.

    The level follows a mean-reverting random walk (each minute up one level with
    probability 0.28, down with 0.32, reflecting at the lowest and highest level); each
    window starts from the walk's equilibrium.

    Parameters
    ----------
    n_windows : int
        Number of records (windows of ``window`` minutes).
    seed : int
        Seed of the generator.
    """
    rng = np.random.default_rng(seed)
    k = _POWER_LEVELS
    weights = (_POWER_UP / _POWER_DOWN) ** np.arange(k)
    level = np.minimum(np.searchsorted(np.cumsum(weights / weights.sum()),
                                       rng.random(n_windows)), k - 1)
    levels = np.empty((n_windows, window), dtype=np.int32)
    for t in range(window):
        levels[:, t] = level
        u = rng.random(n_windows)
        level = np.clip(level + np.where(u < _POWER_UP, 1, np.where(
            u < _POWER_UP + _POWER_DOWN, -1, 0)), 0, k - 1)
    schema = SequenceSchema(
        name=name, alphabet=tuple(f"L{i:02d}" for i in range(k)), l1=30,
        public_demo=public_demo,
        description=f"Synthetic power-meter readings, one a minute, discretised into {k} "
                    f"levels (L00 lowest draw … L{k - 1:02d} highest) and cut into windows of "
                    f"{window} minutes; each record is one window. The level follows a "
                    "mean-reverting random walk (up one level with probability "
                    f"{_POWER_UP}, down with {_POWER_DOWN} each minute).",
        provenance=f"synthetic, dpcore.sequences.samples.generate_house_power(n_windows="
                   f"{n_windows}, seed={seed}, window={window})",
        files={"format": LINES, "records": "records.txt", "alphabet": "alphabet.txt"})
    indptr = np.arange(n_windows + 1, dtype=np.int64) * window
    return SequenceDataset(schema, indptr, levels.ravel())


#: Binnings of :func:`generate_power_runs`: 21 equal-width levels over the readings' range
#: (most readings fall in the lowest level, so quiet windows are one long constant run), or
#: 21 levels at the readings' quantiles (every level about 1/21 of the readings).
EQUAL_WIDTH, QUANTILE = "equal_width", "quantile"
POWER_BINNINGS = (EQUAL_WIDTH, QUANTILE)

# Regimes of the household's draw (kW): mean, within-regime spread, mean dwell (minutes),
# and the weight of the regime as the next one. Chosen so that the whole series has
# median ≈ 0.6 kW, quartiles ≈ 0.3 / 1.5 kW and a maximum near 11 kW, and so that a third
# of the 50-minute windows lie inside one quiet stretch, as in the household power
# consumption data behind the House_Power set of Xu et al. (2015).
_REGIME_MEAN = np.array([0.25, 0.42, 1.40, 2.40, 4.20, 6.50])
_REGIME_SPREAD = np.array([0.04, 0.07, 0.25, 0.40, 0.70, 1.50])
_REGIME_DWELL = np.array([240.0, 90.0, 45.0, 30.0, 20.0, 8.0])
_REGIME_NEXT = np.array([0.06, 0.10, 0.21, 0.22, 0.20, 0.21])
#: AR(1) coefficient of the per-minute wobble inside a regime: the draw drifts slowly, so a
#: reading stays in its level for minutes, not one.
_WOBBLE = 0.97


def _power_series(minutes: int, rng: np.random.Generator) -> np.ndarray:
    """A household's draw (kW), one reading a minute: regimes of geometric dwell times, a
    slow AR(1) wobble inside each, clipped to [0.076, 11.12] kW (the real data's range)."""
    n = _REGIME_MEAN.size
    # the next regime is drawn by weight among the other regimes
    nxt = np.tile(_REGIME_NEXT, (n, 1))
    np.fill_diagonal(nxt, 0.0)
    cum = np.cumsum(nxt / nxt.sum(axis=1, keepdims=True), axis=1)
    regime = int(rng.choice(n, p=_REGIME_NEXT))
    regimes, dwells, total = [], [], 0
    while total < minutes:
        dwell = int(rng.geometric(1.0 / _REGIME_DWELL[regime]))
        regimes.append(regime)
        dwells.append(dwell)
        total += dwell
        regime = min(int(np.searchsorted(cum[regime], rng.random())), n - 1)
    per_minute = np.repeat(np.asarray(regimes), np.asarray(dwells))[:minutes]
    wobble = lfilter([np.sqrt(1.0 - _WOBBLE ** 2)], [1.0, -_WOBBLE],
                     rng.standard_normal(minutes))
    power = _REGIME_MEAN[per_minute] + _REGIME_SPREAD[per_minute] * wobble
    return np.clip(power, 0.076, 11.12)


def _bin_levels(power: np.ndarray, binning: str, levels: int) -> np.ndarray:
    if binning == EQUAL_WIDTH:
        edges = np.linspace(power.min(), power.max(), levels + 1)[1:-1]
    else:
        edges = np.quantile(power, np.arange(1, levels) / levels)
    return np.searchsorted(edges, power, side="right").astype(np.int32)


def generate_power_runs(n_windows: int = 2_000, seed: int = 20244, *, window: int = 50,
                        binning: str = EQUAL_WIDTH, name: str = "power_runs",
                        public_demo: bool = False) -> SequenceDataset:
    """Household power windows with long constant runs (synthetic), in 21 levels.

    One series of ``n_windows · window`` minute readings (kW): the household switches
    between regimes (night base load, standby, light use, cooking, heating, peaks) that
    last tens to hundreds of minutes, with a slow wobble inside each; the series is
    discretised into 21 levels by ``binning`` and cut into consecutive windows of
    ``window`` minutes. With :data:`EQUAL_WIDTH` half the readings fall in the lowest
    level and a third of the windows are one constant run of it (frequent sequences of
    more than 40 items at θ = 0.3); with :data:`QUANTILE` each level holds about 1/21 of
    the readings and quiet windows wander over the lowest few levels.

    Parameters
    ----------
    n_windows : int
        Number of records (windows).
    seed : int
        Seed of the generator.
    window : int
        Readings (minutes) per record.
    binning : {"equal_width", "quantile"}
        How the readings become levels.
    """
    if binning not in POWER_BINNINGS:
        raise ParameterError(f"binning must be one of {', '.join(POWER_BINNINGS)}; got {binning!r}")
    rng = np.random.default_rng(seed)
    k = _POWER_LEVELS
    levels = _bin_levels(_power_series(n_windows * window, rng), binning, k)
    kind = "equal-width" if binning == EQUAL_WIDTH else "quantile"
    schema = SequenceSchema(
        name=name, alphabet=tuple(f"L{i:02d}" for i in range(k)), l1=30,
        public_demo=public_demo,
        description=f"Synthetic household power draw, one reading a minute, in {k} "
                    f"{kind} levels (L00 lowest … L{k - 1:02d} highest), cut into windows "
                    f"of {window} minutes; regimes lasting tens to hundreds of minutes give "
                    "long constant runs.",
        provenance=f"synthetic, dpcore.sequences.samples.generate_power_runs(n_windows="
                   f"{n_windows}, seed={seed}, window={window}, binning={binning!r})",
        files={"format": LINES, "records": "records.txt", "alphabet": "alphabet.txt"})
    indptr = np.arange(n_windows + 1, dtype=np.int64) * window
    return SequenceDataset(schema, indptr, levels)


def generate_word_stream(n_records: int = 36_369, n_items: int = 13_905, seed: int = 20243, *,
                         mean_length: float = 21.64, max_length: int = 100,
                         exponent: float = 1.0, name: str = "bible_shape") -> SequenceDataset:
    """Zipf word streams (BIBLE's shape): i.i.d. words with P(rank r) ∝ r^−exponent.

    Lengths are Gamma(shape 4)-distributed with the given mean, rounded, in [1, max_length].
    """
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.rint(rng.gamma(4.0, mean_length / 4.0, size=n_records)), 1,
                      max_length).astype(np.int64)
    weights = 1.0 / np.arange(1, n_items + 1) ** exponent
    cum = np.cumsum(weights / weights.sum())
    cum[-1] = 1.0
    indptr = np.zeros(n_records + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    items = np.searchsorted(cum, rng.random(int(indptr[-1]))).astype(np.int32)
    width = len(str(n_items - 1))
    schema = SequenceSchema(
        name=name, alphabet=tuple(f"w{i:0{width}d}" for i in range(n_items)), l1=32,
        description="Synthetic Zipf word stream in the shape of the BIBLE data.",
        provenance=f"synthetic, dpcore.sequences.samples.generate_word_stream(n_records="
                   f"{n_records}, n_items={n_items}, seed={seed})")
    return SequenceDataset(schema, indptr, items)


def msnbc_shape(seed: int = 1) -> SequenceDataset:
    """989,818 clickstreams over 17 items (MSNBC's size and length profile); benchmark only."""
    return generate_clickstream(989_818, seed, name="msnbc_shape")


def bible_shape(seed: int = 2) -> SequenceDataset:
    """36,369 Zipf word streams over 13,905 items, mean length 21.6; benchmark only."""
    return generate_word_stream(36_369, 13_905, seed)


def house_power_shape(seed: int = 3) -> SequenceDataset:
    """40,986 power windows of 50 readings × 21 levels; benchmark only."""
    return generate_house_power(40_986, seed, name="house_power_shape")


_README = """# {name} — {title}

{description}

Provenance: {provenance}. No real data. {audience}

Files: `{schema_file}` (the public schema: alphabet, l1 = {l1}, public_demo = {public}),
`records.txt` (one record per line, item names separated by spaces), `alphabet.txt` (the
declared item names, one per line, in code order).

| records | items in all | mean length | longest | alphabet |
|---|---|---|---|---|
| {n:,} | {nnz:,} | {mean:.2f} | {longest:,} | {n_items} |

{extra}
Regenerate (deterministic) with

    .venv/bin/python -m dpcore.sequences.samples --write sample_data
"""


def write_sample(dataset: SequenceDataset, directory, *, title: str, extra: str = ""
                 ) -> list[Path]:
    """Write a dataset's schema, records, alphabet and README into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    schema = dataset.schema
    save_sequence_schema(schema, d / SCHEMA_FILE_NAME)
    write_record_lines(dataset, d / "records.txt")
    write_alphabet_file(schema, d / "alphabet.txt")
    lengths = dataset.lengths
    audience = ("Public demo data: true statistics may be shown to everyone."
                if schema.public_demo else
                "Treated as private (not public_demo), so the app shows what an analyst "
                "sees.")
    (d / "README.md").write_text(_README.format(
        name=schema.name, title=title, description=schema.description,
        provenance=schema.provenance, audience=audience, schema_file=SCHEMA_FILE_NAME,
        l1=schema.l1, public=str(schema.public_demo).lower(), n=dataset.n_records,
        nnz=int(lengths.sum()), mean=float(lengths.mean()), longest=int(lengths.max()),
        n_items=schema.n_items, extra=extra), encoding="utf-8")
    return [d / SCHEMA_FILE_NAME, d / "records.txt", d / "alphabet.txt", d / "README.md"]


def write_samples(root) -> list[Path]:
    """(Re)write ``clickstream/`` and ``house_power/`` under ``root``."""
    root = Path(root)
    click = generate_clickstream(50_000, 20241, max_length=2_000)
    power = generate_house_power(2_000, 20242)
    out = write_sample(click, root / "clickstream", title="synthetic web clickstreams",
                       extra="The chain over the categories has self-loops (a user reads "
                             "several pages of one category) and topic groups (news, local, "
                             "business; sports; ...); the front page is the hub. Lengths: a "
                             "geometric body (ratio 0.76) with a 3 % Pareto tail "
                             "(α = 1.6), capped at 2,000 pages here (MSNBC's longest visit "
                             "has 14,795).\n")
    out += write_sample(power, root / "house_power", title="synthetic power-meter windows",
                        extra="At the full benchmark size (40,986 windows) the longest "
                              "frequent sequence has 7 items at θ = 0.38 and 10 at θ = 0.3, "
                              "the shape of the House_Power data of Xu et al. (2015).\n")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpcore.sequences.samples",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="DIR", required=True,
                        help="folder to (re)write clickstream/ and house_power/ in")
    args = parser.parse_args(argv)
    for path in write_samples(args.write):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
