"""lizard: run CUDA programs across a cluster of GPU machines, from Python.

    import lizard
    c = lizard.Client("http://127.0.0.1:5000")
    run = c.run("examples/kmeans", params={"k": 4, "dims": 2},
                dataset={"points": points}, state={"centroids": points[:4]})
    run.state["centroids"]          # a numpy array shaped as the manifest says

Client.map and Client.imap_unordered start many runs at once; every
failure raises LizardError with the server's message.
"""

from .client import Client, Upload
from .errors import LizardError
from .run import Run

__all__ = ["Client", "LizardError", "Run", "Upload"]
__version__ = "0.1.0"
