//! What the clouds where protokube is the gossip member only have in common (DESIGN §14): a [`Cloud`] whose identity and control-plane instances come
//! from the provider's folder, and nothing else — no volume is ever asked for, attached or
//! labelled (etcd-manager's job there), no zone written (dns-controller's). The commands that
//! would need them are refused before the run ([`refused`]); these doubles are the net under
//! that check, refusing in the same words.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use async_trait::async_trait;

use crate::cloud::provider::Provider;
use crate::cloud::{
    AttachOutcome, Cloud, CloudClients, CloudVolume, DeviceHint, DeviceNaming, InstanceApi,
    InstanceMetadata, MetadataWords, Placement, VolumeApi, VolumeQuery,
};
use crate::dns::zoned::api::{ZoneApi, ZoneService};
use crate::error::UsageError;
use crate::providers::connected::Connected;
use crate::providers::rest::{Calls, Rest, RestCloud};
use crate::settings::Settings;

/// Why `command` (its name) cannot run on `provider`, a member-only cloud: the component that
/// does its job there. `volumes`: the command attaches or mounts etcd's volumes; `zones`: it
/// writes the names to the cloud's DNS service.
pub(crate) fn refused(
    provider: &Provider,
    command: &str,
    volumes: bool,
    zones: bool,
) -> Option<UsageError> {
    if !provider.member_only || !(volumes || zones) {
        return None;
    }
    let owner = match (volumes, zones) {
        (true, true) => {
            "etcd-manager attaches and mounts etcd's volumes and dns-controller publishes the names"
        }
        (true, false) => "etcd-manager attaches and mounts etcd's volumes",
        _ => "dns-controller publishes the names (and gossip carries them)",
    };
    Some(UsageError(format!(
        "`{command}` does not run with --cloud {}: there {owner}, in every kOps version; \
         protokube is the gossip member (`protokube gossip`)",
        provider.name
    )))
}

/// A member-only cloud's clients for one run: its metadata service, and its API with the token
/// as a bearer when the token's variable is set (read when the API is first needed: a command
/// that asks the cloud nothing runs without it).
pub(crate) struct Clients {
    pub(crate) metadata: Rest,
    api: Option<Rest>,
    token_variable: &'static str,
    cloud: &'static str,
    pub(crate) calls: Calls,
}

/// Where one of a cloud's services is: how it is named in messages, and its endpoint flag.
pub(crate) struct Service {
    pub(crate) words: &'static RestCloud,
    pub(crate) flag: &'static str,
}

/// A cloud's API token: the variable it is read from, and the header that carries it (`Bearer`
/// in `authorization`, else the value alone).
pub(crate) struct Token {
    pub(crate) variable: &'static str,
    pub(crate) header: &'static str,
    pub(crate) bearer: bool,
}

impl Token {
    /// A bearer token in `authorization`, read from `variable`.
    pub(crate) const fn bearer(variable: &'static str) -> Self {
        Self {
            variable,
            header: "authorization",
            bearer: true,
        }
    }
}

impl Clients {
    /// The clients of `provider` for a run of `settings`: `metadata` and `api` at their
    /// endpoint flags' roots, the API's `token` from the environment.
    pub(crate) fn new(
        provider: &'static Provider,
        settings: &Settings,
        metadata: &Service,
        api: &Service,
        token: &Token,
    ) -> Result<Self> {
        let calls = Calls::default();
        let metadata = Rest::new(
            metadata.words,
            &settings.api_root(metadata.flag)?,
            &[],
            settings.deadline,
            calls.clone(),
            true,
        )?;
        let secret = std::env::var(token.variable).unwrap_or_default();
        let api = if secret.trim().is_empty() {
            None
        } else {
            let value = if token.bearer {
                format!("Bearer {}", secret.trim())
            } else {
                secret.trim().to_owned()
            };
            Some(Rest::new(
                api.words,
                &settings.api_root(api.flag)?,
                &[(token.header, value)],
                settings.deadline,
                calls.clone(),
                false,
            )?)
        };
        Ok(Self {
            metadata,
            api,
            token_variable: token.variable,
            cloud: provider.name,
            calls,
        })
    }

    /// Clients made elsewhere (the providers' unit tests).
    #[cfg(test)]
    pub(crate) fn from_parts(
        provider: &'static Provider,
        metadata: Rest,
        api: Option<Rest>,
        token_variable: &'static str,
    ) -> Self {
        Self {
            metadata,
            api,
            token_variable,
            cloud: provider.name,
            calls: Calls::default(),
        }
    }

    /// The API; without its token, the usage error that names the variable.
    pub(crate) fn api(&self) -> Result<&Rest> {
        self.api.as_ref().ok_or_else(|| {
            UsageError(format!(
                "--cloud {}: `{}` is not set; protokube reads the cloud's instances with the \
                 token nodeup writes to /etc/sysconfig/protokube",
                self.cloud, self.token_variable
            ))
            .into()
        })
    }
}

