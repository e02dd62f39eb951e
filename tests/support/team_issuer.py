"""A local OAuth token issuer for the team-server tests: RSA keys made in the test, its metadata
and JWKS served on a loopback port, and JWT access tokens signed on demand."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

__all__ = ["Issuer", "issuer"]


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    def __init__(self) -> None:
        self.keys: dict[str, rsa.RSAPrivateKey] = {"k1": _key()}
        self.published = {"k1"}
        self.jwks_fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {
                        "issuer": issuer.url,
                        "jwks_uri": issuer.url + "/jwks",
                        "token_endpoint": issuer.url + "/token",
                    }
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    body = {"keys": [issuer.jwk(kid) for kid in sorted(issuer.published)]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def jwk(self, kid: str) -> dict[str, Any]:
        doc = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
        return {**doc, "kid": kid, "use": "sig", "alg": "RS256"}

    def rotate(self, kid: str) -> None:
        """A new key, published from now on."""
        self.keys[kid] = _key()
        self.published.add(kid)

    def token(
        self,
        sub: str,
        aud: str,
        *,
        scope: str = "imprint:read imprint:write",
        groups: list[str] | None = None,
        kid: str = "k1",
        iss: str = "",
        lifetime: float = 300,
        unpublished_key: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> str:
        now = time.time()
        claims: dict[str, Any] = {
            "iss": iss or self.url,
            "sub": sub,
            "aud": aud,
            "scope": scope,
            "iat": int(now),
            "nbf": int(now) - 1,
            "exp": int(now + lifetime),
            "client_id": "test-client",
        }
        if groups is not None:
            claims["groups"] = groups
        claims.update(extra or {})
        key = _key() if unpublished_key else self.keys[kid]
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    made = Issuer()
    try:
        yield made
    finally:
        made.close()
