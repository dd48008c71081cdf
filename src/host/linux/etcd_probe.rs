//! Asks a running etcd pod which version it runs: `GET /version` on its client port on this
//! node's loopback, over TLS with the pod's own CA and client certificate where the pod uses
//! them. Read-only, bounded in time and size.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::files::read_limited;
use crate::paths::HostRoot;
use crate::plan::manifests::upgrade::{
    parse_version_answer, EtcdClientTls, EtcdEndpoint, EtcdVersion,
};

/// A local etcd accepts at once, or is not there.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A live etcd answers `/version` from memory.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);
/// The answer is ~50 bytes and a few headers.
const MAX_ANSWER: usize = 16 << 10;
/// A certificate or key file is a few KiB.
const MAX_PEM: u64 = 1 << 20;

/// The version the etcd at `endpoint` reports running; `None` when nothing listens there; an
/// error says why else there is none.
pub(crate) fn etcd_version(
    root: &HostRoot,
    endpoint: &EtcdEndpoint,
) -> Result<Option<EtcdVersion>> {
    let ip = if endpoint.ipv6 {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    let tcp = match TcpStream::connect_timeout(&SocketAddr::new(ip, endpoint.port), CONNECT_TIMEOUT)
    {
        Err(err) if err.kind() == ErrorKind::ConnectionRefused => return Ok(None),
        connected => connected.with_context(|| format!("connecting to `{}`", endpoint.url()))?,
    };
    let answer = (|| -> Result<Vec<u8>> {
        tcp.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        tcp.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let request = format!(
            "GET /version HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\
             Connection: close\r\n\r\n",
            SocketAddr::new(ip, endpoint.port)
        );
        match &endpoint.tls {
            None => exchange(tcp, &request),
            Some(tls) => {
                let config = client_config(root, tls)?;
                let connection =
                    rustls::ClientConnection::new(Arc::new(config), ServerName::from(ip))?;
                exchange(rustls::StreamOwned::new(connection, tcp), &request)
            }
        }
    })()
    .with_context(|| format!("asking `{}/version`", endpoint.url()))?;
    let body = response_body(&answer).with_context(|| format!("`{}/version`", endpoint.url()))?;
    parse_version_answer(body)
        .map(Some)
        .map_err(|why| anyhow!("`{}/version`: {why}", endpoint.url()))
}

/// Sends `request` and reads the whole answer (the server closes: `Connection: close`).
fn exchange(mut stream: impl Read + Write, request: &str) -> Result<Vec<u8>> {
    stream.write_all(request.as_bytes())?;
    stream.flush()?;
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                if answer.len() > MAX_ANSWER {
                    bail!("the answer is longer than {MAX_ANSWER} bytes");
                }
                if complete(&answer) {
                    break;
                }
            }
            // A server that closes without TLS' close_notify: the answer read so far is whole
            // when its length says so.
            Err(err) if err.kind() == ErrorKind::UnexpectedEof && complete(&answer) => break,
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(answer)
}

/// Whether `answer` holds its headers and as many body bytes as its `Content-Length` says.
fn complete(answer: &[u8]) -> bool {
    let Some(end) = find(answer, b"\r\n\r\n") else {
        return false;
    };
    content_length(&answer[..end]).is_some_and(|length| answer.len() >= end + 4 + length)
}

/// The `Content-Length` of a response's head.
fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The body of a `200` answer.
fn response_body(answer: &[u8]) -> Result<&[u8]> {
    let end = find(answer, b"\r\n\r\n").ok_or_else(|| anyhow!("the answer is not HTTP"))?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let status = head.lines().next().unwrap_or_default();
    let code = status.split_whitespace().nth(1);
    if !status.starts_with("HTTP/1.") || code != Some("200") {
        bail!("answered `{}`", status.escape_debug());
    }
    let body = &answer[end + 4..];
    Ok(match content_length(&answer[..end]) {
        Some(length) => body
            .get(..length)
            .ok_or_else(|| anyhow!("the answer is cut short"))?,
        None => body,
    })
}

/// TLS as the pod speaks it: its CA verifies the certificate chain (not the name: etcd's
/// certificate names the node, not the loopback), and its certificate is shown when it asks for
/// client certificates.
fn client_config(root: &HostRoot, tls: &EtcdClientTls) -> Result<ClientConfig> {
    let ca = tls.ca.as_deref().ok_or_else(|| {
        anyhow!("etcd speaks TLS and no `--tls-ca` names its CA to verify it against")
    })?;
    let pem = |path: &str| -> Result<Vec<u8>> {
        let resolved = root.resolve(path)?;
        read_limited(&resolved, MAX_PEM)?
            .ok_or_else(|| anyhow!("`{path}` does not exist"))
            .with_context(|| format!("reading `{path}`"))
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem(ca)?) {
        roots
            .add(cert.with_context(|| format!("reading `{ca}`"))?)
            .with_context(|| format!("`{ca}`"))?;
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .with_context(|| format!("`{ca}`"))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)));
    Ok(match &tls.identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs = CertificateDer::pem_slice_iter(&pem(cert)?)
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("reading `{cert}`"))?;
            let key_der = PrivateKeyDer::from_pem_slice(&pem(key)?)
                .with_context(|| format!("reading `{key}`"))?;
            builder.with_client_auth_cert(certs, key_der)?
        }
    })
}

/// Verifies a server's certificate chain against the CA, accepting any name in it.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked last, after the chain: a name error means the chain holds.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_whole_when_its_length_says_so() {
        let answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 45\r\n\r\n{\"etcdserver\":\"3.4.23\",\"etcdcluster\":\"3.4.0\"}";
        assert!(complete(answer));
        assert!(!complete(&answer[..answer.len() - 1]));
        assert_eq!(
            parse_version_answer(response_body(answer).unwrap()),
            Ok(EtcdVersion::parse("3.4.23").unwrap())
        );
        let refused = response_body(b"HTTP/1.1 401 Unauthorized\r\n\r\n").unwrap_err();
        assert!(refused.to_string().contains("401"), "{refused}");
        assert!(response_body(b"SSH-2.0-OpenSSH\r\n").is_err());
    }

    #[test]
    fn nothing_listening_is_no_version_and_a_stranger_is_an_error_naming_the_url() {
        // Port 1 on the loopback: nothing listens there.
        let endpoint = |port| EtcdEndpoint {
            port,
            ipv6: false,
            tls: None,
        };
        assert_eq!(
            etcd_version(&HostRoot::new("/"), &endpoint(1)).unwrap(),
            None
        );
        // Something that is not etcd: it answers, and not with a version.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stranger = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0_u8; 512];
            let _ = stream.read(&mut request);
            stream
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
        });
        let err = etcd_version(&HostRoot::new("/"), &endpoint(port)).unwrap_err();
        stranger.join().unwrap();
        let text = format!("{err:#}");
        assert!(
            text.contains(&format!("http://127.0.0.1:{port}/version")) && text.contains("404"),
            "{text}"
        );
    }
}