/// `value`, a name the cloud gave (`what`: ``the server's name``), if it is a host name or
/// label as the cloud spells them (letters, digits, `-`, `.`, `_`; at most 255): it becomes a
/// gossip name that reaches every peer and the hosts file's neighbours, or a log line.
pub(crate) fn checked_name(what: &str, value: &str) -> Result<String> {
    let value = value.trim();
    let plain = !value.is_empty()
        && value.len() <= 255
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !plain {
        anyhow::bail!("{what} `{}` is not a host name", value.escape_debug());
    }
    Ok(value.to_owned())
}

/// kOps' metadata keys as a member-only cloud spells the cluster's: its noun and its key for
/// `KubernetesCluster` (other keys are never read there).
#[derive(Debug)]
pub(crate) struct MemberWords {
    pub(crate) noun: &'static str,
    pub(crate) cluster_key: &'static str,
}

impl MetadataWords for MemberWords {
    fn noun(&self) -> &'static str {
        self.noun
    }

    fn key(&self, key: &str) -> String {
        if key == crate::cloud::tags::CLUSTER {
            self.cluster_key.to_owned()
        } else {
            key.to_owned()
        }
    }
}

/// The run's cloud and zone service of `provider`, a member-only cloud: `node` (its metadata
/// service and its instances, one value of the provider's folder), `words`, `calls`.
pub(crate) fn connected<T: InstanceMetadata + InstanceApi + 'static>(
    provider: &'static Provider,
    words: &'static MemberWords,
    calls: Calls,
    node: Arc<T>,
) -> Connected {
    Connected {
        cloud: Box::new(MemberOnlyCloud {
            provider,
            metadata: node.clone(),
            instances: node,
            words,
            calls,
        }),
        zones: Box::new(NoZones(provider)),
    }
}

/// A member-only cloud: its metadata (the node's identity) and its instances (the cluster
/// and its control plane), from the provider's folder.
struct MemberOnlyCloud {
    provider: &'static Provider,
    metadata: Arc<dyn InstanceMetadata>,
    instances: Arc<dyn InstanceApi>,
    words: &'static MemberWords,
    calls: Calls,
}

#[async_trait]
impl Cloud for MemberOnlyCloud {
    fn metadata(&self) -> &dyn InstanceMetadata {
        &*self.metadata
    }

    fn devices(&self) -> &dyn DeviceNaming {
        &NoDevices
    }

    fn words(&self) -> &dyn MetadataWords {
        self.words
    }

    async fn connect(&self, _placement: &Placement) -> Result<CloudClients> {
        Ok(CloudClients {
            volumes: Arc::new(NoVolumes(self.provider)),
            instances: self.instances.clone(),
        })
    }

    fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.snapshot()
    }
}

/// The volumes of a member-only cloud: etcd-manager's, never asked for.
struct NoVolumes(&'static Provider);

impl NoVolumes {
    fn refuse<T>(&self, command: &str) -> Result<T> {
        Err(refused(self.0, command, true, false)
            .unwrap_or_else(|| UsageError(format!("no volumes on --cloud {}", self.0.name)))
            .into())
    }
}

#[async_trait]
impl VolumeApi for NoVolumes {
    async fn find_volumes(&self, _query: &VolumeQuery) -> Result<Vec<CloudVolume>> {
        self.refuse("finding etcd volumes")
    }

    async fn volumes_by_id(&self, _volume_ids: &[String]) -> Result<Vec<CloudVolume>> {
        self.refuse("reading etcd volumes")
    }

    async fn attach_volume(&self, _: &str, _: &str, _: &str, _: bool) -> Result<AttachOutcome> {
        self.refuse("attaching an etcd volume")
    }

    async fn instance_device_names(&self, _instance_id: &str) -> Result<Vec<String>> {
        self.refuse("reading the instance's devices")
    }

    async fn tag_volume(&self, _: &str, _: &str, _: &str) -> Result<()> {
        self.refuse("labelling an etcd volume")
    }

    async fn detach_volume(&self, _: &str, _: &str, _: bool) -> Result<()> {
        self.refuse("detaching an etcd volume")
    }
}

/// No device is ever named on a member-only cloud.
#[derive(Debug)]
struct NoDevices;

impl DeviceNaming for NoDevices {
    fn free_name(&self, _volume_id: &str, _in_use: &[String]) -> Option<String> {
        None
    }

    fn names(&self) -> String {
        "none (etcd-manager attaches the volumes)".to_owned()
    }

    fn name_count(&self) -> usize {
        0
    }

    fn is_root_device(&self, _device: &str) -> bool {
        false
    }

    fn hint(&self, volume_id: &str, _requested: &str) -> DeviceHint {
        DeviceHint {
            volume_id: volume_id.to_owned(),
            candidates: Vec::new(),
            nvme_serial: None,
        }
    }
}

/// The DNS service of a member-only cloud: dns-controller's, never written.
struct NoZones(&'static Provider);

#[async_trait]
impl ZoneService for NoZones {
    async fn connect(&self, _region: &str) -> Result<Arc<dyn ZoneApi>> {
        Err(refused(self.0, "publishing to DNS zones", false, true)
            .unwrap_or_else(|| UsageError(format!("no DNS zones on --cloud {}", self.0.name)))
            .into())
    }
}
