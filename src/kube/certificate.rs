//! The client certificate and key a kubeconfig gives protokube, checked before the TLS library
//! sees them, so that what is wrong is said in protokube's words and names where they came
//! from: a certificate that is not X.509 version 3 (TLS needs its extensions; rustls refuses
//! the others), one not valid yet or no longer, a key that is not the certificate's. Reading
//! the few fields it needs from the certificate's DER is all this does of X.509; the TLS
//! library verifies the rest.

use std::time::SystemTime;

use anyhow::{anyhow, bail, Result};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Checks the client certificate (PEM, the first of the chain is this client's) and its key
/// (PEM) at time `now`.
pub(crate) fn check_client_credential(
    certificate: &[u8],
    certificate_from: &str,
    key: &[u8],
    key_from: &str,
    now: SystemTime,
) -> Result<()> {
    let certificate = CertificateDer::from_pem_slice(certificate).map_err(|err| {
        anyhow!("the client certificate ({certificate_from}) is not a PEM certificate ({err})")
    })?;
    let facts = read_certificate(&certificate).map_err(|why| {
        anyhow!("the client certificate ({certificate_from}) cannot be read: {why}")
    })?;
    if facts.version != 3 {
        bail!(
            "the client certificate ({certificate_from}) is X.509 version {}; TLS clients need \
             version 3: issue it again with its extensions (`openssl x509 -req … -extfile`, \
             `basicConstraints`, `extendedKeyUsage=clientAuth`)",
            facts.version
        );
    }
    if now < facts.not_before {
        bail!(
            "the client certificate ({certificate_from}) is not valid before {}; check this \
             node's clock",
            humantime::format_rfc3339_seconds(facts.not_before)
        );
    }
    if now > facts.not_after {
        bail!(
            "the client certificate ({certificate_from}) expired on {}; renew it (kOps: \
             nodeup writes a new one when the node is updated)",
            humantime::format_rfc3339_seconds(facts.not_after)
        );
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|err| anyhow!("the client key ({key_from}) is not a PEM private key ({err})"))?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    match rustls::sign::CertifiedKey::from_der(vec![certificate], key, &provider) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(_)) => bail!(
            "the client key ({key_from}) is not the key of the client certificate \
             ({certificate_from}): give the pair that was issued together"
        ),
        Err(err) => bail!("the client key ({key_from}) cannot be used: {err}"),
    }
}

/// What is read of a certificate.
#[derive(Debug, PartialEq, Eq)]
struct CertificateFacts {
    /// 1, 2 or 3.
    version: u8,
    not_before: SystemTime,
    not_after: SystemTime,
}

/// The version and validity of a DER certificate: `Certificate ::= SEQUENCE { tbsCertificate
/// SEQUENCE { [0] EXPLICIT version DEFAULT v1, serialNumber, signature, issuer, validity
/// SEQUENCE { notBefore, notAfter }, … }, … }` (RFC 5280).
fn read_certificate(der: &[u8]) -> Result<CertificateFacts, String> {
    let (certificate, _) = element(der, SEQUENCE)?;
    let (tbs, _) = element(certificate, SEQUENCE)?;
    let (version, rest) = match tbs.first() {
        Some(&VERSION_TAG) => {
            let (explicit, rest) = element(tbs, VERSION_TAG)?;
            let (number, _) = element(explicit, INTEGER)?;
            match number {
                [v @ 0..=2] => (v + 1, rest),
                _ => return Err("its version is not 1, 2 or 3".to_owned()),
            }
        }
        _ => (1, tbs),
    };
    let (_serial, rest) = element(rest, INTEGER)?;
    let (_signature, rest) = element(rest, SEQUENCE)?;
    let (_issuer, rest) = element(rest, SEQUENCE)?;
    let (validity, _) = element(rest, SEQUENCE)?;
    let (not_before, rest) = time(validity)?;
    let (not_after, _) = time(rest)?;
    Ok(CertificateFacts {
        version,
        not_before,
        not_after,
    })
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION_TAG: u8 = 0xA0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// The contents of the DER element with `tag` at the start of `input`, and what follows it.
fn element(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), String> {
    let (&found, rest) = input.split_first().ok_or("it ends too early")?;
    if found != tag {
        return Err(format!("expected DER tag {tag:#04x}, found {found:#04x}"));
    }
    let (&first, rest) = rest.split_first().ok_or("it ends too early")?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return Err("a DER length is malformed".to_owned());
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |length, &byte| (length << 8) | usize::from(byte));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return Err("it ends too early".to_owned());
    }
    Ok(rest.split_at(length))
}

