"""What a run that went on to serve survived.

A start-up that reached `Application startup complete` was not stopped by what
its log said before that: vLLM warns and carries on (no package metadata, an
NCCL transport it could not open and replaced, a port it retried). A
diagnosis whose every line was written before the run served names something
the run got past, so it is not the answer; what happened after serving is.

>>> from ..facts.phases import PhaseLog, phase_order
>>> phases = PhaseLog(); phases.add(3, phase_order("weights-loaded")); phases.add(40, phase_order("serving"))
>>> before_serving([12, 30], phases), before_serving([12, 41], phases)
(True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ..facts.phases import PhaseLog, phase_order

if TYPE_CHECKING:
    from ..context.context import Context
    from .diagnoses import Diagnosis


def before_serving(lines: Iterable[int], phases: PhaseLog) -> bool:
    """Whether every line was written before the run reached serving (and the run did reach it)."""
    serving = phase_order("serving")
    reached = phases.reached()
    if reached is None or phase_order(reached) < serving:
        return False
    lines = list(lines)
    return bool(lines) and all((at := phases.at(line + 1)) is None or phase_order(at) < serving for line in lines)


def drop_survived(fired: list[Diagnosis], ctx: Context) -> list[Diagnosis]:
    """The diagnoses of a served run, less those only its start-up lines (which it got past) support."""
    if not ctx.facts.served:
        return fired
    return [d for d in fired if not (d.evidence and before_serving((m.line for m in d.evidence), ctx.phases))]
