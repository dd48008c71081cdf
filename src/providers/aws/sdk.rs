//! The one AWS SDK configuration of a run, shared by every AWS client (EC2, and Route53 from
//! `route53/`): region, retries, timeouts, the call counter, waiting for endpoint and
//! credentials; and AWS errors as protokube reports them.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Result};
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_ec2::config::http::HttpResponse;
use aws_sdk_ec2::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_ec2::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_ec2::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

use crate::cloud::patient;
use crate::cloud::AccessDenied;
use crate::error::{NotReady, Unreachable};
use crate::proxy::EgressProxies;
use crate::wait::Deadline;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// Attempts per AWS call (the first try included); throttling and 5xx are retried with backoff.
const MAX_ATTEMPTS: u32 = 6;

/// What every AWS client of a run shares: the SDK configuration (loaded once per region, so
/// credentials are resolved once), the call counter, and patience with an endpoint or
/// credentials not there yet, bounded by the run's deadline.
#[derive(Debug)]
pub(crate) struct AwsSdk {
    deadline: Deadline,
    counter: CallCounter,
    config: tokio::sync::Mutex<Option<(String, SdkConfig)>>,
}

impl AwsSdk {
    /// The SDK for a run that ends by `deadline`.
    pub(crate) fn new(deadline: Deadline) -> Arc<Self> {
        Arc::new(Self {
            deadline,
            counter: CallCounter::default(),
            config: tokio::sync::Mutex::new(None),
        })
    }

    /// The configuration for `region`, loaded on first use.
    pub(crate) async fn config(&self, region: &str) -> SdkConfig {
        let mut cached = self.config.lock().await;
        if let Some((loaded_for, config)) = cached.as_ref() {
            if loaded_for == region {
                return config.clone();
            }
        }
        // No operation, its retries included, outlives the run's deadline.
        let remaining = self.deadline.remaining().max(Duration::from_millis(1));
        let config = load_sdk_config(region, remaining).await;
        *cached = Some((region.to_owned(), config.clone()));
        config
    }

    /// Counts every request of the clients it is given to.
    pub(crate) fn counter(&self) -> &CallCounter {
        &self.counter
    }

    /// The run's deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// Runs `call` (the AWS operation `operation`, e.g. `ec2:AttachVolume`) until it is
    /// answered, waiting for an endpoint or credentials not there yet.
    pub(crate) async fn wait<T, F, Fut>(&self, operation: &str, call: F) -> Result<T>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
    {
        let what = format!("AWS (`{operation}`: endpoint and credentials)");
        patient::until_reachable(&what, self.deadline, patient::backoff(), call).await
    }
}

/// Counts the requests the AWS clients send, by operation, retries included (an SDK
/// interceptor: each attempt passes `read_before_transmit` once).
#[derive(Clone, Debug, Default)]
pub(crate) struct CallCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounter {
    pub(crate) fn counts(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "protokube-call-counter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map_or("unknown", |m| m.name())
            .to_owned();
        if let Ok(mut counts) = self.0.lock() {
            *counts.entry(operation).or_default() += 1;
        }
        Ok(())
    }
}

/// Whether the operator chose the SDK's retries (`AWS_MAX_ATTEMPTS`, `AWS_RETRY_MODE`): then
/// theirs win over protokube's defaults.
fn operator_retry_config() -> bool {
    ["AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Loads the one SDK configuration every AWS client of a run shares: region from the node's
/// identity, standard retries (unless the operator set `AWS_MAX_ATTEMPTS`/`AWS_RETRY_MODE`),
/// bounded timeouts (each attempt 30 s, each operation with its retries `operation_timeout`),
/// no stalled-stream ticking. Endpoint and credentials come from the SDK's standard chain, so
/// `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, profiles and instance roles work.
pub(crate) async fn load_sdk_config(region: &str, operation_timeout: Duration) -> SdkConfig {
    let mut loader =
        aws_config::defaults(BehaviorVersion::latest()).region(Region::new(region.to_owned()));
    if !operator_retry_config() {
        loader = loader.retry_config(
            RetryConfig::standard()
                .with_max_attempts(MAX_ATTEMPTS)
                .with_initial_backoff(Duration::from_millis(200))
                .with_max_backoff(Duration::from_secs(10)),
        );
    }
    loader = loader.http_client(egress_http_client(&EgressProxies::from_env(
        &IMDS_ADDRESSES,
    )));
    loader
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(30).min(operation_timeout))
                .operation_timeout(operation_timeout)
                .build(),
        )
        // Stalled-stream protection watches streaming bodies (large downloads) with a 25 ms
        // tick; protokube's answers are small and bounded by the attempt timeout above, and the
        // tick costs CPU for as long as an answer takes.
        .stalled_stream_protection(
            aws_config::stalled_stream_protection::StalledStreamProtectionConfig::disabled(),
        )
        .load()
        .await
}

