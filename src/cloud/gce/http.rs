//! The HTTP client of the Google APIs and the metadata server: hyper on rustls, trusting the
//! node's certificate authorities (and `SSL_CERT_FILE`), `https://` and `http://`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// The HTTP client of every Google call (and of the metadata server, over plain HTTP).
pub type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An HTTP client trusting the node's roots (and `SSL_CERT_FILE`), speaking `https://` and,
/// for the metadata server and tests, `http://`.
pub fn http_client(connect_timeout: Duration) -> Result<HttpClient> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .context("loading the node's trusted certificate authorities")?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new()).build(https))
}
