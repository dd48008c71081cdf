//! OpenStack, where protokube is the gossip member (DESIGN §14), in one folder: its
//! [`Provider`] value, Keystone v3 from nodeup's `OS_*` variables ([`keystone`]), the server's
//! identity and the cluster's control-plane servers as kOps' protokube reads them ([`nova`]:
//! `release-1.36:protokube/pkg/protokube/openstack_volume.go`,
//! `protokube/pkg/gossip/openstack/seeds.go`), and [`connect`].

pub(crate) mod keystone;
pub(crate) mod nova;

use std::sync::Arc;

use anyhow::Result;

use crate::cloud::provider::{Endpoint, Provider};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::providers::member_only::{connected, MemberWords};
use crate::providers::rest::{Calls, Rest, RestCloud};
use crate::settings::Settings;
use nova::Nova;

/// What is true of OpenStack for protokube: the gossip member only; Keystone's root (whose
/// catalogue names Nova's) moves with `--openstack-api-endpoint` or `OS_AUTH_URL`, the metadata
/// service's with `--openstack-metadata-endpoint`.
pub(crate) const PROVIDER: Provider = Provider {
    name: "openstack",
    summary: "OpenStack: the gossip member (etcd-manager and dns-controller do the rest)",
    zone_service: "no DNS service (dns-controller's job on OpenStack)",
    zone_service_names: &[],
    region_variables: &[],
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: API_ENDPOINT_FLAG,
            variable: "PROTOKUBE_OPENSTACK_API_ENDPOINT",
            what: "Keystone's root, whose catalogue names Nova's (`OS_AUTH_URL` too, as \
                   nodeup writes it)",
            default: NO_KEYSTONE,
            sdk_variable: Some("OS_AUTH_URL"),
        },
        Endpoint {
            flag: METADATA_ENDPOINT_FLAG,
            variable: "PROTOKUBE_OPENSTACK_METADATA_ENDPOINT",
            what: "The OpenStack metadata service's root, for tests",
            default: "http://169.254.169.254/",
            sdk_variable: None,
        },
    ],
    member_only: true,
    names_left_by_spec: |_| None,
    denied_to: |_, _| ("the credentials in `OS_*`".to_owned(), "docs/clouds.md"),
};

const API_ENDPOINT_FLAG: &str = "--openstack-api-endpoint";
const METADATA_ENDPOINT_FLAG: &str = "--openstack-metadata-endpoint";
/// Keystone's root when neither the flag nor `OS_AUTH_URL` says it: none (a reserved name).
const NO_KEYSTONE: &str = "https://keystone.invalid/v3/";

const FIX: &str = "set `OS_APPLICATION_CREDENTIAL_ID` and `OS_APPLICATION_CREDENTIAL_SECRET`, or \
                   `OS_USERNAME`, `OS_PASSWORD` and the project, as nodeup writes them to \
                   /etc/sysconfig/protokube";

/// Keystone in messages; OpenStack's errors are `{"error": {"code", "title", "message"}}`
/// (Keystone) or `{"<kind>": {"code", "message"}}` (Nova).
static KEYSTONE: RestCloud = RestCloud {
    name: "OpenStack Keystone",
    credential: "the credentials in `OS_*`",
    fix: FIX,
    permission: "a role on the project that may read its servers",
    read_error,
};

/// Nova in messages.
pub(crate) static COMPUTE: RestCloud = RestCloud {
    name: "OpenStack Nova",
    credential: "the token Keystone gave for the credentials in `OS_*`",
    fix: FIX,
    permission: "a role on the project that may list its servers (`os_compute_api:servers:detail`)",
    read_error,
};

/// The metadata service in messages.
pub(crate) static METADATA: RestCloud = RestCloud {
    name: "the OpenStack metadata service",
    credential: "no credential",
    fix: "run on an OpenStack server or pass --instance-id",
    permission: "none",
    read_error: |_| None,
};

/// OpenStack's error body: one object, under `error` (Keystone) or a kind (`itemNotFound`,
/// `forbidden`), with its message.
fn read_error(body: &serde_json::Value) -> Option<(String, String)> {
    let (kind, error) = body.as_object()?.iter().next()?;
    let title = error.get("title").and_then(|t| t.as_str()).unwrap_or(kind);
    Some((title.to_owned(), error.get("message")?.as_str()?.to_owned()))
}

/// kOps' OpenStack metadata: the cluster's key is `KubernetesCluster`.
static WORDS: MemberWords = MemberWords {
    noun: "metadata key",
    cluster_key: nova::CLUSTER_KEY,
};

/// The run's OpenStack: the metadata service, Keystone at its root (the credential read from
/// nodeup's `OS_*` variables), Nova where its catalogue says.
pub(crate) fn connect(settings: &Settings, _files: &dyn Files) -> Result<Connected> {
    let calls = Calls::default();
    let metadata = Rest::new(
        &METADATA,
        &settings.api_root(METADATA_ENDPOINT_FLAG)?,
        &[],
        settings.deadline,
        calls.clone(),
        true,
    )?;
    let keystone_root = settings.api_root(API_ENDPOINT_FLAG)?;
    let keystone = Rest::new(
        &KEYSTONE,
        &keystone_root,
        &[],
        settings.deadline,
        calls.clone(),
        false,
    )?;
    let var = |name: &str| std::env::var(name).ok();
    let credential = if keystone_root == NO_KEYSTONE {
        Err(
            "--cloud openstack: `OS_AUTH_URL` is not set (Keystone's URL, which nodeup writes to \
             /etc/sysconfig/protokube); or pass --openstack-api-endpoint"
                .to_owned(),
        )
    } else {
        keystone::auth_body(&var).map_err(|e| e.0)
    };
    let region = var("OS_REGION_NAME").filter(|r| !r.is_empty());
    let nova = Arc::new(Nova::new(
        metadata,
        keystone,
        &COMPUTE,
        credential,
        region,
        settings.deadline,
        calls.clone(),
    ));
    Ok(connected(&PROVIDER, &WORDS, calls, nova))
}
