from fastapi import APIRouter, Request

from broker.wire.headers import SIGNATURE, SIGNATURE_INPUT
from broker.wire.signing import KEYS_PATH, TAG

router = APIRouter(tags=["Delivery"])


@router.get(
    KEYS_PATH,
    summary="The broker's public delivery signing keys (JSON Web Key Set, Ed25519)",
    description=f"Member clouds verify a delivery's `{SIGNATURE_INPUT}` and `{SIGNATURE}` (HTTP "
    f'Message Signatures, RFC 9421, `alg="ed25519"`, `tag="{TAG}"`) and the signatures of '
    "agreements with these keys (RFC 7517 and RFC 8037; `kid`, the signature's `keyid`, is the "
    "RFC 7638 thumbprint). During a key change two keys are listed; a member that meets an "
    "unknown `kid` fetches this set again. No authentication: the keys are public.",
    response_description='`{"keys": [{"kty": "OKP", "crv": "Ed25519", "x", "kid", '
    '"alg": "EdDSA", "use": "sig"}]}`, newest first',
)
def get_signing_keys(request: Request) -> dict:
    return request.app.state.keyring.jwks()
