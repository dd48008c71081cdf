//! Scaleway, where protokube is the gossip member (DESIGN §14), in one folder: its [`Provider`]
//! value, the server's identity and the cluster's control-plane servers as kOps' protokube reads
//! them ([`instance`]), and [`connect`].

pub(crate) mod instance;

use std::sync::Arc;

use anyhow::Result;

use crate::cloud::provider::{Endpoint, Provider};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::providers::member_only::{connected, Clients, MemberWords, Service, Token};
use crate::providers::rest::RestCloud;
use crate::settings::Settings;
use instance::Servers;

/// What is true of Scaleway for protokube: the gossip member only (kOps: alpha, behind a feature
/// flag); its API and metadata roots move with `--scaleway-api-endpoint` (and the SDK's
/// `SCW_API_URL`) and `--scaleway-metadata-endpoint`.
pub(crate) const PROVIDER: Provider = Provider {
    name: "scaleway",
    summary: "Scaleway: the gossip member (etcd-manager and dns-controller do the rest)",
    zone_service: "no DNS service (dns-controller's job on Scaleway)",
    zone_service_names: &[],
    region_variables: &[],
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: API_ENDPOINT_FLAG,
            variable: "PROTOKUBE_SCALEWAY_API_ENDPOINT",
            what: "Scaleway's API root, for tests and private endpoints (the SDK's `SCW_API_URL` \
                   too)",
            default: "https://api.scaleway.com/",
            sdk_variable: Some("SCW_API_URL"),
        },
        Endpoint {
            flag: METADATA_ENDPOINT_FLAG,
            variable: "PROTOKUBE_SCALEWAY_METADATA_ENDPOINT",
            what: "The Scaleway instance metadata API's root, for tests",
            default: "http://169.254.42.42/",
            sdk_variable: None,
        },
    ],
    member_only: true,
    names_left_by_spec: |_| None,
    denied_to: |_, _| {
        (
            "the secret key in `SCW_SECRET_KEY`".to_owned(),
            "docs/clouds.md",
        )
    },
};

const API_ENDPOINT_FLAG: &str = "--scaleway-api-endpoint";
const METADATA_ENDPOINT_FLAG: &str = "--scaleway-metadata-endpoint";
/// The secret key nodeup writes (`SCW_SECRET_KEY`, beside `SCW_ACCESS_KEY` and
/// `SCW_DEFAULT_PROJECT_ID`), sent as `X-Auth-Token`.
const SECRET_VARIABLE: &str = "SCW_SECRET_KEY";

/// Scaleway's API in messages; its errors are `{"type", "message"}`.
pub(crate) static API: RestCloud = RestCloud {
    name: "Scaleway",
    credential: "the secret key in `SCW_SECRET_KEY`",
    fix: "set `SCW_SECRET_KEY` (nodeup writes it to /etc/sysconfig/protokube) to an API key of \
          the cluster's project",
    permission: "an API key whose policy allows `InstancesReadOnly` and `IPAMReadOnly`",
    read_error: |body| {
        Some((
            body.get("type")?.as_str()?.to_owned(),
            body.get("message")?.as_str()?.to_owned(),
        ))
    },
};

/// The metadata API in messages.
pub(crate) static METADATA: RestCloud = RestCloud {
    name: "the Scaleway instance metadata API",
    credential: "no credential",
    fix: "run on a Scaleway server or pass --instance-id",
    permission: "none",
    read_error: |_| None,
};

/// kOps' Scaleway tags: the cluster's is `noprefix=kops.k8s.io/cluster=<cluster>`.
static WORDS: MemberWords = MemberWords {
    noun: "tag",
    cluster_key: instance::CLUSTER_TAG,
};

/// The run's Scaleway: the metadata API and the API with the secret key as `X-Auth-Token`.
pub(crate) fn connect(settings: &Settings, _files: &dyn Files) -> Result<Connected> {
    let clients = Clients::new(
        &PROVIDER,
        settings,
        &Service {
            words: &METADATA,
            flag: METADATA_ENDPOINT_FLAG,
        },
        &Service {
            words: &API,
            flag: API_ENDPOINT_FLAG,
        },
        &Token {
            variable: SECRET_VARIABLE,
            header: "x-auth-token",
            bearer: false,
        },
    )?;
    let calls = clients.calls.clone();
    let servers = Arc::new(Servers::new(clients));
    Ok(connected(&PROVIDER, &WORDS, calls, servers))
}
