"""The Python client over https:// against a server with --tls-cert/--tls-key
and a worker over wss://; a CA that did not sign the server's certificate is
refused with the reason.  The certificates are made with the openssl command."""

import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import lizard
from cluster import SOURCE_DIR, LocalCluster

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="no openssl command to make certificates with")

CONFIG = """[req]
distinguished_name = dn
prompt = no
[dn]
CN = {name}
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
[server]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
"""
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def make_pki(d, name):
    """A CA and a server certificate for 127.0.0.1 that it signed: (cert, key, ca)."""
    p = os.path.join(d, name)
    with open(p + ".cnf", "w") as f:
        f.write(CONFIG.format(name=name + " CA"))
    with open(p + "-server.cnf", "w") as f:
        f.write(CONFIG.format(name="127.0.0.1"))

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-config", p + ".cnf", "-extensions", "ca", "-days", "2",
            "-keyout", p + "-ca.key", "-out", p + "-ca.pem", *EC)
    openssl("req", "-new", "-config", p + "-server.cnf", "-keyout", p + "-server.key",
            "-out", p + "-server.csr", *EC)
    openssl("x509", "-req", "-in", p + "-server.csr", "-CA", p + "-ca.pem", "-CAkey",
            p + "-ca.key", "-set_serial", "1", "-days", "2", "-extfile", p + ".cnf",
            "-extensions", "server", "-out", p + "-server.pem")
    return p + "-server.pem", p + "-server.key", p + "-ca.pem"


@pytest.fixture(scope="module")
def pki():
    d = tempfile.mkdtemp(prefix="lizard-pki-")
    yield make_pki(d, "lizard"), make_pki(d, "other")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_cluster(pki):
    c = LocalCluster(workers=1, tls=pki[0])
    yield c
    c.stop()


def test_a_run_over_https(tls_cluster):
    client = lizard.Client(tls_cluster.uri, ca=tls_cluster.ca)
    assert len(client.workers()) == 1  # the worker joined over wss://
    values = np.arange(12, dtype=np.float64).reshape(6, 2)
    run = client.run(os.path.join(SOURCE_DIR, "examples", "sum"), params={"dims": 2},
                     dataset={"values": values})
    np.testing.assert_allclose(run.aggregate["sums"], values.sum(axis=0))


def test_a_large_upload_over_https_arrives_whole(tls_cluster):
    from lizard._uploads import NpyBytes

    client = lizard.Client(tls_cluster.uri, ca=tls_cluster.ca)
    values = np.random.default_rng(3).normal(size=(5 << 20, 2))  # 80 MiB: many buffers
    handle = client.put(values)
    assert handle.bytes == NpyBytes(values).size and handle.digest == NpyBytes(values).digest()
    run = client.run(os.path.join(SOURCE_DIR, "examples", "sum"), params={"dims": 2},
                     dataset={"values": handle})
    np.testing.assert_allclose(run.aggregate["sums"], values.sum(axis=0), rtol=1e-9)
    client.delete_dataset(handle)


def test_a_certificate_from_another_ca_is_refused(tls_cluster, pki):
    other_ca = pki[1][2]
    with pytest.raises(lizard.LizardError) as e:
        lizard.Client(tls_cluster.uri, ca=other_ca).workers()
    assert "TLS: certificate verify failed for 127.0.0.1:" in str(e.value)
    assert "pass ca=" in str(e.value)
    # The server is still there for a client that trusts its CA.
    assert lizard.Client(tls_cluster.uri, ca=tls_cluster.ca).workers()
