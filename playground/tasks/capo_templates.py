"""Capo's text side: the paraphrase templates (our own wording), the closed word-level tokenizer
and the rules that make the capacity measurement exact.

A template is one sentence with slots: ``{S}`` the subject (the full name in a biography's first
sentence, ``He``/``She`` later), ``{X}`` the attribute value, and the pronoun slots ``{he}``,
``{his}``, ``{him}`` (rendered he/she, his/her, him/her). The rules, checked by
:func:`template_problems` (and by the tests):

1. Every template starts with ``{S}``; it has exactly one ``{X}``, after ``{S}``. So a biography
   begins with the full name, and every later sentence begins with the pronoun: the first token
   of the second sentence is the pronoun attribute's value, predictable only from the name.
2. Value prefixes decide: the words between ``{S}`` and ``{X}`` of any template are never
   followed, in another template, by a different word or by another attribute's value. Given
   the name, a model that knows the person can then predict every value token with certainty
   (p2 = 0 is attainable), whichever templates were drawn.
3. The first sentence uses only pronoun-free templates, so no pronoun precedes the measured one.

Tokenizer: text is split at single spaces into chunks; trailing ``,`` and ``.`` of a chunk are
separate tokens (so ``St. Louis, MO`` is ``St . Louis , MO``). :func:`detokenize` glues ``,``
and ``.`` to the preceding token and joins the rest with spaces; the two are exact inverses on
every biography (tested).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("birth_date", "birth_city", "university", "major", "employer", "work_city")
GLUED = (",", ".")  # tokens written without a space before them
SUBJECT = ("He", "She")  # pronoun subject at a sentence start; gender 0 = male, 1 = female
PRONOUN_SLOTS = {"he": ("he", "she"), "his": ("his", "her"), "him": ("him", "her")}
SLOT_RE = re.compile(r"\{(S|X|he|his|him)\}")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "birth_date": (
        "{S} was born on {X}.",
        "{S} came into the world on {X}.",
        "{S} celebrates {his} birthday on {X}.",
        "{S} has a birthday that falls on {X}.",
        "{S} arrived on {X}, as the family records show.",
        "{S} first opened {his} eyes on {X}.",
        "{S} dates {his} birth to {X}.",
        "{S} was delivered on {X}.",
        "{S} marks {X} as the day of {his} birth.",
        "{S} gives {X} as the date of birth on every form.",
        "{S} began life on {X}.",
        "{S} drew a first breath on {X}.",
        "{S} circles {X} on the calendar as a birthday.",
        "{S} entered the world on {X}.",
        "{S} has {his} birth certificate dated {X}.",
        "{S} recorded {X} as the day of birth.",
        "{S} honors {X} each year as a birthday.",
        "{S} came along on {X}.",
        "{S} shares a birthday with everyone born on {X}.",
        "{S} saw daylight for the first time on {X}.",
        "{S} was brought into this world on {X}, a day {his} parents remember.",
        "{S} puts {X} down as the birth date.",
    ),
    "birth_city": (
        "{S} was born in {X}.",
        "{S} hails from {X}.",
        "{S} is a native of {X}.",
        "{S} grew up in {X}, the city of {his} birth.",
        "{S} came into the world in {X}.",
        "{S} spent {his} childhood in {X}.",
        "{S} calls {X} {his} birthplace.",
        "{S} traces {his} roots to {X}.",
        "{S} originally comes from {X}.",
        "{S} was raised in {X}, where {he} was born.",
        "{S} first saw the light of day in {X}.",
        "{S} was brought up in {X}.",
        "{S} began {his} life in {X}.",
        "{S} is originally from {X}.",
        "{S} was born and raised in {X}.",
        "{S} names {X} as {his} hometown.",
        "{S} took {his} first steps in {X}.",
        "{S} considers {X} home, having been born there.",
        "{S} is from {X} by birth.",
        "{S} was delivered in a hospital in {X}.",
        "{S} entered the world in {X}.",
        "{S} comes from {X}, the place of birth.",
    ),
    "university": (
        "{S} studied at {X}.",
        "{S} graduated from {X}.",
        "{S} attended {X}.",
        "{S} received {his} education at {X}.",
        "{S} earned a degree from {X}.",
        "{S} was a student at {X}.",
        "{S} enrolled at {X} after high school.",
        "{S} is a graduate of {X}.",
        "{S} completed {his} studies at {X}.",
        "{S} went to college at {X}.",
        "{S} spent {his} college years at {X}.",
        "{S} holds a diploma from {X}.",
        "{S} pursued higher education at {X}.",
        "{S} did {his} undergraduate work at {X}.",
        "{S} was educated at {X}.",
        "{S} took classes at {X} for four years.",
        "{S} matriculated at {X}.",
        "{S} studied for a degree at {X}.",
        "{S} received a diploma from {X}.",
        "{S} belongs to the alumni of {X}.",
        "{S} picked {X} for {his} university education.",
        "{S} obtained a bachelor's degree at {X}.",
    ),
    "major": (
        "{S} majored in {X}.",
        "{S} studied the field of {X}.",
        "{S} earned a degree in {X}.",
        "{S} specialized in {X}.",
        "{S} focused {his} studies on {X}.",
        "{S} chose {X} as {his} major.",
        "{S} has a degree in {X}.",
        "{S} concentrated on {X} in college.",
        "{S} completed a major in {X}.",
        "{S} holds a degree in {X}.",
        "{S} pursued studies in {X}.",
        "{S} received training in {X}.",
        "{S} trained as a specialist in {X}.",
        "{S} devoted {his} studies to {X}.",
        "{S} took up {X} as {his} academic field.",
        "{S} graduated with a degree in {X}.",
        "{S} is an expert in {X}.",
        "{S} learned {X} at university.",
        "{S} obtained a degree in {X}.",
        "{S} read {X} at university.",
        "{S} built {his} expertise in {X}.",
        "{S} did coursework mainly in {X}.",
    ),
    "employer": (
        "{S} works for {X}.",
        "{S} is employed by {X}.",
        "{S} has a job at {X}.",
        "{S} earns {his} living at {X}.",
        "{S} is on the staff of {X}.",
        "{S} joined {X} after graduating.",
        "{S} draws a salary from {X}.",
        "{S} was hired by {X}.",
        "{S} holds a position at {X}.",
        "{S} works at {X}.",
        "{S} is an employee of {X}.",
        "{S} accepted a job offer from {X}.",
        "{S} built a career at {X}.",
        "{S} spends {his} working days at {X}.",
        "{S} reports to work at {X}.",
        "{S} is on the payroll of {X}.",
        "{S} has worked for {X} for years.",
        "{S} took a position with {X}.",
        "{S} signed on with {X}.",
        "{S} got hired at {X}.",
        "{S} makes a living working for {X}.",
        "{S} serves on the team at {X}.",
        "{S} is part of the workforce of {X}.",
    ),
    "work_city": (
        "{S} works in {X}.",
        "{S} is employed in {X}.",
        "{S} has {his} office in {X}.",
        "{S} commutes to a workplace in {X}.",
        "{S} reports to an office in {X}.",
        "{S} holds a job based in {X}.",
        "{S} spends {his} workdays in {X}.",
        "{S} earns a paycheck in {X}.",
        "{S} is based in {X} for work.",
        "{S} does {his} job in {X}.",
        "{S} works out of {X}.",
        "{S} has a work address in {X}.",
        "{S} moved to {X} for the job.",
        "{S} lives and works in {X}.",
        "{S} goes to work in {X} every day.",
        "{S} practices {his} profession in {X}.",
        "{S} pursues {his} career in {X}.",
        "{S} clocks in each morning in {X}.",
        "{S} is stationed in {X} by {his} employer.",
        "{S} found employment in {X}.",
        "{S} keeps a desk in {X}.",
        "{S} has a workplace located in {X}.",
    ),
}


def tokenize(text: str) -> list[str]:
    """Word-level tokens of ``text`` (single spaces between chunks, see the module docstring)."""
    out: list[str] = []
    for chunk in text.split(" "):
        core = chunk.rstrip("".join(GLUED))
        if core:
            out.append(core)
        out.extend(chunk[len(core):])
    return out


def detokenize(pieces: list[str]) -> str:
    """The text of ``pieces``: the inverse of :func:`tokenize` on canonical text."""
    text = ""
    for p in pieces:
        text += p if (p in GLUED and text) or not text else " " + p
    return text


@dataclass(frozen=True)
class Template:
    """A parsed template: ``parts`` are slot names ("S", "X", "he", "his", "him") or tuples of
    literal tokens, in sentence order."""

    kind: str
    text: str
    parts: tuple

    @property
    def has_pronoun(self) -> bool:
        return any(p in PRONOUN_SLOTS for p in self.parts)

    def words(self, gender: int) -> list[str]:
        """The tokens after the subject for a speaker of ``gender``, the value as ``{X}``."""
        out: list[str] = []
        for part in self.parts[1:]:
            if isinstance(part, tuple):
                out.extend(part)
            else:
                out.append(PRONOUN_SLOTS[part][gender] if part in PRONOUN_SLOTS else "{X}")
        return out


def parse_template(kind: str, text: str) -> Template:
    parts: list = []
    pos = 0
    for m in [*SLOT_RE.finditer(text), None]:
        words = tokenize(text[pos : m.start() if m else len(text)].strip(" "))
        if words:
            parts.append(tuple(words))
        if m:
            parts.append(m.group(1))
            pos = m.end()
    return Template(kind, text, tuple(parts))


def all_templates(texts: dict[str, tuple[str, ...]] = TEMPLATES) -> dict[str, list[Template]]:
    return {kind: [parse_template(kind, t) for t in pool] for kind, pool in texts.items()}


def _shape_problems(t: Template) -> list[str]:
    problems = []
    if t.parts[:1] != ("S",) or t.parts.count("S") != 1 or t.parts.count("X") != 1:
        problems.append(f"{t.text!r}: must start with {{S}} and hold one {{S}} and one {{X}}")
    for m in SLOT_RE.finditer(t.text):  # slots are whole words: the tokenizer must see them so
        before, after = t.text[m.start() - 1 : m.start()], t.text[m.end() : m.end() + 1]
        if before not in ("", " ") or after not in ("", " ", *GLUED):
            problems.append(f"{t.text!r}: slot {m.group(0)} is glued to a word")
    if not t.text.endswith("."):
        problems.append(f"{t.text!r}: must end with a period")
    return problems


def _prefix_problems(templates: list[Template]) -> list[str]:
    """Rule 2: a value prefix is never continued differently by another template."""
    problems = []
    for gender in (0, 1):
        words = [(t, t.words(gender)) for t in templates]
        for t, tw in words:
            prefix = tw[: tw.index("{X}")]
            for u, uw in words:
                if u is t or uw[: len(prefix)] != prefix or len(uw) <= len(prefix):
                    continue
                if uw[len(prefix)] != "{X}" or u.kind != t.kind:
                    problems.append(f"{t.text!r}: "
                                    f"its value prefix continues differently in {u.text!r}")
    return sorted(set(problems))


def template_problems(texts: dict[str, tuple[str, ...]] = TEMPLATES, min_per_kind: int = 20,
                      min_first: int = 8) -> list[str]:
    """Every violation of the rules in the module docstring (empty when the pool is sound)."""
    pool = all_templates(texts)
    problems: list[str] = []
    for kind, temps in pool.items():
        if len(temps) < min_per_kind:
            problems.append(f"{kind}: {len(temps)} templates, need at least {min_per_kind}")
        if kind != "work_city" and sum(not t.has_pronoun for t in temps) < min_first:
            problems.append(f"{kind}: fewer than {min_first} pronoun-free templates")
        if len({t.text for t in temps}) != len(temps):
            problems.append(f"{kind}: duplicate templates")
        for t in temps:
            problems += _shape_problems(t)
    return problems + _prefix_problems([t for temps in pool.values() for t in temps])
