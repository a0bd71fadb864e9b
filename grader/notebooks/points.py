"""A notebook's points, earned, lost and not checked: what `ladder check`, `ladder grade`'s summary, grades.csv and
the class report all say.

A graded cell that scored less than its points either lost them (the learner's code was found wrong, slow or
missing) or was not checked on this machine: no GPU, a speed bar no correct kernel reaches on this GPU, or a
check the verdict rests on that could not run here. Those points are counted apart, with why, so that the
reference solution on a CPU reads "3/3 checked points; 12 points need a GPU", not "3/15 FAIL".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# The reason codes (grader.errors.REASONS) of a cell that was not checked here, and how each is said of points.
NOT_CHECKED = {
    "no-gpu": "need a GPU",
    "not-gradable": "are not gradable on this GPU",
    "unchecked": "could not be checked here",
}


@dataclass
class Points:
    earned: float = 0.0
    total: float = 0.0
    not_checked: dict[str, float] = field(default_factory=dict)   # reason code -> points not checked for it

    @classmethod
    def of(cls, cells: Iterable[tuple[float, float, str | None]]) -> "Points":
        """From each graded cell's (points, max points, reason code or None)."""
        out = cls()
        for points, most, reason in cells:
            out.earned += points
            out.total += most
            if points < most and reason in NOT_CHECKED:
                out.not_checked[reason] = out.not_checked.get(reason, 0.0) + most - points
        return out

    @property
    def unchecked(self) -> float:
        return sum(self.not_checked.values())

    @property
    def checked(self) -> float:
        """The points that were checked here: all of them but those not checked."""
        return self.total - self.unchecked

    @property
    def lost(self) -> float:
        return self.checked - self.earned

    def why_not_checked(self) -> str:
        """"12 points need a GPU; 2 points are not gradable on this GPU", or "" where every point was checked."""
        return "; ".join(f"{points:g} point{'s' if points != 1 else ''} {NOT_CHECKED[reason]}"
                         for reason, points in sorted(self.not_checked.items(), key=lambda kv: -kv[1]))

    def describe(self) -> str:
        """"15/15", or "3/3 checked points; 12 points need a GPU" where some were not checked."""
        if not self.unchecked:
            return f"{self.earned:g}/{self.total:g}"
        return f"{self.earned:g}/{self.checked:g} checked points; {self.why_not_checked()}"

    def as_dict(self) -> dict:
        return {"checked_score": self.earned, "checked_max_score": self.checked, "lost_points": self.lost,
                "not_checked": dict(self.not_checked)}


def class_not_checked(each: list[Points]) -> str | None:
    """What a class's graded students could not have checked here, in one sentence: "every graded student: 12 of 15
    points (12 points need a GPU)", or the sum over those who had some; None where every point was checked."""
    some = [p for p in each if p.unchecked]
    if not some:
        return None
    if len(some) == len(each) and len({(p.total, tuple(sorted(p.not_checked.items()))) for p in some}) == 1:
        return f"every graded student, {some[0].unchecked:g} of {some[0].total:g} points ({some[0].why_not_checked()})"
    total = Points()
    for p in some:
        for reason, n in p.not_checked.items():
            total.not_checked[reason] = total.not_checked.get(reason, 0.0) + n
    return (f"{len(some)} of {len(each)} graded student(s), {total.unchecked:g} points in all "
            f"({total.why_not_checked()})")
