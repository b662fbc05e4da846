"""A link layer that builds nothing: what the runner needs of ``wirelab.link``, without root
or namespaces. Tests of the runner's logic (sweeps, flows, adaptive repetitions) pass
``link_layer=FakeLinks``; the engine they pass decides what a run measures."""


class FakeLink:
    """What the runner needs of ``wirelab.link.open``'s result."""
    backend = "fake-wire"

    def __init__(self, spec):
        self.spec, self.closed = spec, False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed = True

    def unsupported(self, proto):
        return None

    def describe(self):
        return {"backend": self.backend, "emulated_by": "nothing (a test double)",
                "tc_commands": ["tc qdisc add dev a0 root tbf rate 10mbit burst 32kbit latency 50ms"]}


class FakeLinks:
    """The link layer's calls the runner makes; ``opened`` keeps the name of every link opened."""
    opened: list = []

    @staticmethod
    def backend_for(specs, requested):
        return "fake-wire"

    @staticmethod
    def open(spec, *, backend, seed, name):
        assert backend == "fake-wire"
        FakeLinks.opened.append(name)
        return FakeLink(spec)

    @staticmethod
    def wire_of(spec):
        return "emulated"

    @staticmethod
    def carriage(backend, proto):
        return "packets"
