"""The error tree: one root, messages that say what to do."""
import pytest

from wirelab import errors


def test_every_error_is_a_wirelab_error():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.WirelabError)


def test_usage_errors_are_value_errors_too():
    assert issubclass(errors.UnitError, ValueError) and issubclass(errors.ModelError, ValueError)


def test_messages_name_problem_and_fix():
    err = errors.NeedsRootError("namespaces")
    assert str(err) == "needs root for namespaces: run with sudo or use the loopback backend"
    missing = errors.MissingToolError("tshark")
    assert "tshark is not installed" in str(missing) and "apt-get install tshark" in str(missing)
    assert str(errors.LinkError("no such testbed", "run `wirelab testbed ls`")).endswith("testbed ls`")


def test_tree_is_documented():
    for name in errors.__all__:
        assert name in errors.__doc__


@pytest.mark.parametrize("cls", [errors.CaptureError, errors.TransferError, errors.ExperimentError])
def test_errors_without_fix_keep_the_problem(cls):
    assert str(cls("went wrong")) == "went wrong"
