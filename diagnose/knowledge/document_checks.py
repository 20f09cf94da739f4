"""One rule document's checks, all of them in one pass: a rule author sees every problem of a file at once.

The schema, the names it uses (strategies, parameters, predicates, phases: vocabulary), its category, its id
among the others, and its regexes are checked side by side, not one layer per run; a name that is not known is
answered with the names that are, and the nearest one (vocabulary.known_names_hint).
"""

from __future__ import annotations

from typing import Callable

from .rules import LoadProblem, Rule
from .vocabulary import known_names_hint, vocabulary_problems

MAX_SCHEMA_PROBLEMS = 50


def check_document(document, node, shown: str, *, trusted: bool, schema, categories: dict[str, str],
                   seen: dict[str, str], line_of: Callable, build: Callable, regex_problems: Callable
                   ) -> tuple[Rule | None, list[LoadProblem]]:
    """The rule a parsed document makes, or None and every problem found in it (each at its file:line).

    A trusted (bundled) document skips the schema and the regex checks (tests and `rules lint` run them); its
    schema is consulted only to explain a document that cannot be built.
    """
    problems = [] if trusted else schema.problems(document, node, shown)[:MAX_SCHEMA_PROBLEMS]
    if not isinstance(document, dict):
        return None, problems or [LoadProblem(shown, 0, "not a rule: the file holds no mapping of fields")]
    problems += _name_problems(document, node, shown, line_of)
    category = document.get("category")
    if isinstance(category, str) and category not in categories:
        problems.append(LoadProblem(shown, line_of(node, ["category"]), f"unknown category '{category}' (the "
                                    f"taxonomy's categories; {known_names_hint(category, categories)})"))
    rule_id = document.get("id")
    if isinstance(rule_id, str) and rule_id in seen:
        problems.append(LoadProblem(shown, line_of(node, ["id"]), f"duplicate rule id '{rule_id}' (also in {seen[rule_id]})"))
    try:
        rule = build(document, shown, node.start_mark.line + 1)
    except KeyError as exc:  # a signature names an error table, or a category, the tables do not have
        if not problems:
            problems = (trusted and schema.problems(document, node, shown)) or \
                [LoadProblem(shown, line_of(node, ["signatures"]), str(exc.args[0]))]
        return None, problems
    except (TypeError, AttributeError, ValueError) as exc:
        if problems:  # a document the schema refused cannot be built: its problems are said already
            return None, problems
        if not trusted:
            raise
        return None, schema.problems(document, node, shown) or [LoadProblem(
            shown, 0, f"not a rule vdiag can read ({type(exc).__name__}: {exc}); run `vdiag rules lint`")]
    if not trusted:
        problems += [LoadProblem(shown, line_of(node, ["signatures", i, "regex"]), why) for i, why in regex_problems(rule)]
    if problems:
        return None, problems
    seen[rule.id] = shown
    return rule, []


def _name_problems(document: dict, node, shown: str, line_of: Callable) -> list[LoadProblem]:
    conditions, fixes = document.get("conditions") or [], document.get("fixes") or []
    why_when = document.get("why_when") or []
    if not isinstance(conditions, list) or not isinstance(fixes, list) or not isinstance(why_when, list) or \
            not all(isinstance(fix, dict) for fix in fixes) or not all(isinstance(c, str) for c in conditions) or \
            not all(isinstance(case, dict) for case in why_when):
        return []  # the schema says what is wrong with their shape
    return [LoadProblem(shown, line_of(node, path), message)
            for path, message in vocabulary_problems(conditions, fixes, why_when)]