/// The SDK's HTTPS client for the service endpoints, through the node's egress proxy as Go
/// reads it (`HTTPS_PROXY` for the endpoints, `HTTP_PROXY` where only that is set, `NO_PROXY`
/// and what is never proxied exempt: `crate::proxy`). The SDK's own default client reads the
/// proxy as curl does, which would send loopback endpoints and the metadata service through it.
fn egress_http_client(proxies: &EgressProxies) -> SharedHttpClient {
    let config = match (&proxies.https, &proxies.http) {
        (Some(https), Some(http)) if https == http => ProxyConfig::all(https.as_str()),
        (Some(https), _) => ProxyConfig::https(https.as_str()),
        (None, Some(http)) => ProxyConfig::http(http.as_str()),
        (None, None) => Ok(ProxyConfig::disabled()),
    };
    let config = match config {
        Ok(config) if config.is_disabled() => config,
        Ok(config) => config.no_proxy(&proxies.no_proxy),
        Err(err) => {
            tracing::warn!("the egress proxy is not a URL ({err}); reaching AWS directly");
            ProxyConfig::disabled()
        }
    };
    https_client(config)
}

/// The client of the instance metadata service: never through a proxy, whatever the
/// environment says (only the node itself reaches it).
pub(crate) fn direct_http_client() -> SharedHttpClient {
    https_client(ProxyConfig::disabled())
}

/// The SDK's HTTPS client (rustls on aws-lc) going through `proxy`, with the SDK's per-request
/// timeouts and sleep.
fn https_client(proxy: ProxyConfig) -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(move |settings, components| {
        let mut builder = aws_smithy_http_client::Connector::builder().proxy_config(proxy.clone());
        builder.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            builder.set_sleep_impl(components.sleep_impl());
        }
        builder
            .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
            .build()
    })
}

/// The instance metadata service's addresses (IPv4, IPv6), never reached through a proxy.
const IMDS_ADDRESSES: [&str; 2] = ["169.254.169.254", "fd00:ec2::254"];

/// Error codes AWS gives a caller that lacks a permission.
const ACCESS_DENIED: [&str; 5] = [
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnauthorizedAccess",
    "AuthFailure",
];
/// Error codes of throttling and of a service that is busy or down: retried by the SDK; when
/// they outlast its attempts the run is "not ready", not failed.
const RETRY_LATER: [&str; 13] = [
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "RequestThrottledException",
    "TooManyRequestsException",
    "PriorRequestNotComplete",
    "SlowDown",
    "ServiceUnavailable",
    "Unavailable",
    "InternalError",
    "InternalFailure",
];

/// An AWS error as protokube reports it: a missing permission names the permission (real EC2
/// often says only `UnauthorizedOperation` with an encoded message); throttling, a busy service
/// or no answer past the SDK's retries and `--timeout` is [`NotReady`] (exit 75); anything else
/// is the service's code and message, or the chain of causes (connection refused, …).
pub(crate) fn aws_error<E>(err: SdkError<E, HttpResponse>, permission: &str) -> anyhow::Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    if let Some(code) = err.code() {
        let message = err.message().unwrap_or("no message");
        if ACCESS_DENIED.contains(&code) {
            return AccessDenied {
                cloud: "AWS",
                permission: permission.to_owned(),
                detail: format!("{code}: {message}"),
            }
            .into();
        }
        if RETRY_LATER.contains(&code) {
            return NotReady(format!(
                "AWS kept answering `{permission}` with {code} through its retries ({message}); \
                 retry later"
            ))
            .into();
        }
        return anyhow!("{code}: {message}");
    }
    if let SdkError::TimeoutError(_) = err {
        return NotReady(format!(
            "AWS did not answer `{permission}` within --timeout, retries included; retry later"
        ))
        .into();
    }
    if let SdkError::ServiceError(service) = &err {
        let status = service.raw().status();
        if status.is_server_error() {
            return NotReady(format!(
                "AWS answered `{permission}` with HTTP {} through its retries; retry later",
                status.as_u16()
            ))
            .into();
        }
        return anyhow!(
            "AWS answered `{permission}` with HTTP {} and no error code",
            status.as_u16()
        );
    }
    if let SdkError::ResponseError(response) = &err {
        if response.raw().status().is_server_error() {
            return NotReady(format!(
                "AWS answered `{permission}` with a server error through its retries; retry later"
            ))
            .into();
        }
    }
    if let SdkError::DispatchFailure(_) = err {
        // No connection (refused, no route, no name), or no credentials yet (an instance
        // profile still propagating): waited for, then "not ready".
        return Unreachable(format!(
            "cannot reach AWS for `{permission}`: {}",
            cause_chain(&err)
        ))
        .into();
    }
    anyhow!("{}", cause_chain(&err))
}

/// The `Display` of an error and its sources, joined with `: `, leaving out a cause whose text
/// the previous one already contains.
pub(crate) fn cause_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

/// A field the cloud must send: its absence is an error naming the field and the answer.
pub(crate) fn required<T>(value: Option<T>, field: &str, answer: &str) -> Result<T> {
    value.ok_or_else(|| anyhow!("the {answer} answer has no `{field}`"))
}