/// A `UTCTime` (`YYMMDDHHMMSSZ`, years 1950–2049) or `GeneralizedTime` (`YYYYMMDDHHMMSSZ`).
fn time(input: &[u8]) -> Result<(SystemTime, &[u8]), String> {
    let (text, rest, century) = match input.first() {
        Some(&UTC_TIME) => {
            let (text, rest) = element(input, UTC_TIME)?;
            let year = text
                .get(..2)
                .and_then(|y| std::str::from_utf8(y).ok()?.parse::<u32>().ok())
                .ok_or("a UTCTime is malformed")?;
            (text, rest, Some(if year < 50 { "20" } else { "19" }))
        }
        Some(&GENERALIZED_TIME) => {
            let (text, rest) = element(input, GENERALIZED_TIME)?;
            (text, rest, None)
        }
        _ => return Err("a validity time is neither UTCTime nor GeneralizedTime".to_owned()),
    };
    let text = std::str::from_utf8(text).map_err(|_| "a validity time is not text")?;
    let digits = text
        .strip_suffix('Z')
        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or("a validity time is not in UTC")?;
    let full = format!("{}{digits}", century.unwrap_or_default());
    if full.len() != 14 {
        return Err("a validity time is malformed".to_owned());
    }
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    );
    let at = humantime::parse_rfc3339(&rfc3339).map_err(|_| "a validity time is malformed")?;
    Ok((at, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate and key made by `openssl` (the test machines have it): `extra` arguments
    /// to `openssl req -x509` (a v3 one unless `-extensions` are left out with `x509`).
    fn openssl_pair(v1: bool, days: &str) -> (Vec<u8>, Vec<u8>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        let csr = dir.path().join("req.csr");
        let cert = dir.path().join("cert.pem");
        let run = |args: &[&str]| {
            #[allow(clippy::disallowed_methods)]
            let status = std::process::Command::new("openssl")
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "openssl {args:?}");
        };
        let p = |path: &std::path::Path| path.display().to_string();
        run(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
            "-subj",
            "/CN=kops",
        ]);
        let mut sign = vec![
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-signkey",
            &p(&key),
            "-out",
            &p(&cert),
            "-days",
            days,
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<String>>();
        if !v1 {
            let ext = dir.path().join("ext");
            #[allow(clippy::disallowed_methods)]
            std::fs::write(&ext, "extendedKeyUsage=clientAuth\n").unwrap();
            sign.extend(["-extfile".to_owned(), p(&ext)]);
        }
        let sign: Vec<&str> = sign.iter().map(String::as_str).collect();
        run(&sign);
        #[allow(clippy::disallowed_methods)]
        let read = |path: &std::path::Path| std::fs::read(path).unwrap();
        (read(&cert), read(&key), dir)
    }

    #[test]
    fn a_good_pair_passes_and_each_fault_is_named() {
        let (cert, key, _dir) = openssl_pair(false, "2");
        let (v1, v1_key, _v1_dir) = openssl_pair(true, "2");
        // After both are made: their notBefore is the second openssl made them in, so a clock
        // read before could be earlier.
        let now = SystemTime::now();
        check_client_credential(&cert, "c.crt", &key, "c.key", now).unwrap();

        let err = check_client_credential(&v1, "v1.crt", &v1_key, "v1.key", now).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("(v1.crt) is X.509 version 1"), "{message}");
        assert!(!message.contains("Other("), "{message}");

        let later = now + std::time::Duration::from_hours(24 * 30);
        let err = check_client_credential(&cert, "c.crt", &key, "c.key", later).unwrap_err();
        assert!(format!("{err:#}").contains("(c.crt) expired on"), "{err:#}");
        let earlier = now - std::time::Duration::from_hours(24 * 30);
        let err = check_client_credential(&cert, "c.crt", &key, "c.key", earlier).unwrap_err();
        assert!(format!("{err:#}").contains("not valid before"), "{err:#}");

        let (_, other_key, _other_dir) = openssl_pair(false, "2");
        let err = check_client_credential(&cert, "c.crt", &other_key, "o.key", now).unwrap_err();
        assert!(
            format!("{err:#}").contains(
                "the client key (o.key) is not the key of the client certificate (c.crt)"
            ),
            "{err:#}"
        );

        let err = check_client_credential(b"garbage", "g.crt", &key, "c.key", now).unwrap_err();
        assert!(
            format!("{err:#}").contains("(g.crt) is not a PEM certificate"),
            "{err:#}"
        );
    }

    #[test]
    fn der_is_read_within_its_bounds() {
        for bad in [
            &[][..],
            &[0x30][..],
            &[0x30, 0x85, 1, 1, 1, 1, 1][..],
            &[0x30, 0x05, 0x30][..],
        ] {
            assert!(read_certificate(bad).is_err(), "{bad:?}");
        }
        let (text, rest) = time(b"\x17\x0d491231235959Z\x01").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(text).to_string(),
            "2049-12-31T23:59:59Z"
        );
        assert_eq!(rest, [1]);
        let (text, _) = time(b"\x18\x0f20991231235959Z").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(text).to_string(),
            "2099-12-31T23:59:59Z"
        );
        assert!(time(b"\x17\x0d4912312359+0Z").is_err());
    }
}
