"""JupyterHub configuration for a class taking the attention course on one machine.

Every student and the instructor log in with their own OS account (PAM); each student's server
is a local process under their account (the local process spawner), behind
configurable-http-proxy; the course's part (the class, the students' JupyterLab, formgrader as a
hub service) is hub/course_config.py, loaded at the end. Start it as root, since the spawner
switches to each account: `jupyterhub -f hub/jupyterhub_config.py`. docs/jupyterhub.md is the
guide. Beside the course's settings (hub/course_config.py), these come from the environment:

    ATTENTION_HUB_URL         where students open the hub             http://127.0.0.1:8000
    ATTENTION_HUB_API_PORT    the hub's own API port (loopback)       8081
    ATTENTION_PROXY_API_PORT  the proxy's API port (loopback)         8001
    ATTENTION_HUB_STATE       the hub's database and cookie secret    the current folder
    ATTENTION_TLS_CERT        TLS certificate (full chain) and key:   (none: plain HTTP, for a
    ATTENTION_TLS_KEY         the hub serves https itself             hub behind a TLS proxy)
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent  # the environment the hub runs from
STATE = Path(os.environ.get("ATTENTION_HUB_STATE") or os.getcwd())

c.JupyterHub.bind_url = os.environ.get("ATTENTION_HUB_URL") or "http://127.0.0.1:8000"
# TLS: with a certificate and its key (e.g. Let's Encrypt's fullchain.pem and privkey.pem), the
# hub's proxy serves https; ATTENTION_HUB_URL then starts with https:// (port 443).
TLS = [os.environ.get("ATTENTION_TLS_CERT") or "", os.environ.get("ATTENTION_TLS_KEY") or ""]
if any(TLS):
    if not all(TLS):
        raise ValueError("Set both ATTENTION_TLS_CERT and ATTENTION_TLS_KEY (the certificate and its key), or neither.")
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = TLS
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('ATTENTION_HUB_API_PORT') or 8081}"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")

# The proxy is configurable-http-proxy, started and stopped by the hub. Formgrader answers its
# autograde and feedback buttons only when the work is done (a student's whole assignment: up to
# Grading.student_seconds), and this proxy's own default drops a request after 20 s: allow an hour.
PROXY_TIMEOUT_MS = 3600 * 1000
c.ConfigurableHTTPProxy.command = [
    str(BIN / "configurable-http-proxy"),
    f"--timeout={PROXY_TIMEOUT_MS}",
    f"--proxy-timeout={PROXY_TIMEOUT_MS}",
]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('ATTENTION_PROXY_API_PORT') or 8001}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# PAM: the machine's own accounts and passwords; each server a local process under its account.
c.JupyterHub.authenticator_class = "pam"
c.JupyterHub.spawner_class = "localprocess"

load_subconfig(str(HERE / "course_config.py"))  # noqa: F821 (provided by JupyterHub, as get_config)
