"""Capo's population: the field lists, people as a pure function of (seed, person index), and the
capacity formula of Part 3.3 (Def. 4.3).

Person i's full name is ``name_codes(seed, i)``, a keyed permutation of the N0 = 400·400·1000
(first, middle, last) combinations: distinct people get distinct names (sampling without
replacement) and person i is the same in every population that contains it. Every other
attribute is an independent uniform draw from a hash of (seed, attribute, i). No table is
needed; ``people`` works on index arrays, so a 2M-person population takes about a second.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FIELDS_DIR = Path(__file__).resolve().parent / "data" / "capo_fields"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
DAYS, FIRST_YEAR, YEARS = 28, 1900, 200  # birth dates: 12 × 28 × 200 (1900..2099)
# attribute columns in hash-stream order; 0 = the size of the field list of that name
COLUMNS = {"month": 12, "day": DAYS, "year": YEARS, "city": 0, "university": 0, "major": 0,
           "company": 0, "pronoun": 2}
NAME_STREAM, NAME_ROUNDS = 100, 6
LN2 = math.log(2)


@dataclass(frozen=True)
class Fields:
    first: tuple[str, ...]
    middle: tuple[str, ...]
    last: tuple[str, ...]
    city: tuple[str, ...]
    university: tuple[str, ...]
    major: tuple[str, ...]
    company: tuple[str, ...]
    company_city: tuple[str, ...]  # the working city of each company

    @property
    def n_names(self) -> int:
        """N0: the number of possible full names."""
        return len(self.first) * len(self.middle) * len(self.last)

    @property
    def log2_values(self) -> float:
        """log2 S0: pronoun (2), birth date (12·28·200), city, university, major, employer."""
        return math.log2(2 * 12 * DAYS * YEARS) + sum(
            math.log2(len(x)) for x in (self.city, self.university, self.major, self.company))


@functools.lru_cache(maxsize=1)
def load_fields() -> Fields:
    def lines(name: str) -> tuple[str, ...]:
        text = (FIELDS_DIR / f"{name}.txt").read_text(encoding="utf-8")
        return tuple(s.strip() for s in text.splitlines() if s.strip())

    companies = [line.split(";", 1) for line in lines("company")]
    return Fields(lines("first_name"), lines("middle_name"), lines("last_name"), lines("city"),
                  lines("university"), lines("field"), tuple(c.strip() for c, _ in companies),
                  tuple(city.strip() for _, city in companies))


def capacity_bits(p1: float, p2: float, n_people: int, fields: Fields | None = None) -> float:
    """Bits of knowledge: N·log2(N0 / e^p1) + N·log2(S0 / e^p2), with p1, p2 in nats."""
    f = fields or load_fields()
    return n_people * (math.log2(f.n_names) - p1 / LN2) + n_people * (f.log2_values - p2 / LN2)


def capacity_upper(n_people: int, fields: Fields | None = None) -> float:
    """The most bits a model can show: p1 = ln N (it knows exactly who exists), p2 = 0."""
    return capacity_bits(math.log(n_people), 0.0, n_people, fields)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer on uint64 arrays (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash(seed: int, stream: int, idx: np.ndarray) -> np.ndarray:
    key = _mix(_mix(np.array([seed], np.uint64)) ^ np.uint64(stream))
    return _mix(key ^ idx.astype(np.uint64))


def _draw(seed: int, stream: int, idx: np.ndarray, n: int) -> np.ndarray:
    """Uniform integers in [0, n) per index (multiply-shift of the top 32 hash bits)."""
    top = _hash(seed, stream, idx) >> np.uint64(32)
    return (top * np.uint64(n) >> np.uint64(32)).astype(np.int64)


def name_codes(seed: int, idx: np.ndarray, n_names: int) -> np.ndarray:
    """A keyed permutation of [0, n_names) applied to ``idx``: a balanced Feistel network on the
    smallest even bit width that covers n_names, cycle-walked back into range."""
    half = (max(n_names - 1, 1).bit_length() + 1) // 2
    mask = np.uint64((1 << half) - 1)

    def feistel(x: np.ndarray) -> np.ndarray:
        left, right = x >> np.uint64(half), x & mask
        for r in range(NAME_ROUNDS):
            left, right = right, left ^ (_hash(seed, NAME_STREAM + r, right) & mask)
        return (left << np.uint64(half)) | right

    x = feistel(np.asarray(idx).astype(np.uint64))
    while (out := x >= np.uint64(n_names)).any():
        x[out] = feistel(x[out])
    return x.astype(np.int64)


def people(seed: int, idx: np.ndarray, fields: Fields) -> dict[str, np.ndarray]:
    """Field indices of the people ``idx``: int64 arrays ``first, middle, last`` (name parts),
    ``month, day, year`` (0-based: day 0 is the 1st, year 0 is 1900), ``city, university,
    major, company`` (list positions) and ``pronoun`` (0 = he, 1 = she)."""
    idx = np.asarray(idx, np.int64)
    code = name_codes(seed, idx, fields.n_names)
    n_mid, n_last = len(fields.middle), len(fields.last)
    out = {"first": code // (n_mid * n_last), "middle": code // n_last % n_mid,
           "last": code % n_last}
    for stream, (col, n) in enumerate(COLUMNS.items(), start=1):
        out[col] = _draw(seed, stream, idx, n or len(getattr(fields, col)))
    return out


def facts(p: dict[str, int], fields: Fields) -> dict[str, str]:
    """One person's attributes (a row of :func:`people`) as text."""
    f = fields
    return {"name": f"{f.first[p['first']]} {f.middle[p['middle']]} {f.last[p['last']]}",
            "birth_date": f"{MONTHS[p['month']]} {p['day'] + 1}, {FIRST_YEAR + p['year']}",
            "birth_city": f.city[p["city"]], "university": f.university[p["university"]],
            "major": f.major[p["major"]], "employer": f.company[p["company"]],
            "work_city": f.company_city[p["company"]], "pronoun": ("he", "she")[p["pronoun"]]}
