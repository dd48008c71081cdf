//! Hetzner Cloud, where protokube is the gossip member (DESIGN §14), in one folder: its
//! [`Provider`] value, the server's identity and the cluster's control-plane servers as kOps'
//! protokube reads them ([`servers`]: `release-1.36:protokube/pkg/protokube/hetzner_volume.go`,
//! `protokube/pkg/gossip/hetzner/seeds.go`), and [`connect`].

pub(crate) mod servers;

use std::sync::Arc;

use anyhow::Result;

use crate::cloud::provider::{Endpoint, Provider};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::providers::member_only::{connected, Clients, MemberWords, Service, Token};
use crate::providers::rest::{error_code_and_message, RestCloud};
use crate::settings::Settings;
use servers::Servers;

/// What is true of Hetzner Cloud for protokube: the gossip member only; its API and metadata
/// roots move with `--hetzner-api-endpoint` (and hcloud's `HCLOUD_ENDPOINT`) and
/// `--hetzner-metadata-endpoint`.
pub(crate) const PROVIDER: Provider = Provider {
    name: "hetzner",
    summary: "Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)",
    zone_service: "no DNS service (dns-controller's job on Hetzner)",
    zone_service_names: &[],
    region_variables: &[],
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: API_ENDPOINT_FLAG,
            variable: "PROTOKUBE_HETZNER_API_ENDPOINT",
            what: "Hetzner Cloud's API root, for tests and private endpoints (hcloud's `HCLOUD_ENDPOINT` too)",
            default: "https://api.hetzner.cloud/v1/",
            sdk_variable: Some("HCLOUD_ENDPOINT"),
        },
        Endpoint {
            flag: METADATA_ENDPOINT_FLAG,
            variable: "PROTOKUBE_HETZNER_METADATA_ENDPOINT",
            what: "The Hetzner metadata service's root, for tests",
            default: "http://169.254.169.254/hetzner/v1/metadata/",
            sdk_variable: None,
        },
    ],
    member_only: true,
    names_left_by_spec: |_| None,
    denied_to: |_, _| ("the token in `HCLOUD_TOKEN`".to_owned(), "docs/clouds.md"),
};

const API_ENDPOINT_FLAG: &str = "--hetzner-api-endpoint";
const METADATA_ENDPOINT_FLAG: &str = "--hetzner-metadata-endpoint";
/// The token nodeup gives protokube (`nodeup/pkg/model/protokube.go`), as hcloud reads it.
const TOKEN_VARIABLE: &str = "HCLOUD_TOKEN";

/// Hetzner Cloud's API in messages; its errors are `{"error": {"code", "message"}}`.
pub(crate) static API: RestCloud = RestCloud {
    name: "Hetzner Cloud",
    credential: "the token in `HCLOUD_TOKEN`",
    fix: "set `HCLOUD_TOKEN` (nodeup writes it to /etc/sysconfig/protokube) to an API token of \
          the cluster's project",
    permission: "a token of the cluster's project that may read servers",
    read_error: error_code_and_message,
};

/// The metadata service in messages.
pub(crate) static METADATA: RestCloud = RestCloud {
    name: "the Hetzner metadata service",
    credential: "no credential",
    fix: "run on a Hetzner Cloud server or pass --instance-id",
    permission: "none",
    read_error: |_| None,
};

/// kOps' Hetzner labels: the cluster's is `kops.k8s.io/cluster`.
static WORDS: MemberWords = MemberWords {
    noun: "label",
    cluster_key: servers::CLUSTER_LABEL,
};

/// The run's Hetzner Cloud: the metadata service and the API (the token read from
/// `HCLOUD_TOKEN`, as hcloud reads it).
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
        &Token::bearer(TOKEN_VARIABLE),
    )?;
    let calls = clients.calls.clone();
    let servers = Arc::new(Servers::new(clients));
    Ok(connected(&PROVIDER, &WORDS, calls, servers))
}
