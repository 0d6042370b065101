"""Client.map and Client.imap_unordered against a real server and CPU
workers: progress over the runs while they wait, and per-run state and seed."""

import io
import os

import numpy as np
import pytest

import lizard
from cluster import SOURCE_DIR
from lizard._progress import runs_text

KMEANS = os.path.join(SOURCE_DIR, "examples", "kmeans")
SUM = os.path.join(SOURCE_DIR, "examples", "sum")
VALUES = {"values": [[1.0], [2.0], [3.0]]}
POINTS = np.array([[-4, -4], [4, 4]] * 500, dtype=np.float32)  # two blobs of one point each


def has_tqdm():
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def test_map_shows_the_runs_done_while_it_waits(cluster):
    c = lizard.Client(cluster.uri)
    shown = io.StringIO()
    runs = c.map(SUM, [{"dims": 1}] * 3, dataset=VALUES, progress=shown)
    assert [r.aggregate["sums"][0] for r in runs] == [6.0] * 3
    text = shown.getvalue()
    assert ("3/3" in text) if has_tqdm() else text.endswith("runs 3/3 done\n"), text


def test_imap_unordered_shows_the_runs_done_and_nothing_when_told(cluster, capsys):
    c = lizard.Client(cluster.uri)
    shown = io.StringIO()
    seen = [r.id for r in c.imap_unordered(SUM, [{"dims": 1}] * 2, dataset=VALUES,
                                           progress=shown)]
    assert len(seen) == 2
    text = shown.getvalue()
    assert ("2/2" in text) if has_tqdm() else text.endswith("runs 2/2 done\n"), text
    c.map(SUM, [{"dims": 1}] * 2, dataset=VALUES, progress=False)
    assert "runs" not in capsys.readouterr().err


def test_a_run_that_did_not_finish_as_done_is_counted_apart():
    assert runs_text(8, 3, 0) == "runs 3/8 done"
    assert runs_text(8, 3, 1) == "runs 3/8 done, 1 failed"


def test_seed_per_run_as_a_list_a_function_or_one_for_all(cluster):
    c = lizard.Client(cluster.uri)
    params = [{"dims": 1}] * 3
    listed = c.map(SUM, params, dataset=VALUES, seed=[5, 6, 7], progress=False)
    assert [r.record["seed"] for r in listed] == [5, 6, 7]
    one = c.map(SUM, params, dataset=VALUES, seed=np.int64(9), progress=False)
    assert [r.record["seed"] for r in one] == [9, 9, 9]
    unordered = sorted(r.record["seed"] for r in c.imap_unordered(
        SUM, params, dataset=VALUES, seed=np.array([1, 2, 3]), progress=False))
    assert unordered == [1, 2, 3]
    params = [{"k": 2, "dims": 2, "max_iterations": n, "threshold": -1} for n in (1, 2, 3)]
    derived = c.map(KMEANS, params, dataset={"points": POINTS},
                    seed=lambda p: 100 + p["max_iterations"], progress=False)
    assert [r.record["seed"] for r in derived] == [101, 102, 103]


def test_state_per_run_as_a_list_or_a_function(cluster):
    c = lizard.Client(cluster.uri)
    pts = POINTS
    params = [{"k": 2, "dims": 2, "max_iterations": 1, "threshold": -1}] * 2
    # One iteration from the given centroids: each run's first state decides
    # which centroid takes which blob.
    starts = [{"centroids": [[-3, -3], [3, 3]]}, {"centroids": [[3, 3], [-3, -3]]}]
    runs = c.map(KMEANS, params, dataset={"points": pts}, state=starts, progress=False)
    np.testing.assert_allclose(runs[0].state["centroids"], [[-4, -4], [4, 4]])
    np.testing.assert_allclose(runs[1].state["centroids"], [[4, 4], [-4, -4]])
    flipped = c.map(KMEANS, params, dataset={"points": pts}, progress=False,
                    state=lambda p: {"centroids": [[3, 3], [-3, -3]]})
    for r in flipped:
        np.testing.assert_allclose(r.state["centroids"], [[4, 4], [-4, -4]])


def test_a_list_of_the_wrong_length_is_refused_before_any_run(cluster):
    c = lizard.Client(cluster.uri)
    before = len(c.runs())
    with pytest.raises(lizard.LizardError,
                       match="seed has 2 entries but params_list has 3 runs"):
        c.map(SUM, [{"dims": 1}] * 3, dataset=VALUES, seed=[1, 2])
    with pytest.raises(lizard.LizardError,
                       match="state has 1 entry but params_list has 2 runs"):
        list(c.imap_unordered(SUM, [{"dims": 1}] * 2, dataset=VALUES, state=[{}]))
    with pytest.raises(lizard.LizardError, match="seed must be an int"):
        c.map(SUM, [{"dims": 1}], dataset=VALUES, seed="seven")
    assert len(c.runs()) == before
