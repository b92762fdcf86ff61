"""A token issuer for the auth tests: real keys made per test run, real signed JWTs.

An RSA (``rsa-1``, RS256) and an EC P-256 (``ec-1``, ES256) key pair are generated with
joserfc; :meth:`Issuer.jwks` is their public JWKS, what an operator's ``auth.jwks_file`` would
hold. :meth:`Issuer.mint` signs a token with either key; the attack tokens (``alg: none``, an
HS256 token whose HMAC secret is the RSA *public* key, a token signed by a stranger's key
under ``rsa-1``'s kid) are made by hand, the way an attacker would make them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

ISSUER = "https://id.test.example"
AUDIENCE = "https://mcp.test.example/mcp"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64json(value: Any) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode("utf-8"))


class Issuer:
    """Two signing keys and the tokens they sign."""

    def __init__(self) -> None:
        self.rsa = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
        self.ec = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
        self.stranger = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.rsa.as_dict(private=False), self.ec.as_dict(private=False)]}

    def claims(self, **changes: Any) -> dict[str, Any]:
        """Good claims for acme's acc-1, changed by ``changes`` (``None`` drops a claim)."""
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "acc-1",
            "org_id": "acme",
            "scope": "shop:read",
            "iat": now,
            "exp": now + 600,
        }
        base.update(changes)
        return {k: v for k, v in base.items() if v is not None}

    def mint(
        self, *, alg: str = "RS256", header: dict[str, Any] | None = None, **changes: Any
    ) -> str:
        """A token signed with the issuer's ``alg`` key (RS256: rsa-1, ES256: ec-1)."""
        key = self.rsa if alg == "RS256" else self.ec
        head = {"alg": alg, "kid": key.kid, **(header or {})}
        return jwt.encode(head, self.claims(**changes), key, algorithms=[alg])

    def by_stranger(self, **changes: Any) -> str:
        """Signed by another RSA key that claims to be ``rsa-1``: a bad signature."""
        head = {"alg": "RS256", "kid": "rsa-1"}
        return jwt.encode(head, self.claims(**changes), self.stranger, algorithms=["RS256"])

    def unsigned(self, **changes: Any) -> str:
        """``alg: none``: no signature at all."""
        return f"{b64json({'alg': 'none', 'typ': 'JWT'})}.{b64json(self.claims(**changes))}."

    def hs_confusion(self, **changes: Any) -> str:
        """HS256 with the RSA public key (its PEM, as the gateway's config holds it) as the
        HMAC secret: what a verifier that lets the token pick its algorithm would accept."""
        secret = self.rsa.as_pem(private=False)
        head = b64json({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"})
        body = b64json(self.claims(**changes))
        mac = hmac.new(secret, f"{head}.{body}".encode("ascii"), hashlib.sha256).digest()
        return f"{head}.{body}.{b64(mac)}"
