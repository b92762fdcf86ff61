"""JWT access tokens, verified as an OAuth 2.1 resource server does (RFC 9068, RFC 8725).

:class:`JwtVerifier` takes a bearer token and answers with data, never an exception: a
:class:`Verified` (who the token says the caller is: tenant, account, granted scopes) or a
:class:`Refused` with the reason in words a person can act on, which the HTTP edge puts in the
``WWW-Authenticate`` header's ``error_description`` (:mod:`maitred.gateway.auth`). The checks,
in order, each with its own reason:

1. the token is a JWS in compact form (three base64url parts) whose header is a JSON object;
   an encrypted token (five parts) is not one;
2. its ``alg`` is one the config accepts (``auth.algorithms``, asymmetric only): ``none`` is
   refused by name, and so is every ``HS*`` -- a resource server holds the issuer's *public*
   key, and an HMAC checked with a public key as its secret is the classic confusion attack;
   a ``crit`` header names nothing this verifier understands, so one is refused;
3. a key: the one whose ``kid`` the header names (a JWKS fetched from a URL is fetched again
   once when the ``kid`` is unknown -- the issuer rotated its keys -- at most once per
   :data:`REFRESH_MIN_S`), or the only key of the set that fits the ``alg`` when the header
   names none. Its type must fit the ``alg`` (RSA for ``RS*``/``PS*``, the ``alg``'s curve for
   ``ES*``, OKP for ``EdDSA``), its ``use`` (when given) must be ``sig`` and its ``alg``
   (when given) the token's; symmetric keys in a JWKS are never used;
4. the signature verifies against that key (joserfc);
5. the claims: ``exp`` is required and not past (``leeway_s`` allowed for clock skew), ``nbf``
   (when present) not in the future, ``iss`` is ``auth.issuer`` exactly, ``aud`` (a string or
   a list) holds ``auth.audience``;
6. the identity: ``account_claim`` (``sub`` by default) names the account, ``tenant_claim``
   the tenant (or every token has ``auth.tenant``), ``scope_claim`` (``scope``: a
   space-separated string, or a list) the granted scopes. The account and the tenant must be
   ids the decision log can store (:func:`maitred.log.storable.identity_fault`: no NUL, no
   lone surrogate, at most 512 bytes): a validly signed token naming another is refused here,
   ``invalid_token``, rather than failing every decision made for it later.

Values quoted in a reason come from the token, which anyone can write: they are cut short and
made printable ASCII without quotes (RFC 6750 allows nothing else in ``error_description``).

A token that passed is remembered until it expires (:data:`REMEMBERED` at most), so a client
that sends the same token with every request costs one signature check, not one per request;
an issuer that withdraws a key therefore stops tokens signed with it at their ``exp``, which
is how JWT access tokens are meant to be revoked (keep them short-lived).

**Keys** come from one of: a JWKS file (read at start), a JWKS URL on the operator's network
(fetched on first use with ``jwks_timeout_s``, at most :data:`MAX_JWKS_BYTES`, cached for
``jwks_cache_s``; a fetch that fails while no earlier copy is cached is
:class:`Unavailable`, and the HTTP edge answers 503, failing closed), or one PEM public key.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

import anyio
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet, OKPKey, RSAKey

from maitred._ijson import loads
from maitred.errors import ConfigError
from maitred.gateway.config import NAME_PATTERN, AuthOptions
from maitred.log.storable import identity_fault

#: asymmetric JWS algorithms a config may accept, and the key type (and curve) each needs
KEY_TYPES: Mapping[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}
#: the fewest seconds between two fetches of a JWKS URL for an unknown ``kid``
REFRESH_MIN_S = 30.0
#: the largest JWKS document fetched from a URL
MAX_JWKS_BYTES = 1 << 20
#: how many verified tokens are remembered until they expire (least recently used dropped)
REMEMBERED = 1024
_QUOTED = 60  # characters of a token's own value quoted in a reason


@dataclass(frozen=True)
class Verified:
    """A token that passed every check: who it says the caller is.

    Attributes:
        tenant: from ``tenant_claim``, or the config's one ``tenant``.
        account: from ``account_claim`` (whose state the gates read).
        scopes: the scopes it grants.
        claims: every claim of the token, as sent.
        expires_at: its ``exp`` (unix seconds).
    """

    tenant: str
    account: str
    scopes: frozenset[str]
    claims: Mapping[str, Any] = field(default_factory=dict)
    expires_at: int | None = None


@dataclass(frozen=True)
class Refused:
    """A token that failed a check: ``reason`` says which, for the ``error_description``."""

    reason: str


@dataclass(frozen=True)
class Unavailable:
    """The token could not be checked at all (the JWKS URL did not answer): ``reason``."""

    reason: str


Outcome = Verified | Refused | Unavailable


def quoted(value: Any) -> str:
    """A value from a token, safe to put in a header: printable ASCII, no quote or backslash,
    at most a few dozen characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True)
    safe = "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)
    return safe if len(safe) <= _QUOTED else safe[: _QUOTED - 3] + "..."


