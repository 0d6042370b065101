"""HTTP for the client: JSON requests with the bearer token, using urllib.

Every failure becomes a LizardError whose message is the server's own
({"error": ...} of the answer) or says why the server could not be reached.
"""

import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from .errors import LizardError


class Connection:
    """Where the server is and how to talk to it."""

    def __init__(self, uri, token=None, timeout=60):
        if "://" not in uri:
            uri = "http://" + uri
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "http":
            raise LizardError(f"unsupported scheme in {uri!r} (use http://host:port)")
        if not parts.hostname:
            raise LizardError(f"no host in {uri!r}")
        port = parts.port or 5000
        self.where = f"{parts.hostname}:{port}"
        self.base = f"http://{self.where}{parts.path.rstrip('/')}"
        self.token = token
        self.timeout = timeout

    def request(self, method, path, body=None, content_type="application/json", timeout=None):
        """The answer's bytes for a 2xx answer; a LizardError otherwise."""
        headers = {"User-Agent": "lizard-python"}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as answer:
                return answer.read()
        except urllib.error.HTTPError as e:
            raise error_of_answer(e.code, e.read()) from None
        except (urllib.error.URLError, ConnectionError, socket.timeout, OSError) as e:
            reason = getattr(e, "reason", e)
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
