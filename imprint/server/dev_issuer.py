"""A development token issuer for trying the team server on one computer
(`imprint serve --http --database URL --dev-issuer`): an RSA key made in memory at start, its
OpenID metadata and JWKS served on a loopback port, and signed access tokens. It never leaves
the process: its key is gone when the server stops, and so is every token it signed. For a
team's data use the team's own issuer (`--issuer`)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from imprint.server.team_auth import SCOPES

__all__ = ["DEV_TOKEN_HOURS", "DevIssuer"]

DEV_TOKEN_HOURS = 8
KID = "dev"


class DevIssuer:
    """Serves its metadata and JWKS on 127.0.0.1 from start until `close`."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        jwks = json.dumps({"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]})
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = json.dumps({"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks"})
                elif self.path == "/jwks":
                    body = jwks
                else:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass  # stderr belongs to the server's own lines

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def token(self, sub: str, audience: str, groups: list[str]) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": sub,
            "aud": audience,
            "scope": " ".join(SCOPES),
            "groups": groups,
            "iat": now,
            "nbf": now,
            "exp": now + DEV_TOKEN_HOURS * 3600,
        }
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KID})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