def _when(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{seconds:g} (unix seconds)"


def _b64json(part: str) -> Any:
    """A base64url part as I-JSON: a repeated member (two ``exp`` claims that two readers
    could read differently) or a number that is not finite is no token."""
    padded = part + "=" * (-len(part) % 4)
    return loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has the shape of a JWT (dot-separated base64url parts) at all."""
    return re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*){2,4}", token) is not None


class KeySource:
    """The issuer's public keys: fixed (a JWKS file, a PEM key) or fetched from a URL."""

    def __init__(
        self,
        keys: Sequence[Key] = (),
        *,
        url: str = "",
        timeout_s: float = 5.0,
        cache_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.keys = list(keys)
        self.url = url
        self.timeout_s = timeout_s
        self.cache_s = cache_s
        self.clock = clock
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def current(self) -> list[Key] | Unavailable:
        """The keys now: a URL's are fetched when none are cached or the cache expired (an
        expired copy is still used while the URL does not answer)."""
        if not self.url:
            return self.keys
        fetched = self._fetched_at
        if fetched is not None and self.clock() - fetched < self.cache_s:
            return self.keys
        return await self._fetch(since=fetched)

    async def refresh(self) -> list[Key] | Unavailable:
        """The keys fetched again for a ``kid`` not among them (at most once per
        :data:`REFRESH_MIN_S`); the fixed keys of a file or PEM as they are."""
        fetched = self._fetched_at
        if not self.url or (fetched is not None and self.clock() - fetched < REFRESH_MIN_S):
            return self.keys
        return await self._fetch(since=fetched)

    async def _fetch(self, since: float | None) -> list[Key] | Unavailable:
        async with self._lock:  # one fetch at a time; a waiter uses what the first fetched
            if self._fetched_at != since:
                return self.keys
            try:
                raw = await anyio.to_thread.run_sync(self._get)
                keys = parse_jwks(raw, self.url)
            except (OSError, ConfigError, ValueError) as exc:
                self._fetched_at = self.clock() - self.cache_s + REFRESH_MIN_S  # retry later
                if self.keys:  # serve with the keys known before
                    return self.keys
                return Unavailable(f"the issuer's keys could not be fetched from {self.url}: {exc}")
            self.keys, self._fetched_at = keys, self.clock()
            return keys

    def _get(self) -> bytes:
        request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            data: bytes = response.read(MAX_JWKS_BYTES + 1)
        if len(data) > MAX_JWKS_BYTES:
            raise ValueError(f"the JWKS is larger than {MAX_JWKS_BYTES} bytes")
        return data


def parse_jwks(raw: bytes | str, where: str) -> list[Key]:
    """The signing keys of a JWKS document (symmetric keys left out).

    Raises:
        ConfigError: it is not JSON, has no ``keys`` list, or holds no usable public key.
    """
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: the JWKS is not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ConfigError(f'{where}: a JWKS is a JSON object {{"keys": [...]}}')
    try:
        found = KeySet.import_key_set({"keys": [k for k in data["keys"] if isinstance(k, dict)]})
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{where}: the JWKS holds no usable key ({exc})") from None
    keys = [k for k in found.keys if k.key_type in ("RSA", "EC", "OKP")]
    if not keys:
        raise ConfigError(f"{where}: the JWKS holds no public RSA, EC or OKP key")
    return keys


def parse_pem(text: str, where: str) -> Key:
    """One PEM public key (RSA, EC or Ed25519/Ed448), never read as a shared secret.

    Raises:
        ConfigError: the text is not such a key.
    """
    for kind in (RSAKey, ECKey, OKPKey):
        try:
            key: Key = kind.import_key(text)
        except (JoseError, ValueError, TypeError):
            continue
        key.ensure_kid()
        return key
    raise ConfigError(f"{where}: not a PEM public key (RSA, EC or Ed25519)")


def key_source(options: AuthOptions, where: str) -> KeySource:
    """The key source ``options`` name (files read now).

    Raises:
        ConfigError: the file cannot be read or holds no usable key (naming the field).
    """
    if options.jwks_url:
        return KeySource(
            url=options.jwks_url, timeout_s=options.jwks_timeout_s, cache_s=options.jwks_cache_s
        )
    path, field_name = (
        (options.jwks_file, "auth.jwks_file")
        if options.jwks_file
        else (options.public_key, "auth.public_key")
    )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: field {field_name!r}: cannot read {path}: {exc}") from None
    at = f"{where}: field {field_name!r} ({path})"
    if options.jwks_file:
        return KeySource(parse_jwks(text, at))
    return KeySource([parse_pem(text, at)])


class JwtVerifier:
    """Checks JWT access tokens against one issuer, audience and key source (see the module)."""

    def __init__(
        self,
        options: AuthOptions,
        keys: KeySource,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.options = options
        self.keys = keys
        self.clock = clock
        #: tokens that passed every check, until they expire (a client sends its token with
        #: every request; a signature is verified once, not per request)
        self._verified: OrderedDict[str, Verified] = OrderedDict()

    @classmethod
    def open(cls, options: AuthOptions, where: str) -> JwtVerifier:
        """A verifier for ``options`` (``where`` names the config in errors)."""
        return cls(options, key_source(options, where))

    async def verify(self, token: str) -> Outcome:
        """Check ``token`` (see the module docstring for the order and the reasons).

        A token that passed is remembered (at most :data:`REMEMBERED` of them) and accepted
        again without its signature being verified anew, until its ``exp`` (with the leeway)
        has passed.
        """
        known = self._verified.get(token)
        if known is not None:
            if (
                known.expires_at is not None
                and self.clock() <= known.expires_at + self.options.leeway_s
            ):
                self._verified.move_to_end(token)
                return known
            del self._verified[token]
        outcome = await self._verify(token)
        if isinstance(outcome, Verified):
            self._verified[token] = outcome
            while len(self._verified) > REMEMBERED:
                self._verified.popitem(last=False)
        return outcome

    async def _verify(self, token: str) -> Outcome:
        parts = token.split(".")
        if len(parts) != 3:
            kind = "an encrypted JWT (JWE)" if len(parts) == 5 else "not a JWT"
            return Refused(f"the token is {kind}; send a signed JWT access token")
        try:
            header = _b64json(parts[0])
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return Refused("the token's header is not base64url-encoded I-JSON")
        if not isinstance(header, dict):
            return Refused("the token's header is not a JSON object")
        refused = self._header(header)
        if refused is not None:
            return refused
        alg = str(header["alg"])
        key = await self._key(header.get("kid"), alg)
        if not isinstance(key, Key):
            return key
        registry = jws.JWSRegistry(algorithms=[alg], strict_check_header=False)
        try:
            jws.deserialize_compact(token, key, algorithms=[alg], registry=registry)
        except JoseError as exc:
            if exc.error == "bad_signature":
                return Refused(f"the signature does not verify with the issuer's key {key.kid}")
            return Refused(f"the token could not be verified ({exc.error})")
        try:
            claims = _b64json(parts[1])
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return Refused("the token's claims are not base64url-encoded I-JSON")
        if not isinstance(claims, dict):
            return Refused("the token's claims are not a JSON object")
        return self._claims(claims)

    def _header(self, header: Mapping[str, Any]) -> Refused | None:
        alg = header.get("alg")
        accepted = ", ".join(self.options.algorithms)
        if not isinstance(alg, str) or not alg:
            return Refused("the token's header names no alg")
        if alg.lower() == "none":
            return Refused("alg none (an unsigned token) is never accepted")
        if alg not in self.options.algorithms:
            return Refused(f"alg {quoted(alg)} is not accepted here (accepted: {accepted})")
        crit = header.get("crit")
        if crit is not None:
            return Refused(f"the token's crit header {quoted(crit)} names nothing understood")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            return Refused("the token's kid is not a string")
        return None

    async def _key(self, kid: str | None, alg: str) -> Key | Refused | Unavailable:
        keys = await self.keys.current()
        if isinstance(keys, Unavailable):
            return keys
        found = _pick(keys, kid, alg)
        if found is None and kid is not None:  # the issuer may have rotated its keys
            keys = await self.keys.refresh()
            if isinstance(keys, Unavailable):
                return keys
            found = _pick(keys, kid, alg)
        if found is None:
            if kid is not None:
                return Refused(f"no key of the issuer has kid {quoted(kid)}")
            return Refused(
                f"the token names no kid and the issuer's keys hold "
                f"{'several' if _fits(keys, alg) else 'no'} {alg} key(s); send a kid"
            )
        misfit = _misfit(found, alg)
        return Refused(misfit) if misfit else found

    def _claims(self, claims: Mapping[str, Any]) -> Verified | Refused:
        o = self.options
        now, leeway = self.clock(), o.leeway_s
        exp = claims.get("exp")
        if not _number(exp):
            return Refused("the token has no exp (expiry) claim")
        if now > exp + leeway:
            return Refused(f"the token expired at {_when(exp)} (leeway {leeway:g} s)")
        nbf = claims.get("nbf")
        if nbf is not None and (not _number(nbf) or now < nbf - leeway):
            when = _when(nbf) if _number(nbf) else quoted(nbf)
            return Refused(f"the token is not valid before {when} (nbf; leeway {leeway:g} s)")
        iss = claims.get("iss")
        if iss != o.issuer:
            said = f"issuer {quoted(iss)}" if iss is not None else "no issuer (iss)"
            return Refused(f"the token names {said}, not {quoted(o.issuer)}")
        aud = claims.get("aud")
        auds = aud if isinstance(aud, list) else [aud]
        if not any(a in o.audience for a in auds if isinstance(a, str)):
            said = f"audience {quoted(aud)}" if aud is not None else "no audience (aud)"
            wanted = " or ".join(quoted(a) for a in o.audience)
            return Refused(f"the token is for {said}, not this gateway ({wanted})")
        return self._identity(claims, exp)

    def _identity(self, claims: Mapping[str, Any], exp: float) -> Verified | Refused:
        o = self.options
        account = claims.get(o.account_claim)
        if not isinstance(account, str) or not account:
            return Refused(
                f"the token has no {o.account_claim} claim (a string) naming the account"
            )
        if fault := identity_fault(account):  # the log could not store it: refused here
            return Refused(f"the token's {o.account_claim} claim {fault}")
        tenant = o.tenant
        if o.tenant_claim:
            named = claims.get(o.tenant_claim)
            if not isinstance(named, str) or not named:
                return Refused(
                    f"the token has no {o.tenant_claim} claim (a string) naming the tenant"
                )
            if not NAME_PATTERN.match(named):
                return Refused(
                    f"the token's {o.tenant_claim} {quoted(named)} is not a tenant name "
                    "(letters, digits, '_', '.', '-', at most 64)"
                )
            tenant = named
        if fault := identity_fault(tenant):
            return Refused(f"the token's tenant {fault}")
        granted = claims.get(o.scope_claim)
        if granted is None:
            scopes: frozenset[str] = frozenset()
        elif isinstance(granted, str):
            scopes = frozenset(granted.split())
        elif isinstance(granted, list) and all(isinstance(s, str) for s in granted):
            scopes = frozenset(granted)
        else:
            return Refused(f"the token's {o.scope_claim} claim is not a string or a list of them")
        return Verified(tenant, account, scopes, dict(claims), int(exp))


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fits(keys: Sequence[Key], alg: str) -> list[Key]:
    return [k for k in keys if _misfit(k, alg) is None]


def _pick(keys: Sequence[Key], kid: str | None, alg: str) -> Key | None:
    if kid is not None:
        return next((k for k in keys if k.kid == kid), None)
    fits = _fits(keys, alg)
    return fits[0] if len(fits) == 1 else None


def _misfit(key: Key, alg: str) -> str | None:
    """Why ``key`` cannot verify an ``alg`` signature (``None``: it can)."""
    kty, curve = KEY_TYPES[alg]
    if key.key_type != kty:
        return f"the issuer's key {key.kid} is {key.key_type}, which cannot verify {alg}"
    if curve is not None and isinstance(key, ECKey) and key.curve_name != curve:
        return f"the issuer's key {key.kid} is on {key.curve_name}, not {curve} ({alg})"
    use, designed = key.get("use"), key.get("alg")
    if use is not None and use != "sig":
        return f"the issuer's key {key.kid} is for use {quoted(use)}, not signatures"
    if designed is not None and designed != alg:
        return f"the issuer's key {key.kid} is for {quoted(designed)}, not {alg}"
    return None
