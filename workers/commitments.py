"""Verifiable shuffles: at each deal the service publishes SHA-256(salt ‖ deal); the finished match's
record reveals every deal and salt, so anyone can check that no deal was changed after it was made."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from workers.games.engine import JSON
from workers.games.values import pickled_by_constructor


def canonical(value: JSON) -> bytes:
    """The bytes a deal is committed as: JSON with sorted keys and no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


@pickled_by_constructor
@dataclass(frozen=True, slots=True)
class Commitment:
    salt: bytes
    sha256: str

    @staticmethod
    def of(deal: JSON) -> Commitment:
        salt = secrets.token_bytes(16)
        return Commitment(salt, hashlib.sha256(salt + canonical(deal)).hexdigest())

    def opens(self, deal: JSON) -> bool:
        return secrets.compare_digest(hashlib.sha256(self.salt + canonical(deal)).hexdigest(), self.sha256)


class NotVerifiable(ValueError):
    """The record carries no readable commitments."""


def broken_commitments(record: JSON, deals_key: str) -> list[str]:
    """Every deal whose revealed salt and content do not match the published commitment."""
    if not isinstance(record, dict):
        raise NotVerifiable("a record is a JSON object")
    commitments, deals = record.get("commitments"), record.get(deals_key)
    if not isinstance(commitments, list) or not isinstance(deals, list):
        raise NotVerifiable(f'the record has no "commitments" and "{deals_key}" to check')
    problems = []
    if len(commitments) != len(deals):
        problems.append(f"{len(commitments)} commitments for {len(deals)} deals")
    for index, (published, deal) in enumerate(zip(commitments, deals, strict=False)):
        try:
            commitment = Commitment(bytes.fromhex(published["salt"]), str(published["sha256"]))
        except (TypeError, KeyError, ValueError):
            raise NotVerifiable(f"commitment {index} is not {{salt, sha256}} in hex") from None
        if not commitment.opens(deal):
            problems.append(f"deal {index} does not match its commitment {commitment.sha256[:16]}…")
    return problems
