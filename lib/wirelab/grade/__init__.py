"""Grade a course's PPCB programs (client ``ppcbc`` + server ``ppcbs``, any language) the way an instructor would.

Read in this order: ``catalogue`` (the tests are data: catalogue.toml),
``sandbox`` (each submission's own uid, limits and sure end), ``jail`` (the
bubblewrap sandbox each program and build runs in) with ``cgroups`` (memory)
and ``disk`` (one bounded tmpfs), ``submission`` (find, copy, build), ``context`` (what a running test holds:
the stage a misbehaving peer's play runs on, and how the student's programs' endings are judged),
``transfers`` and ``scenarios_server``/``scenarios_tcp``/``scenarios_client`` (what the tests do: the
misbehaving peers are ``wirelab.peers``' plays, which the lab runs too), ``runner`` (one submission: testbed,
capture, deadline per test) with ``own_link`` (each student's own link for the tests that draw one), ``classroom`` (many, in parallel) with ``resume`` (what a
grading into the same report folder keeps from the last one),
``diagnose`` (how a failed transfer's bytes differ from its input: the cause, and advice for it alone),
``timing`` with ``wire_feedback`` (a test's capture judged against the protocol's clock, each finding
with its frames), ``prediction`` (the model's goodput), ``outcome`` (the records), ``report``
(JSON, HTML, CSV/parquet), ``expected`` (what a class should fail) and
``leftovers`` (after a grading: nothing of a grading uid left anywhere).
For course platforms: ``machine`` (which links this machine can build, so
which tests can run), ``formats`` (Gradescope's, PrairieLearn's and the
gradebooks' files) and ``autograder`` (a Gradescope autograder: the zip, and
what it runs in the platform's container).

    >>> from wirelab.grade import load_catalogue, grade_class, find_submissions, write_reports  # doctest: +SKIP
    >>> cat = load_catalogue()
    >>> graded = grade_class(find_submissions(class_dir="data/example-class"), cat, "reports", jobs=2)
    >>> write_reports(graded, "reports", cat)

Needs root: namespaces for the links, a user id per submission for the limits.
"""
from .._exports import lazy

_EXPORTS = {
    "load_catalogue": "catalogue", "Catalogue": "catalogue", "GradeTest": "catalogue",
    "Assignment": "catalogue", "Limits": "catalogue", "find_submissions": "submission",
    "grade_submission": "runner", "grade_class": "classroom", "Outcome": "outcome", "Graded": "outcome",
    "json_summary": "outcome", "save_graded": "outcome", "load_graded": "outcome",
    "write_reports": "report", "class_table": "report", "pass_rates": "report",
    "load_expected": "expected", "check_expected": "expected", "write_formats": "formats",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
