"""_plain: values and rows asked by type, not probed with hasattr."""
import io
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd

from wirelab._plain import field, is_file_object, is_frame, is_numpy_scalar, plain


def test_numpy_scalars_become_python_numbers_and_the_rest_stays():
    assert plain(np.float64(1.5)) == 1.5 and type(plain(np.float64(1.5))) is float
    assert type(plain(np.int64(3))) is int and plain(np.bool_(True)) is True
    for value in (1.5, "x", None, [1], np.array([1, 2])):
        assert plain(value) is value
    assert is_numpy_scalar(np.uint8(7)) and not is_numpy_scalar(7)


def test_tables_rows_and_file_objects_are_told_apart():
    frame = pd.DataFrame({"a": [1]})
    assert is_frame(frame) and not is_frame(frame["a"]) and not is_frame([{"a": 1}])
    row = frame.iloc[0]
    assert field(row, "a") == 1 and field({"a": 2}, "a") == 2 and field({"a": 2}, "b", 9) == 9
    assert field(namedtuple("Row", "a")(3), "a", "none") == "none"       # not a mapping: the default
    assert is_file_object(io.BytesIO(b"")) and not is_file_object("x.pcap") and not is_file_object(Path("x"))
    assert not is_file_object(b"bytes") and not is_file_object(memoryview(b"x"))
