"""A course platform's autograder made of wirelab's grader: ``bundle`` builds the zip Gradescope
takes (setup.sh, run_autograder, this wirelab, the course's tests), ``run`` is what its
run_autograder does for each submission inside the platform's container (what it may run
there, and how, is said in run.py's docstring).

    wirelab autograder bundle gradescope --tests hidden.toml --out autograder.zip
    WIRELAB_AUTOGRADER_ROOT=/tmp/ag /tmp/ag/run_autograder      # a test's /autograder
"""
from .bundle import APT_PACKAGES, CONFIG, PLATFORMS, build_bundle
from .run import ROOT_ENV, load_config, locate_submission, run_autograder

__all__ = ["build_bundle", "run_autograder", "load_config", "locate_submission", "APT_PACKAGES", "CONFIG",
           "PLATFORMS", "ROOT_ENV"]
