"""HTTPS for the REST API, and the kubeconfig the daemon writes.

kubectl never sends a bearer token over plain http (client-go reads the auth info
only for TLS transports), so with a token the HTTP port serves HTTPS: with the
configured certificate (DaemonConfiguration `tls`), or with a certificate signed by
a CA the daemon makes in `<data-dir>/tls/` on its first start and reuses after
(the `openssl` command makes them: a 10-year CA, a 2-year server certificate for
127.0.0.1, ::1, localhost and the HTTP host).

`<data-dir>/kubeconfig` (mode 0600) names the server URL, the CA (inline) and the
token, so `kubectl --kubeconfig .ksched/kubeconfig get pods` works at once.
"""
from __future__ import annotations

import base64
import ipaddress
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

TLS_DIR = "tls"
KUBECONFIG = "kubeconfig"


class TlsSetupError(Exception):
    """The certificate cannot be made; the message says why."""


@dataclass(frozen=True, slots=True)
class ServingCert:
    cert_file: Path
    key_file: Path
    ca_file: Path  # what a client trusts: the CA for a made certificate


def _san(host: str) -> str:
    names = ["IP:127.0.0.1", "IP:::1", "DNS:localhost"]
    if host and host not in ("0.0.0.0", "::", "127.0.0.1", "::1", "localhost"):
        try:
            ipaddress.ip_address(host)
            names.append(f"IP:{host}")
        except ValueError:
            names.append(f"DNS:{host}")
    return ",".join(names)


def _openssl(*args: str) -> None:
    try:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)
    except subprocess.CalledProcessError as exc:
        raise TlsSetupError(f"openssl {args[0]} failed: {exc.stderr.decode(errors='replace').strip()}") from None
    except subprocess.TimeoutExpired:
        raise TlsSetupError(f"openssl {args[0]} did not finish within 120 s") from None


def self_signed(data_dir: Path, host: str) -> ServingCert:
    """The CA and server certificate in `<data_dir>/tls/`, made on first use."""
    d = data_dir / TLS_DIR
    out = ServingCert(d / "server.crt", d / "server.key", d / "ca.crt")
    if out.cert_file.exists() and out.key_file.exists() and out.ca_file.exists():
        return out
    if shutil.which("openssl") is None:
        raise TlsSetupError("a token is configured, so the HTTP port serves HTTPS, and its certificate is made with "
                            "the openssl command, which is not installed; install openssl or configure tls.certFile "
                            "and tls.keyFile")
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    d.mkdir(exist_ok=True, mode=0o700)
    ca_key, csr, ext = d / "ca.key", d / "server.csr", d / "server.ext"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=ksched-ca",
             "-keyout", str(ca_key), "-out", str(out.ca_file))
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=ksched", "-keyout", str(out.key_file),
             "-out", str(csr))
    ext.write_text(f"subjectAltName={_san(host)}\nbasicConstraints=CA:FALSE\n"
                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(out.ca_file), "-CAkey", str(ca_key), "-CAcreateserial",
             "-days", "730", "-extfile", str(ext), "-out", str(out.cert_file))
    for f in (ca_key, out.key_file):
        f.chmod(0o600)
    csr.unlink(missing_ok=True)
    ext.unlink(missing_ok=True)
    return out


def client_host(host: str) -> str:
    """The host a client on this machine dials for a listen address."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def write_kubeconfig(path: Path, server: str, *, ca_file: Path | None = None, token: str | None = None) -> None:
    """Write a kubeconfig for `server` (atomically, mode 0600: it may hold the token)."""
    cluster: dict[str, object] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    user: dict[str, object] = {"token": token} if token else {}
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
           "clusters": [{"name": "ksched", "cluster": cluster}],
           "users": [{"name": "ksched", "user": user}],
           "contexts": [{"name": "ksched", "context": {"cluster": "ksched", "user": "ksched", "namespace": "default"}}],
           "current-context": "ksched"}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kubeconfig.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
