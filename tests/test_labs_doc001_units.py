"""Document 001's units read as tc reads them, and the sweeps that follow from the reading."""
from wirelab.labs import doc001


def test_only_the_reading_that_keeps_the_data_off_the_shaper_fits_every_figure():
    table = doc001.readings_table()
    fits = table.groupby("reading")["fits"].all()
    # kbit/s or kB/s, its TCP beats the 100 and 1000 kbps links: the data did not cross them
    assert not fits["kbit/s"] and not fits["kB/s (tc's kbps)"]
    rate = table[table["figure"] == "tcp at tbf rate 10000kbps"].set_index("reading")
    assert rate.loc["kB/s (tc's kbps)", "fits"] and rate.loc["kB/s (tc's kbps)", "predicted_mbps"] > 75
    # 20.36 read as Mbit/s is its speed without loss; as kbit/s none of the three loss rates' model
    loss = table[table["figure"].str.startswith("tcp at")].query("reading in ['Mbit/s']")
    assert loss["fits"].all() and len(loss) == 3
    # "latency 50ms" as a path delay would keep a 0.1 MB file far below 20 Mbit/s
    latency = table[table["figure"] == "tbf latency 50ms"].set_index("reading")
    assert not latency.loc["a path delay of 50 ms", "fits"] and latency.loc["tbf's queue, no path delay", "fits"]


def test_the_sweeps_run_at_tcs_rates_and_lose_the_servers_packets():
    lab = doc001.sweeps()
    assert sorted({s["rate_bps"] for s in lab["rate"].experiment.settings()}) == [800e3, 8e6, 80e6]
    assert 10000 == 80e6 * doc001.TC_KBPS
    for setting in lab["loss"].experiment.settings():
        link = setting.link
        assert link.forward.loss == 0 and link.reverse.loss in (0.1, 0.2, 0.3)
        assert link.reverse.rate_bps == 8e6 and link.forward.delay_s == link.reverse.delay_s == 0
    files = lab["file"].experiment.settings()
    assert {s.proto for s in files} == {"tcp", "udpr"}
    assert {s["size_bytes"] for s in files} == {108632485, 65536615, 1985958, 3}   # and its 3 B edge case
    assert doc001.reference().query("experiment == 'loss' and protocol == 'tcp'")["speed_mbps"].eq(20.36).all()
