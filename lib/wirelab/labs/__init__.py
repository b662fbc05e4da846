"""The labs: one module per source document, with its sweeps as data, its published tables,
the tables and figures that set them beside our measurements, and its exercises.

    from wirelab.labs import doc003
    lab = doc003.sweeps(quick=True)          # Sweeps by name; lab.values: what they were made with
    frame = lab["delays"].run("data/runs/09-five-node")

    doc000  thesis: TCP vs UDP for radar samples (offered load, buffers, clocks)     notebook 07
    doc001  PPCB over tcp, udp, udpr (the grid, §5's misbehaving peers)         notebooks 05, 10
    doc002  goodput prediction vs nttcp (η, frames on the wire, UDP loss vs S)   notebooks 01, 04
    doc003  end-to-end delay across five nodes                                        notebook 09
    doc004  iperf and tc on a 100 Mbit/s link                                    notebooks 03, 08
    bufferbloat  latency under load: a queue's size, the RTT it adds (no document)    notebook 11

How to add a lab (a new source document, say 005):

1. ``data/reference/seed005_<table>.csv``: the document's own numbers, named in
   ``wirelab.reference.REFERENCE_TABLES`` (papers' numbers only, never ours).
2. ``lib/wirelab/labs/doc005.py``: a docstring saying what the document did; ``FULL``
   (the document's values: axes, file sizes, MAX_WAIT, repetitions) and ``QUICK`` (the
   values CI and ``make demo`` run); ``sweeps(*, quick=False, **given) -> Lab`` building
   one ``Sweep`` per ``Experiment`` from ``lab.values(FULL, QUICK, quick, given)``; the
   tables that join its runs with the document (``reference()``) and the model, its
   figures, its exercises (a part that grows long goes into a module of its own named for
   what it is, and the lab's module hands its names on: document 004's table, ``iperf_tasks``).
   Never a deadline or a timeout: each run's deadline follows the plan's prediction
   (``wirelab.experiment.plan``). Where no engine of ``wirelab.engines``
   (wirelab, iperf3; several flows of them: ``wirelab.experiment.flows``) runs what the
   document did, the lab brings its own (an object with ``run``: ``wirelab.experiment.engine``),
   in a module beside it, and its ``Sweep`` names it: ``broker`` (document 003's five nodes)
   and ``peers`` (document 001 §5's misbehaving peers, the plays of ``wirelab.peers`` that the
   grader uses too, on the lab's stage ``labs.stage``) are two.
3. ``notebooks/NN-<topic>.ipynb``: narrative; a ``parameters`` cell of literals (``QUICK``,
   ``BACKEND``, ``OUT``, each of the lab's values as ``None`` = the lab's), the ``quick``
   cell for where quick runs go; ``lab = doc005.sweeps(quick=QUICK, ...)``; ``sweep.run``;
   the lab's tables and figures; exercises. Add it to ``tests/test_notebooks*.py``'s
   smaller values if a full quick run is long, and to the README's table.

Each module imports ``wirelab.experiment`` (the one runner), ``wirelab.analysis`` (what is read
back from a sweep) and the layers below them, never ``viz`` or ``grade``, and no other lab.
"""
from .._exports import lazy

_EXPORTS = {"Lab": "lab", "Sweep": "lab", "Exercise": "lab", "doc000": "doc000:__module__", "doc001": "doc001:__module__",
            "doc002": "doc002:__module__", "doc003": "doc003:__module__", "doc004": "doc004:__module__",
            "bufferbloat": "bufferbloat:__module__"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
