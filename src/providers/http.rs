//! The HTTP client of the clouds spoken to in plain REST (Google's APIs, the member-only clouds)
//! and of their metadata servers: hyper on rustls, trusting the node's certificate authorities (and `SSL_CERT_FILE`), `https://` and `http://`, through the
//! node's egress proxy where one is set (a `CONNECT` tunnel, as Go's transport does for
//! `https://`; the metadata server and loopback never through it, `crate::proxy`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{Context as _, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::Uri;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tower_service::Service;

use crate::proxy::EgressProxies;

/// The HTTP client of every Google call (and of the metadata server, over plain HTTP).
pub(crate) type HttpClient = Client<HttpsConnector<ProxiedConnector>, Full<Bytes>>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// TCP connections straight to the destination, or tunnelled through the proxy the node's
/// environment names for it.
#[derive(Clone, Debug)]
pub(crate) struct ProxiedConnector {
    direct: HttpConnector,
    proxies: Arc<EgressProxies>,
}

impl Service<Uri> for ProxiedConnector {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        match self.proxies.route(&destination) {
            None => {
                let connecting = self.direct.call(destination);
                Box::pin(async move { connecting.await.map_err(Into::into) })
            }
            Some(route) => {
                tracing::debug!(
                    "reaching `{destination}` through the proxy `{}`",
                    route.proxy
                );
                let mut tunnel = Tunnel::new(route.proxy, self.direct.clone());
                if let Some(authorization) = route.authorization {
                    tunnel = tunnel.with_auth(authorization);
                }
                Box::pin(async move { tunnel.call(destination).await.map_err(Into::into) })
            }
        }
    }
}

/// An HTTP client trusting the node's roots (and `SSL_CERT_FILE`), speaking `https://` and,
/// for the metadata server and tests, `http://`, through `proxies` where they say so.
pub(crate) fn http_client(
    connect_timeout: Duration,
    proxies: Arc<EgressProxies>,
) -> Result<HttpClient> {
    let mut direct = HttpConnector::new();
    direct.enforce_http(false);
    direct.set_connect_timeout(Some(connect_timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .context("loading the node's trusted certificate authorities")?
        .https_or_http()
        .enable_http1()
        .wrap_connector(ProxiedConnector { direct, proxies });
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

/// `value` as one URL path segment or query value: unreserved bytes kept, the rest `%XX`.
pub(crate) fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `base` followed by `path` (already escaped) and the query `pairs` (escaped here).
pub(crate) fn url(base: &str, path: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = format!("{base}{path}");
    for (i, (key, value)) in pairs.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(key);
        url.push('=');
        url.push_str(&escape(value));
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_escape_what_they_carry() {
        assert_eq!(
            url(
                "https://compute.googleapis.com/compute/v1/",
                "projects/p/zones/z/disks",
                &[
                    ("filter", "labels.k8s-io-cluster-name=a-b"),
                    ("pageToken", "x y")
                ]
            ),
            "https://compute.googleapis.com/compute/v1/projects/p/zones/z/disks?\
             filter=labels.k8s-io-cluster-name%3Da-b&pageToken=x%20y"
        );
        assert_eq!(escape("a/b"), "a%2Fb");
    }
}
