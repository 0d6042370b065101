"""Program directories as the server takes them (POST /programs).

A bundle is config.yaml's text and the source files it lists. The files a
manifest lists under `sources` are plain file names in its directory, so
they are found without a YAML parser: every file of the directory whose name
appears in config.yaml outside comments is sent. The server checks the
bundle against the manifest and names any file that is missing or extra.
"""

import os
import re

from .errors import LizardError

_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


def is_checksum(text):
    return isinstance(text, str) and bool(_HEX.match(text))


def _without_comments(yaml_text):
    lines = []
    for line in yaml_text.splitlines():
        # A comment starts at '#' at the start of a line or after white space.
        cut = re.search(r"(^|\s)#", line)
        lines.append(line[: cut.start()] if cut else line)
    return "\n".join(lines)


def _mentions(text, name):
    return re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w.-])", text) is not None


def read_bundle(directory):
    """{"config": ..., "sources": {name: text}} for a program directory."""
    config_path = os.path.join(directory, "config.yaml")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = f.read()
    except OSError as e:
        raise LizardError(f"cannot read {config_path}: {e.strerror}") from None
    text = _without_comments(config)
    sources = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name == "config.yaml" or not os.path.isfile(path) or not _mentions(text, name):
            continue
        with open(path, encoding="utf-8") as f:
            sources[name] = f.read()
    return {"config": config, "sources": sources}
