"""HTTP for the client: JSON requests with the bearer token, using urllib,
over TLS for https:// addresses (the ssl module; the server's certificate and
host name are verified against `ca` or the system's CAs).

Every failure becomes a LizardError whose message is the server's own
({"error": ...} of the answer) or says why the server could not be reached.
"""

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

from .errors import LizardError


class Connection:
    """Where the server is and how to talk to it."""

    def __init__(self, uri, token=None, timeout=60, ca=None):
        if "://" not in uri:
            uri = ("https://" if ca else "http://") + uri
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("http", "https"):
            raise LizardError(f"unsupported scheme in {uri!r} (use http://host:port "
                              "or https://host:port)")
        if not parts.hostname:
            raise LizardError(f"no host in {uri!r}")
        port = parts.port or 5000
        self.where = f"{parts.hostname}:{port}"
        self.base = f"{parts.scheme}://{self.where}{parts.path.rstrip('/')}"
        self.token = token
        self.timeout = timeout
        self.tls = None
        if parts.scheme == "https":
            try:
                self.tls = ssl.create_default_context(cafile=ca)
            except (OSError, ssl.SSLError) as e:
                raise LizardError(f"ca={ca!r}: cannot load it as PEM CA certificates ({e})") \
                    from None

    def request(self, method, path, body=None, content_type="application/json", timeout=None,
                length=None):
        """The answer's bytes for a 2xx answer; a LizardError otherwise.
        `body`: bytes, or an iterable of bytes-like chunks `length` bytes in
        all, each sent as it comes (an upload straight from an array's buffer)."""
        headers = {"User-Agent": "lizard-python"}
        if body is not None:
            headers["Content-Type"] = content_type
        if length is not None:
            headers["Content-Length"] = str(length)  # else urllib would send it chunked
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout,
                                        context=self.tls) as answer:
                return answer.read()
        except urllib.error.HTTPError as e:
            raise error_of_answer(e.code, e.read()) from None
        except (urllib.error.URLError, ConnectionError, socket.timeout, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise LizardError(
                    f"TLS: certificate verify failed for {self.where} ({reason.verify_message}); "
                    + ("the server's certificate is not for this address"
                       if "mismatch" in (reason.verify_message or "")
                       else "pass ca= with the CA that signed the server's certificate")) from None
            if isinstance(reason, ssl.SSLError):
                raise LizardError(f"TLS handshake with {self.where} failed ({reason}); does the "
                                  "server serve TLS?") from None
            raise LizardError(f"cannot reach {self.where}: {reason}", unreachable=True) from None

    def json(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode()
        raw = self.request(method, path, data, timeout=timeout)
        try:
            return json.loads(raw)
        except ValueError:
            raise LizardError(f"{method} {path}: the server's answer is not JSON") from None


def error_of_answer(status, body):
    """The LizardError for an HTTP error answer."""
    message = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
            message = parsed["error"]
    except ValueError:
        pass
    if status == 401:
        message += " (pass token= or set LIZARD_TOKEN)"
    return LizardError(message or f"HTTP {status}", status=status)
