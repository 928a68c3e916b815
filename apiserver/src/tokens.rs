//! The service-account token issuer (`pkg/serviceaccount/jwt.go` and `claims.go`): an ES256
//! key made when the server starts signs the tokens a `TokenRequest` answers (JWTs with
//! Kubernetes' claims), verifies them for `TokenReview` and bearer authentication, and is
//! published as the issuer's OIDC discovery document and JWKS.
//!
//! jsonwebtoken signs and verifies (with ring, already in the tree through rustls); ring makes
//! the P-256 key.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// kube-apiserver's default issuer and API audience (`--service-account-issuer`).
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// go-jose's `DefaultLeeway`: the clock skew tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;

/// What went wrong making the issuer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IssuerError {
    /// ring could not make or read the key.
    #[error("service account signing key: {0}")]
    Key(String),
    /// jsonwebtoken refused the key.
    #[error("service account signing key: {0}")]
    Jwt(#[from] jsonwebtoken::errors::Error),
}

/// An object a token is bound to (`kubernetes.io.pod`, `.secret`, `.node`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ref {
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// The `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Private {
    pub(crate) namespace: String,
    pub(crate) serviceaccount: Ref,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) pod: Option<Ref>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) secret: Option<Ref>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) node: Option<Ref>,
}

/// The claims of a service-account token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    pub(crate) aud: Vec<String>,
    pub(crate) exp: i64,
    pub(crate) iat: i64,
    pub(crate) iss: String,
    pub(crate) jti: String,
    #[serde(rename = "kubernetes.io")]
    pub(crate) kubernetes: Private,
    pub(crate) nbf: i64,
    pub(crate) sub: String,
}

impl Claims {
    /// The claims of a token for `private`'s service account, for `audiences`, valid from
    /// `now` for `seconds`.
    pub(crate) fn new(private: Private, audiences: Vec<String>, now: i64, seconds: i64) -> Self {
        Self {
            sub: format!(
                "system:serviceaccount:{}:{}",
                private.namespace, private.serviceaccount.name
            ),
            aud: audiences,
            exp: now + seconds,
            iat: now,
            nbf: now,
            iss: ISSUER.to_owned(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: private,
        }
    }
}

/// The signing key and what is published of it.
pub(crate) struct Issuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    kid: String,
    x: String,
    y: String,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Issuer {
    /// A new P-256 key.
    pub(crate) fn generate() -> Result<Self, IssuerError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| IssuerError::Key(e.to_string()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|e| IssuerError::Key(e.to_string()))?;
        // The uncompressed point: 0x04, then x and y (32 bytes each).
        let point = pair.public_key().as_ref();
        let (x, y) = match point.get(1..).map(|xy| xy.split_at(xy.len() / 2)) {
            Some((x, y)) if x.len() == 32 => (b64(x), b64(y)),
            _ => return Err(IssuerError::Key("unexpected public key shape".into())),
        };
        let kid = b64(ring::digest::digest(&ring::digest::SHA256, point).as_ref());
        Ok(Self {
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            decoding: DecodingKey::from_ec_components(&x, &y)?,
            kid,
            x,
            y,
        })
    }

    /// The signed token of `claims`.
    pub(crate) fn sign(&self, claims: &Claims) -> Result<String, IssuerError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        Ok(jsonwebtoken::encode(&header, claims, &self.encoding)?)
    }

    /// The claims of `token` if this issuer signed it and it is within its validity (with
    /// go-jose's leeway); the error is the reason, as `claims.go` words it.
    pub(crate) fn verify(&self, token: &str) -> Result<Claims, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid())?;
        if header.alg != Algorithm::ES256 {
            return Err(invalid());
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_aud = false;
        validation.validate_nbf = true;
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                    "service account token has expired".to_owned()
                }
                jsonwebtoken::errors::ErrorKind::ImmatureSignature => {
                    "service account token is not valid yet".to_owned()
                }
                _ => invalid(),
            })
    }

    /// The JWKS served at `/openid/v1/jwks`.
    pub(crate) fn jwks(&self) -> Value {
        json!({"keys": [{
            "use": "sig", "kty": "EC", "kid": self.kid, "crv": "P-256", "alg": "ES256",
            "x": self.x, "y": self.y,
        }]})
    }

    /// The OIDC discovery document served at `/.well-known/openid-configuration`.
    pub(crate) fn discovery(&self) -> Value {
        json!({
            "issuer": ISSUER,
            "jwks_uri": format!("{ISSUER}/openid/v1/jwks"),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }
}

fn invalid() -> String {
    "invalid bearer token".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private() -> Private {
        Private {
            namespace: "default".into(),
            serviceaccount: Ref {
                name: "builder".into(),
                uid: "u-1".into(),
            },
            pod: None,
            secret: None,
            node: None,
        }
    }

    #[test]
    fn signed_tokens_verify_with_their_claims() -> Result<(), IssuerError> {
        let issuer = Issuer::generate()?;
        let now = k8s_openapi::jiff::Timestamp::now().as_second();
        let claims = Claims::new(private(), vec!["api".into()], now, 600);
        let token = issuer.sign(&claims)?;
        assert_eq!(issuer.verify(&token), Ok(claims));
        let other = Issuer::generate()?;
        assert_eq!(other.verify(&token), Err(invalid()));
        Ok(())
    }

    #[test]
    fn expired_and_future_tokens_are_refused() -> Result<(), IssuerError> {
        let issuer = Issuer::generate()?;
        let now = k8s_openapi::jiff::Timestamp::now().as_second();
        let expired = Claims::new(private(), vec![], now - 4000, 600);
        assert_eq!(
            issuer.verify(&issuer.sign(&expired)?),
            Err("service account token has expired".to_owned())
        );
        let future = Claims::new(private(), vec![], now + 4000, 600);
        assert_eq!(
            issuer.verify(&issuer.sign(&future)?),
            Err("service account token is not valid yet".to_owned())
        );
        Ok(())
    }
}
