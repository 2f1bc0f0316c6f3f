"""The TLS context for GitHub and Actions calls: system roots plus an optional custom CA.

ARC clones the system certificate pool and appends `server_root_ca`. When the
system pool is empty (minimal containers) certifi's bundle stands in for it.
"""

from __future__ import annotations

import ssl

import certifi


def tls_context(root_ca_pem: str | None = None, *, verify: bool = True) -> ssl.SSLContext:
    """A client context trusting the system roots and `root_ca_pem` (one or more PEM certs)."""
    context = ssl.create_default_context()
    if not context.cert_store_stats().get("x509_ca"):
        context.load_verify_locations(cafile=certifi.where())
    if root_ca_pem:
        try:
            context.load_verify_locations(cadata=root_ca_pem)
        except ssl.SSLError as error:
            raise ValueError("the custom root CA is not a valid PEM certificate") from error
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
