"""A sweep's decisions, made once before its first run and read by every run.

    plan = Plan(experiment, engine)       # settings, backend, the machine
    plan.predictions(setting)             # the model's pred_* columns for exactly this setting
    plan.deadline(setting)                # seconds this setting's runs may take
    plan.late()                           # settings the model expects to outlast the user's timeout

What is decided here, and nowhere else:

* the settings: ``experiment.settings()`` is built once (here, or by the runner, which
  gives them to the plan and reads its runs and extra repetitions from them);
* the backend: one for the whole sweep (runs never mix kinds of link), from the link
  layer's one rule (``wirelab.link.backend_for``) over every link the sweep opens
  (a setting's ``LinkSpec``, or the links of the topology its engine opens instead);
  ``wirelab.link.open`` is then given that name and only checks it;
* the engine of each setting: the sweep's, or the flows engine for settings that run
  several flows on one link (``flows``), composed of the sweep's;
* the machine: sysctls, kernel, versions (``meta.collect``), TCP timestamps and the
  default congestion control the model needs (across hosts: each side's facts too, and the
  sender's kernel; a pair that cannot be shaped is predicted for its real path: ``cluster``);
* each setting's predictions, computed once (and again only for a new host round trip,
  the stop-and-wait model's input: ``calibration``), used by the check before the runs
  and by the runs themselves, with the deadline derived from them (``deadline``).

The status of a run is decided by one rule for every engine (``status``).
"""
from __future__ import annotations

from .. import link as links
from . import meta as machine
from ..link.topology import Topology
from .deadline import deadline_s, too_long
from .engine import capabilities
from .linklayer import layer_capabilities
from .prediction import predict_columns
from .spec import Experiment, Setting

__all__ = ["Plan"]


class Plan:
    """What a sweep decides once (see the module docstring)."""

    def __init__(self, experiment: Experiment, engine, *, settings: list[Setting] | None = None, link_layer=links):
        self.experiment, self.engine, self.link_layer = experiment, engine, link_layer
        layer, can = layer_capabilities(link_layer), capabilities(engine)
        self._flows = None
        self._predicted: dict[tuple, dict] = {}
        self.settings: list[Setting] = settings if settings is not None else experiment.settings()
        self.backend: str = link_layer.backend_for(
            [spec for s in self.settings for spec in _specs(self.link_for(s))], experiment.backend)
        self.info = machine.collect(extra={"engine": can.name, "backend": self.backend,
                                           "engine_info": can.info()})
        sysctls = self.info["sysctls"]
        if layer.facts is not None:      # across real hosts: each side's own facts; the sender's kernel
            self.info["hosts"] = layer.facts()
        if layer.sender_sysctls is not None:
            sysctls = layer.sender_sysctls() or sysctls
        self.timestamps = machine.tcp_timestamps_enabled(sysctls)
        self.default_cc = sysctls.get("net.ipv4.tcp_congestion_control")

    def engine_for(self, setting: Setting):
        """The sweep's engine, or for a setting with flows the flows engine made of it."""
        if not setting["flows"]:
            return self.engine
        if self._flows is None:
            from .flows import Flows         # read only by sweeps that have flows
            self._flows = Flows(self.engine, predict=self.predictions)
        return self._flows

    def link_for(self, setting: Setting):
        """What a run of ``setting`` opens: its ``LinkSpec``, or its engine's topology."""
        return capabilities(self.engine_for(setting)).topology(setting)

    def predictions(self, setting: Setting, *, host_rtt_s: float | tuple | None = None, engine=None) -> dict:
        """The model's ``pred_*`` columns for exactly ``setting``, framed as ``engine`` (default: the
        setting's) frames data, with the machine's congestion control where the setting names
        none, carried the way the backend carries it (and metered, where its rate is tbf's), with
        the host's measured round trip."""
        engine = engine if engine is not None else self.engine_for(setting)
        key = (setting.setting_id, id(engine), host_rtt_s)
        if key not in self._predicted:
            can, layer = capabilities(engine), layer_capabilities(self.link_layer)
            if can.predict is not None:
                made = dict(can.predict(setting))
            else:
                framing = dict(can.framing(setting) or {})
                carriage = layer.carriage(self.backend, setting.proto)
                params, wire = setting.params, layer.wire_of(setting.link)
                if layer.path_params is not None:   # across hosts that cannot shape: the real path
                    params, wire = layer.path_params(setting)
                meter = layer.meter_bytes(self.backend, setting.link)
                made = predict_columns(params, wire=wire,
                                       timestamps=self.timestamps, default_cc=self.default_cc,
                                       carriage=carriage, host_rtt_s=host_rtt_s, meter_bytes=meter, **framing)
            self._predicted[key] = made
        return dict(self._predicted[key])

    def deadline(self, setting: Setting, *, host_rtt_s: float | tuple | None = None) -> float:
        """Seconds a run of ``setting`` may take: the user's timeout, else from the prediction."""
        return deadline_s(setting, self.predictions(setting, host_rtt_s=host_rtt_s), self.experiment.timeout)

    def late(self, *, host_rtt_s: float | tuple | None = None) -> list[tuple[Setting, float]]:
        """(setting, expected seconds) of the settings predicted to outlast the user's timeout."""
        return too_long([(s, self.predictions(s, host_rtt_s=host_rtt_s)) for s in self.settings],
                        self.experiment.timeout)


def _specs(opened) -> list:
    """The ``LinkSpec``s of what a run opens (one, or every link of a topology)."""
    return [link.spec for link in opened.links] if isinstance(opened, Topology) else [opened]
