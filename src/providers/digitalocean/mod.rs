//! DigitalOcean, where protokube is the gossip member (DESIGN §14), in one folder: its
//! [`Provider`] value, the droplet's identity and the cluster's control-plane droplets as kOps'
//! protokube reads them ([`droplets`]: `release-1.36:protokube/pkg/protokube/do_volume.go`,
//! `protokube/pkg/gossip/do/seeds.go`), and [`connect`].

pub(crate) mod droplets;

use std::sync::Arc;

use anyhow::Result;

use crate::cloud::provider::{Endpoint, Provider};
use crate::host::Files;
use crate::providers::connected::Connected;
use crate::providers::member_only::{connected, Clients, MemberWords, Service, Token};
use crate::providers::rest::RestCloud;
use crate::settings::Settings;
use droplets::Droplets;

/// What is true of DigitalOcean for protokube: the gossip member only; its API and metadata
/// roots move with `--digitalocean-api-endpoint` and `--digitalocean-metadata-endpoint`.
pub(crate) const PROVIDER: Provider = Provider {
    name: "digitalocean",
    summary: "DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)",
    zone_service: "no DNS service (dns-controller's job on DigitalOcean)",
    zone_service_names: &[],
    region_variables: &[],
    labels_every_member: false,
    endpoints: &[
        Endpoint {
            flag: API_ENDPOINT_FLAG,
            variable: "PROTOKUBE_DIGITALOCEAN_API_ENDPOINT",
            what: "DigitalOcean's API root, for tests and private endpoints",
            default: "https://api.digitalocean.com/v2/",
            sdk_variable: None,
        },
        Endpoint {
            flag: METADATA_ENDPOINT_FLAG,
            variable: "PROTOKUBE_DIGITALOCEAN_METADATA_ENDPOINT",
            what: "The droplet metadata service's root, for tests",
            default: "http://169.254.169.254/metadata/v1/",
            sdk_variable: None,
        },
    ],
    member_only: true,
    names_left_by_spec: |_| None,
    denied_to: |_, _| {
        (
            "the token in `DIGITALOCEAN_ACCESS_TOKEN`".to_owned(),
            "docs/clouds.md",
        )
    },
};

const API_ENDPOINT_FLAG: &str = "--digitalocean-api-endpoint";
const METADATA_ENDPOINT_FLAG: &str = "--digitalocean-metadata-endpoint";
/// The token nodeup gives protokube (`nodeup/pkg/model/protokube.go`), as godo's users read it.
const TOKEN_VARIABLE: &str = "DIGITALOCEAN_ACCESS_TOKEN";

/// DigitalOcean's API in messages; its errors are `{"id", "message"}`.
pub(crate) static API: RestCloud = RestCloud {
    name: "DigitalOcean",
    credential: "the token in `DIGITALOCEAN_ACCESS_TOKEN`",
    fix: "set `DIGITALOCEAN_ACCESS_TOKEN` (nodeup writes it to /etc/sysconfig/protokube) to a \
          token of the cluster's team with the `droplet:read` scope",
    permission: "a token with the `droplet:read` scope",
    read_error: |body| {
        Some((
            body.get("id")?.as_str()?.to_owned(),
            body.get("message")?.as_str()?.to_owned(),
        ))
    },
};

/// The droplet metadata service in messages.
pub(crate) static METADATA: RestCloud = RestCloud {
    name: "the droplet metadata service",
    credential: "no credential",
    fix: "run on a droplet or pass --instance-id",
    permission: "none",
    read_error: |_| None,
};

/// kOps' DigitalOcean tags: the cluster's is `KubernetesCluster:<cluster, dots as dashes>`.
static WORDS: MemberWords = MemberWords {
    noun: "tag",
    cluster_key: droplets::CLUSTER_TAG,
};

/// The run's DigitalOcean: the droplet metadata service and the API (the token read from
/// `DIGITALOCEAN_ACCESS_TOKEN`, as kOps reads it).
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
    let droplets = Arc::new(Droplets::new(clients));
    Ok(connected(&PROVIDER, &WORDS, calls, droplets))
}
