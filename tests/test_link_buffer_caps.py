"""The kernel's socket-buffer caps raised for one block, and given back, Ctrl-C included.

The caps are the machine's: these tests raise them for well under a second, to a value
no other test asks for, and put them back."""
import os
import socket

import pytest

from wirelab.link import buffer_caps
from wirelab.link.buffer_caps import raised_caps, read_caps

root = pytest.mark.skipif(os.geteuid() != 0, reason="raising net.core.rmem_max needs root")


@root
def test_a_raised_cap_lets_a_socket_have_its_buffer_and_is_given_back():
    before = read_caps()
    wanted = max(before.values()) + 4096
    with raised_caps(wanted) as caps:
        assert read_caps() == {name: wanted for name in before} and set(caps["raised"]) == set(before)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, wanted)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * wanted
    assert read_caps() == before


@root
def test_an_interrupt_inside_gives_the_caps_back_and_a_high_cap_is_left_alone():
    before = read_caps()
    with pytest.raises(KeyboardInterrupt):
        with raised_caps(max(before.values()) + 8192):
            raise KeyboardInterrupt
    assert read_caps() == before
    with raised_caps(1024) as caps:                   # already higher: nothing to do
        assert caps["raised"] == {} and read_caps() == before


def test_without_root_nothing_changes_and_it_says_why(monkeypatch):
    monkeypatch.setattr(buffer_caps.os, "geteuid", lambda: 1000)
    before = read_caps()
    with raised_caps(max(before.values()) + 1) as caps:
        assert caps["raised"] == {} and "needs root" in caps["why_not"] and read_caps() == before
