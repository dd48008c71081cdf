//! The run's settings: every flag, and every value derived from the flags and the cluster spec
//! (cluster name, internal suffix, public name, zone rules, templates), validated once before
//! anything else runs. A bad flag is a usage error (exit 64), a bad file or spec value exit 1;
//! either way nothing has been locked, asked of the cloud or written yet.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::cloud::provider::Provider;
use crate::error::UsageError;
use crate::gossip::settings::{GossipInput, GossipSettings};
use crate::host::Files;
use crate::identity::{check_identity_value, IdentityOverrides};
use crate::names::{
    check_cluster_name, check_dns_name, is_dns1123_subdomain, is_within, normalize_dns_name,
};
use crate::paths::HostRoot;
use crate::plan::blank::BlankCheck;
use crate::plan::dns::records::own_name_taken;
use crate::plan::dns::zones::ZoneRule;
use crate::plan::etcd_owner::Declined;
use crate::plan::kops::{KopsUnit, DISTROLESS_CHANNELS_TOOL};
use crate::plan::manifests::etcd::{
    check_api_server_etcd_ports, etcd_image, etcd_ports, EtcdOptions,
};
use crate::plan::manifests::templates::{compile_templates, BUILTIN_TEMPLATES};
use crate::spec::{ClusterDocument, MAX_SPEC_BYTES};
use crate::wait::{Deadline, Progress};

pub(crate) use crate::flags::{DnsChoice, DnsKind, Flags};

/// The etcd image of the old daemon's invocation without a spec or `--etcd-image` (kOps
/// v1.30's default etcd).
pub(crate) const DEFAULT_ETCD_IMAGE: &str = "registry.k8s.io/etcd:3.5.13-0";

/// The kubeconfig nodeup writes for protokube on control-plane nodes (`KUBECONFIG` in
/// `/etc/sysconfig/protokube`).
pub(crate) const DEFAULT_KUBECONFIG: &str = "/var/lib/kops/kubeconfig";

/// The cluster's names, derived from its name, the flags and the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cluster {
    pub(crate) name: String,
    /// Suffix of internal names, with its leading dot: `.internal.<cluster>` unless overridden.
    pub(crate) internal_suffix: String,
    /// `spec.masterPublicName`, else `api.<cluster>`; lowercase, no trailing dot.
    pub(crate) public_name: String,
    /// Where records go.
    pub(crate) dns: DnsKind,
    /// Why `dns` is not what the cluster name alone suggests (said once by the publish step).
    pub(crate) dns_note: Option<String>,
}

/// Validated settings of one run.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// `--cloud`: what is true of the cloud this node runs on.
    pub(crate) provider: &'static Provider,
    /// The provider's API roots: its endpoint flags as given, else their defaults.
    pub(crate) endpoints: BTreeMap<&'static str, String>,
    pub(crate) spec: Option<ClusterDocument>,
    /// The cluster's names when known without asking the cloud (`--cluster-id` or the spec's
    /// `metadata.name`); otherwise the snapshot reads the instance's `KubernetesCluster` tag and
    /// derives them with [`Settings::cluster_named`].
    pub(crate) cluster: Option<Cluster>,
    pub(crate) master: bool,
    pub(crate) root: HostRoot,
    pub(crate) identity: IdentityOverrides,
    /// DNS zone rules: `--zone`, else `spec.dnsZone`, else any zone.
    pub(crate) zone_rules: Vec<ZoneRule>,
    /// The templates, compiled (built-in ones, replaced by `--templates` files).
    pub(crate) templates: Arc<tera::Tera>,
    pub(crate) dry_run: bool,
    /// `--timeout` from the start of the run: every wait of the run ends by it.
    pub(crate) deadline: Deadline,
    /// How waits are shown.
    pub(crate) progress: Progress,
    /// `--verify-interval`: how long a converged master trusts its last full check (0: never).
    pub(crate) verify_interval: Duration,
    pub(crate) etcd: EtcdOptions,
    pub(crate) dns_wait: bool,
    /// How much of a device the blank proof reads.
    pub(crate) blank_check: BlankCheck,
    /// `--adopt`: take over this cluster's names that have no ownership record.
    pub(crate) adopt: bool,
    /// `reset --detach`: detach the etcd volumes too.
    pub(crate) detach: bool,
    /// Only the etcd pods are rendered (the old daemon's invocation without a spec); the
    /// kube-* pods stay nodeup's.
    pub(crate) etcd_only: bool,
    /// The old daemon's invocation (no subcommand, nodeup's unit).
    pub(crate) legacy: bool,
    /// When the loop this run is part of comes back (the old daemon's minute, set by the wing
    /// that drives the loop); `None` for a run on its own.
    pub(crate) repeat: Option<std::time::Duration>,
    /// Addon channels to apply (`--channels`), each checked.
    pub(crate) channels: Vec<String>,
    /// `--bootstrap-master-node-labels`: `sync` labels `--node-name`.
    pub(crate) bootstrap_master_node_labels: bool,
    /// `--node-name`, checked.
    pub(crate) node_name: Option<String>,
    /// The kubeconfig's host path (`KUBECONFIG`'s first entry, else kOps'
    /// `/var/lib/kops/kubeconfig`; one given inside `--root`, as kOps' container passes
    /// `/rootfs/var/lib/kops/kubeconfig`, is that host path); absolute wherever the run uses it.
    pub(crate) kubeconfig: String,
    /// The kOps version the old daemon's unit flags place this run in: its labels, how the
    /// node is found, whether kubelet is started.
    pub(crate) kops: KopsUnit,
    /// `--containerized=true`: in kOps' container, the channels tool may be on PATH.
    pub(crate) containerized: bool,
    /// `--initialize-rbac=true` on a control-plane node: kOps' bootstrap RBAC objects exist.
    pub(crate) initialize_rbac: bool,
    /// Why nodeup's unit says etcd is not protokube's on this node, if it does.
    pub(crate) etcd_declined: Option<Declined>,
    /// The members the spec names for each etcd cluster (`etcdMembers`), checked names.
    pub(crate) etcd_members: std::collections::BTreeMap<String, Vec<String>>,
    /// `--remove-dns-names`: the etcd names kOps precreated, removed while they hold its
    /// placeholder address (checked DNS names).
    pub(crate) remove_dns_names: Vec<String>,
    /// The gossip member's settings (`gossip`, and the old daemon's unit on a gossip cluster).
    pub(crate) gossip: GossipSettings,
    /// `--metrics-file`, where the long-running member keeps its figures.
    pub(crate) metrics_file: Option<PathBuf>,
    pub(crate) dns_flag: Option<DnsKind>,
    internal_suffix_flag: Option<String>,
}

impl Settings {
    /// Validates `flags` and loads the spec and templates from the node's `files`; no network,
    /// no lock, no write.
    pub(crate) fn resolve(flags: Flags, files: &dyn Files) -> Result<Self> {
        check_identity_flags(&flags)?;
        let internal_suffix_flag = flags
            .dns_internal_suffix
            .as_deref()
            .map(parse_internal_suffix)
            .transpose()?;
        let spec = LoadedSpec::read(files, &flags)?;
        let templates = Arc::new(load_templates_dir(files, flags.templates.as_deref())?);
        check_kubernetes_flags(&flags)?;
        let (given_root, root) = host_root(&flags, files)?;
        let kubeconfig = host_kubeconfig(&flags, &given_root, &root)?;
        let provider = flags
            .provider
            .ok_or_else(|| UsageError("--cloud: no cloud given".to_owned()))?;
        let dns_flag = flags
            .dns
            .as_ref()
            .map(|dns| check_dns_for_cloud(dns, provider))
            .transpose()
            .map_err(usage)?;
        let etcd_only = flags.legacy && spec.document.is_none();
        let mut settings = Self {
            provider,
            endpoints: provider.endpoints(&flags.endpoints).map_err(usage)?,
            cluster: None,
            master: flags.master,
            root,
            identity: identity_overrides(&flags, provider),
            zone_rules: spec.zone_rules,
            templates,
            dry_run: flags.dry_run,
            deadline: Deadline::after(flags.timeout),
            progress: Progress::detect(flags.no_progress || flags.quiet),
            verify_interval: flags.verify_interval,
            etcd_only,
            legacy: flags.legacy,
            repeat: None,
            channels: flags.channels.clone(),
            bootstrap_master_node_labels: flags.bootstrap_master_node_labels,
            node_name: flags.node_name.clone(),
            kubeconfig,
            kops: flags.kops.in_image(distroless_image(files, flags.kops)?),
            containerized: flags.containerized,
            initialize_rbac: flags.initialize_rbac,
            etcd_members: spec.etcd_members,
            remove_dns_names: checked_remove_dns_names(&flags.remove_dns_names)?,
            etcd_declined: etcd_declined(&flags),
            etcd: etcd_options(&flags, etcd_only),
            dns_wait: flags.wait,
            blank_check: flags.blank_check.into(),
            adopt: flags.adopt,
            detach: flags.detach,
            gossip: gossip_settings(&flags.gossip).map_err(UsageError)?,
            metrics_file: flags.metrics_file.clone(),
            dns_flag,
            internal_suffix_flag,
            spec: spec.document,
        };
        settings.cluster = settings
            .cluster_known_offline(flags.cluster_id.as_deref())
            .with_context(|| format!("cluster spec `{}`", spec.origin))?;
        Ok(settings)
    }

    /// The cluster known before any cloud call: `--cluster-id`, else the spec's name.
    fn cluster_known_offline(&self, cluster_id: Option<&str>) -> Result<Option<Cluster>> {
        let name = cluster_id.or_else(|| self.spec.as_ref().and_then(|s| s.name()));
        name.map(|name| self.cluster_named(name)).transpose()
    }

    /// The API root endpoint flag `flag` of the run's provider gives (its default when not
    /// given); every provider's flags are resolved with the settings.
    pub(crate) fn api_root(&self, flag: &str) -> Result<String> {
        self.endpoints
            .get(flag)
            .cloned()
            .ok_or_else(|| anyhow!("no API root for `{flag}`"))
    }

    /// The node `sync` gives kOps' control-plane labels: `--node-name`, when
    /// `--bootstrap-master-node-labels` asks for it.
    pub(crate) fn node_to_label(&self) -> Option<&str> {
        self.node_name
            .as_deref()
            .filter(|_| self.bootstrap_master_node_labels)
    }

    /// kOps 1.36's unit: the old daemon's invocation naming neither `--master` nor the cluster,
    /// so the instance's tags say both.
    pub(crate) fn learns_node_role(&self) -> bool {
        self.legacy && !self.master && self.cluster.is_none()
    }

    /// These settings for the node its tags describe: its cluster, and with `role` also
    /// `--master` when it is a control-plane instance.
    pub(crate) fn with_node(
        mut self,
        node: &crate::plan::state::LearnedNode,
        role: bool,
    ) -> Result<Self> {
        if role {
            self.master = node.control_plane;
        }
        self.cluster =
            Some(self.cluster_named(&node.cluster).with_context(|| {
                format!("cluster `{}` (from the instance's tags)", node.cluster)
            })?);
        Ok(self)
    }

    /// The cluster's names for `name` (already checked as a cluster name): the internal suffix,
    /// the public name (checked like any name from outside) and the DNS provider.
    pub(crate) fn cluster_named(&self, name: &str) -> Result<Cluster> {
        let internal_suffix = self
            .internal_suffix_flag
            .clone()
            .unwrap_or_else(|| format!(".internal.{name}"));
        let spec = self.spec.as_ref().map(|d| &d.spec);
        let (dns, dns_note) = match self.dns_flag {
            Some(dns) => (dns, None),
            None => default_dns(name, spec, self.provider),
        };
        let public_name = if let Some(given) = self
            .spec
            .as_ref()
            .and_then(|s| s.spec.master_public_name.as_deref())
        {
            let public = check_public_name(given, name, dns, &self.zone_rules)
                .map_err(|why| anyhow!("spec.masterPublicName: {why}"))?;
            if let Some(why) = own_name_taken(name, &internal_suffix, &public) {
                bail!(
                    "spec.masterPublicName: {why}; the public API name must be a name of its own \
                     (e.g. `api.{name}`)"
                );
            }
            public
        } else {
            let default = format!("api.{name}");
            if let Some(owner) = another_clusters_api_name(&default, name) {
                bail!(
                    "cluster `{name}`: its API name `{default}` is the internal API name of \
                     cluster `{owner}`; set spec.masterPublicName to a name of its own"
                );
            }
            default
        };
        Ok(Cluster {
            name: name.to_owned(),
            internal_suffix,
            public_name,
            dns,
            dns_note,
        })
    }
}

/// The root as given (`/` unless `--root` says otherwise) and as protokube uses it.
fn host_root(flags: &Flags, files: &dyn Files) -> Result<(PathBuf, HostRoot)> {
    let given = flags.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let root = files.root(&given).map_err(|err| {
        UsageError(format!(
            "--root: `{}` is not a directory protokube can use ({})",
            given.display(),
            crate::error::one_line(&err)
        ))
    })?;
    Ok((given, root))
}

/// Why protokube does not manage etcd here, where its unit says so.
fn etcd_declined(flags: &Flags) -> Option<Declined> {
    if flags.manage_etcd == Some(false) {
        Some(Declined::ManageEtcdFalse)
    } else if flags.kops_123_unit {
        Some(Declined::Kops123Unit)
    } else {
        None
    }
}

/// The etcd flags, with the default image where the old daemon runs etcd without a spec.
fn etcd_options(flags: &Flags, etcd_only: bool) -> EtcdOptions {
    match (&flags.etcd.etcd_image, etcd_only) {
        (None, true) => EtcdOptions {
            etcd_image: Some(DEFAULT_ETCD_IMAGE.to_owned()),
            ..flags.etcd.clone()
        },
        _ => flags.etcd.clone(),
    }
}

/// Whether a container unit runs in kOps 1.19–1.20's distroless image: its channels tool at
/// `/channels`, at the container's own root (outside the host's, at `/rootfs`). Nothing is
/// The identity flags (`--instance-id`, `--availability-zone`, `--region`) and `--cluster-id`,
/// checked as values of the cloud would be.
fn check_identity_flags(flags: &Flags) -> Result<()> {
    for (what, value, flag) in [
        ("instance id", &flags.instance_id, "--instance-id"),
        (
            "availability zone",
            &flags.availability_zone,
            "--availability-zone",
        ),
        ("region", &flags.region, "--region"),
    ] {
        if let Some(value) = value {
            check_identity_value(what, value, flag).map_err(usage)?;
        }
    }
    if let Some(name) = &flags.cluster_id {
        check_cluster_name(name).map_err(|msg| UsageError(format!("--cluster-id: {msg}")))?;
    }
    Ok(())
}

/// The identity the flags give (the provider's own tools' region variables count as a region
/// given by the user).
fn identity_overrides(flags: &Flags, provider: &Provider) -> IdentityOverrides {
    IdentityOverrides {
        instance_id: flags.instance_id.clone(),
        availability_zone: flags.availability_zone.clone(),
        region: flags.region.clone().or_else(|| {
            provider
                .region_variables
                .iter()
                .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        }),
        internal_ip: flags.internal_ip,
        external_ip: flags.external_ip,
    }
}

/// `--cluster-spec`, read and checked, with what derives from it.
struct LoadedSpec {
    document: Option<ClusterDocument>,
    /// The spec's path, for messages (empty without one).
    origin: String,
    etcd_members: BTreeMap<String, Vec<String>>,
    zone_rules: Vec<ZoneRule>,
}

impl LoadedSpec {
    fn read(files: &dyn Files, flags: &Flags) -> Result<Self> {
        let document = flags
            .cluster_spec
            .as_deref()
            .map(|path| read_spec(files, path))
            .transpose()?;
        let origin = flags
            .cluster_spec
            .as_deref()
            .map_or_else(String::new, |p| p.display().to_string());
        let in_spec = || format!("cluster spec `{origin}`");
        if let Some(name) = document.as_ref().and_then(|s| s.name()) {
            check_cluster_name(name)
                .map_err(|msg| anyhow!("cluster spec `{origin}`: metadata.name: {msg}"))?;
        }
        let etcd_members = document
            .as_ref()
            .map(|doc| doc.spec.etcd_members())
            .transpose()
            .with_context(in_spec)?
            .unwrap_or_default();
        if let (true, true, Some(doc)) = (flags.master, flags.renders, &document) {
            let clusters = &doc.spec.etcd_clusters;
            etcd_ports(clusters, [])
                .and_then(|ports| {
                    check_api_server_etcd_ports(doc.spec.kube_api_server.as_ref(), &ports)
                })
                .and_then(|()| {
                    clusters
                        .iter()
                        .try_for_each(|c| etcd_image(&flags.etcd, clusters, &c.name).map(drop))
                })
                .with_context(in_spec)?;
        }
        let zone_rules = zone_rules(
            &flags.zones,
            document.as_ref().and_then(|s| s.spec.dns_zone.as_deref()),
        )
        .with_context(in_spec)?;
        Ok(Self {
            document,
            origin,
            etcd_members,
            zone_rules,
        })
    }
}

/// `--channels` and `--node-name`, checked.
fn check_kubernetes_flags(flags: &Flags) -> Result<()> {
    for channel in &flags.channels {
        check_channel(channel).map_err(usage)?;
    }
    if let Some(name) = &flags.node_name {
        if !is_dns1123_subdomain(name) {
            return Err(UsageError(format!(
                "--node-name: `{}` is not a Kubernetes node name (lowercase letters, digits, `-` \
                 and `.`)",
                name.escape_debug()
            ))
            .into());
        }
    }
    Ok(())
}

/// The kubeconfig's host path: `KUBECONFIG`'s first entry (it may list several, `a:b`; the
/// first is the one nodeup writes), else kOps'. Checked only where the run talks to the
/// Kubernetes API, so an operator's own KUBECONFIG never stops a command that does not use it.
/// kOps' container passes it as it sees it, under its `/rootfs`: the host path is what follows
/// the root (as given, or resolved).
fn host_kubeconfig(flags: &Flags, given_root: &Path, root: &HostRoot) -> Result<String> {
    let kubeconfig = match flags.kubeconfig.split(':').next().unwrap_or_default() {
        "" => DEFAULT_KUBECONFIG.to_owned(),
        first => first.to_owned(),
    };
    let labels_here = flags.bootstrap_master_node_labels && flags.node_name.is_some();
    let api_here =
        labels_here || (flags.master && (flags.initialize_rbac || !flags.channels.is_empty()));
    if (flags.talks_to_kubernetes || api_here) && !kubeconfig.starts_with('/') {
        return Err(UsageError(format!(
            "KUBECONFIG: `{}` is not an absolute host path (kOps: {DEFAULT_KUBECONFIG})",
            flags.kubeconfig.escape_debug()
        ))
        .into());
    }
    Ok([given_root, root.dir()]
        .into_iter()
        .filter(|dir| *dir != Path::new("/"))
        .find_map(|dir| Path::new(&kubeconfig).strip_prefix(dir).ok())
        .map_or(kubeconfig.clone(), |inside| {
            Path::new("/").join(inside).display().to_string()
        }))
}

/// `--remove-dns-names`, each a checked DNS name.
fn checked_remove_dns_names(names: &[String]) -> Result<Vec<String>> {
    Ok(names
        .iter()
        .map(|name| {
            let name = normalize_dns_name(name);
            check_dns_name(&name)
                .map(|()| name)
                .map_err(|why| UsageError(format!("--remove-dns-names: {why}")))
        })
        .collect::<Result<_, _>>()?)
}

/// looked at outside a container unit.
fn distroless_image(files: &dyn Files, kops: KopsUnit) -> Result<bool> {
    if !kops.in_container() {
        return Ok(false);
    }
    // `/channels` alone tells it: 1.12–1.18's image never has it, and a stray `/protokube`
    // (an operator's copy) does not make a Debian image distroless.
    Ok(files.kind(Path::new(DISTROLESS_CHANNELS_TOOL))? == crate::host::FileKind::File)
}

/// Where a cluster's records go when `--dns` is not given, and why when the spec decides it:
/// nowhere for a cluster without DNS (`topology.dns.type: None`: nodeup writes the names
/// itself) and where the provider says the spec leaves them to another component; the hosts
/// file for a gossip (`.k8s.local`) cluster; else the cloud's DNS service's zones.
fn default_dns(
    name: &str,
    spec: Option<&crate::spec::ClusterSpec>,
    provider: &Provider,
) -> (DnsKind, Option<String>) {
    let gossip = name.ends_with(".k8s.local");
    if provider.zone_service_names.is_empty() {
        // No DNS service of its own to publish to: the hosts file.
        return (DnsKind::Hosts, None);
    }
    match spec {
        Some(spec) if spec.uses_none_dns() => (
            DnsKind::None,
            Some(
                "the cluster has no DNS (topology.dns.type: None): nodeup writes its names; \
                 protokube publishes none (--dns none)"
                    .to_owned(),
            ),
        ),
        Some(spec) if !gossip => match (provider.names_left_by_spec)(spec) {
            Some(why) => (DnsKind::None, Some(why.to_owned())),
            None => (DnsKind::Zones, None),
        },
        _ if gossip => (DnsKind::Hosts, None),
        _ => (DnsKind::Zones, None),
    }
}

/// The gossip flags, checked.
fn gossip_settings(flags: &crate::flags::GossipFlags) -> Result<GossipSettings, String> {
    GossipSettings::resolve(&GossipInput {
        protocol: flags.gossip_protocol.as_deref(),
        listen: flags.gossip_listen.as_deref(),
        secret: flags.gossip_secret.as_deref(),
        protocol_secondary: flags.gossip_protocol_secondary.as_deref(),
        listen_secondary: flags.gossip_listen_secondary.as_deref(),
        secret_secondary: flags.gossip_secret_secondary.as_deref(),
        seeds: &flags.gossip_seed,
        seeds_secondary: &flags.gossip_seed_secondary,
        conn_limit: flags.gossip_conn_limit,
    })
}

/// `--dns` on the cloud `provider`: a name of a zone service must be its own (another cloud's
/// names would go to this cloud's service); the kind of place it chose.
fn check_dns_for_cloud(dns: &DnsChoice, provider: &Provider) -> Result<DnsKind> {
    match &dns.called {
        Some(called) if !provider.answers_to(called) => Err(anyhow!(
            "--dns {called}: not the zone service of --cloud {}; its names go to {} (`--dns \
             zones`, or {}), the hosts file or nowhere",
            provider.name,
            provider.zone_service,
            provider
                .zone_service_names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => Ok(dns.kind),
    }
}

/// The cluster another kOps cluster's API name belongs to: kOps names a cluster's APIs
/// `api.<cluster>` and `api.internal.<cluster>`, so `api.<other>` (a copied spec's name, a child
/// cluster's) and any `api.internal.<…>` (a cluster named `internal.<other>` would take
/// `<other>`'s internal name) are someone else's.
fn another_clusters_api_name(name: &str, cluster: &str) -> Option<String> {
    if let Some(owner) = name.strip_prefix("api.internal.") {
        return Some(owner.to_owned());
    }
    name.strip_prefix("api.")
        .filter(|owner| *owner != cluster)
        .map(str::to_owned)
}

/// `spec.masterPublicName`, untrusted like a tag: a DNS name (no wildcard), never the API name
/// kOps gives another cluster, inside the cluster's domain — or, for a DNS service, inside a zone the
/// `--zone` rules or the spec's `dnsZone` name, and not that zone's apex. Without a named zone
/// (no rule, `*`) it must be inside the cluster's domain. (Zones given by id are known only at
/// publish time, where the name is checked to lie in one, and the apex again.)
fn check_public_name(
    given: &str,
    cluster: &str,
    dns: DnsKind,
    rules: &[ZoneRule],
) -> Result<String, String> {
    let name = normalize_dns_name(given);
    check_dns_name(&name)?;
    if let Some(owner) = another_clusters_api_name(&name, cluster) {
        return Err(format!(
            "`{name}` is the API name kOps gives cluster `{owner}`, not this cluster \
             (`{cluster}`); protokube never takes another cluster's name: use `api.{cluster}` or \
             a name of your own that does not start with `api.`"
        ));
    }
    if is_within(&name, cluster) {
        return Ok(name);
    }
    let named_zones: Vec<&str> = rules
        .iter()
        .filter_map(|rule| match rule {
            ZoneRule::Name(zone) | ZoneRule::NameId(zone, _) => Some(zone.as_str()),
            ZoneRule::Id(_) | ZoneRule::Any => None,
        })
        .collect();
    let zone_by_id = rules.iter().any(|r| matches!(r, ZoneRule::Id(_)));
    match dns {
        DnsKind::Hosts => Err(format!(
            "`{name}` is outside the cluster's domain `{cluster}`; the hosts file of a gossip \
             cluster only carries the cluster's own names"
        )),
        DnsKind::Zones if named_zones.contains(&name.as_str()) => Err(format!(
            "`{name}` is the apex of an allowed zone; protokube never writes a zone apex"
        )),
        DnsKind::Zones if zone_by_id || named_zones.iter().any(|z| is_within(&name, z)) => Ok(name),
        DnsKind::Zones if named_zones.is_empty() => Err(format!(
            "`{name}` is outside the cluster's domain `{cluster}` and no zone is named (--zone or \
             the spec's dnsZone): name the zone it belongs to with --zone"
        )),
        DnsKind::Zones => Err(format!(
            "`{name}` is neither inside the cluster's domain `{cluster}` nor inside an allowed \
             zone ({}); choose the zone with --zone",
            named_zones.join(", ")
        )),
        DnsKind::None => Ok(name),
    }
}

/// A channel (`--channels`) as kOps' channels tool takes it: a URL or path, nothing that the
/// tool could read as a flag or that splits into several arguments.
fn check_channel(channel: &str) -> Result<()> {
    if channel.is_empty()
        || channel.starts_with('-')
        || channel.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(anyhow!(
            "--channels: `{}` is not a channel URL (e.g. `s3://bucket/cluster/addons/bootstrap-channel.yaml`)",
            channel.escape_debug()
        ));
    }
    Ok(())
}

fn usage(err: anyhow::Error) -> anyhow::Error {
    UsageError(crate::error::one_line(&err)).into()
}

/// `--dns-internal-suffix`, with its leading dot.
fn parse_internal_suffix(value: &str) -> Result<String> {
    let suffix = format!(".{}", value.trim_start_matches('.'));
    if is_dns1123_subdomain(&suffix[1..]) {
        Ok(suffix)
    } else {
        Err(UsageError(format!(
            "--dns-internal-suffix: `{}` is not a valid DNS suffix (lowercase letters, digits, `-` \
             and `.`, e.g. `.internal.c.example.com`)",
            value.escape_debug()
        ))
        .into())
    }
}

/// The zone rules in force: `--zone` flags (exit 64 when one is wrong), else `spec.dnsZone`
/// (exit 1 when wrong, also when the flags override it: the spec file is bad), else any zone.
fn zone_rules(flags: &[String], spec_dns_zone: Option<&str>) -> Result<Vec<ZoneRule>> {
    let spec_rule = spec_dns_zone
        .filter(|z| !z.is_empty())
        .map(|zone| ZoneRule::from_spec(zone).map_err(|e| anyhow!(e)))
        .transpose()?;
    if !flags.is_empty() {
        return flags
            .iter()
            .map(|f| ZoneRule::parse(f).map_err(|e| UsageError(e).into()))
            .collect();
    }
    Ok(vec![spec_rule.unwrap_or(ZoneRule::Any)])
}

/// The templates: the built-in ones, each replaced by the file of the same name in the
/// `--templates` directory when there is one. A directory that does not exist is a usage error;
/// a template there that cannot be read or compiled fails the run (exit 1).
/// Reads and parses the cluster document at `path` (kOps' completed spec).
pub fn read_spec(files: &dyn Files, path: &Path) -> Result<ClusterDocument> {
    let text = read_text(files, path, MAX_SPEC_BYTES)
        .context("reading the cluster spec (kOps' completed specs are a few KiB)")?;
    ClusterDocument::parse(&text, &path.display().to_string())
}

/// The text of the file at `path` when it holds at most `max` bytes (an error otherwise, or
/// when it is missing or not UTF-8).
fn read_text(files: &dyn Files, path: &Path, max: u64) -> Result<String> {
    let bytes = files.read(path, max)?.ok_or_else(|| {
        anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context(format!("`{}` does not exist", path.display()))
    })?;
    String::from_utf8(bytes).map_err(|_| anyhow!("`{}` is not UTF-8", path.display()))
}

/// The largest template override read (the built-in templates are a few KiB).
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

/// The built-in templates, each replaced by the file of its name in `--templates` `dir` where
/// there is one (read whole, up to [`MAX_TEMPLATE_BYTES`], UTF-8), compiled once for the run.
fn load_templates_dir(files: &dyn Files, dir: Option<&Path>) -> Result<tera::Tera> {
    let mut overrides = Vec::new();
    if let Some(dir) = dir {
        if !files.is_dir(dir) {
            return Err(UsageError(format!(
                "--templates: `{}` is not a directory",
                dir.display()
            ))
            .into());
        }
        for (name, _) in BUILTIN_TEMPLATES {
            let path = dir.join(name);
            let read = files
                .read(&path, MAX_TEMPLATE_BYTES)
                .context("reading a template override")?;
            if let Some(bytes) = read {
                let text = String::from_utf8(bytes)
                    .map_err(|_| anyhow!("`{}` is not UTF-8", path.display()))
                    .context("reading a template override")?;
                overrides.push((name.to_string(), text));
            }
        }
    }
    compile_templates(&overrides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ExitCode;
    use crate::host::linux::LinuxHost;

    fn flags() -> Flags {
        Flags {
            provider: Some(&crate::providers::aws::PROVIDER),
            root: Some("/".into()),
            timeout: Duration::from_mins(1),
            ..Default::default()
        }
    }

    fn code(result: Result<Settings>) -> ExitCode {
        ExitCode::for_error(&result.unwrap_err())
    }

    #[test]
    fn names_derive_from_the_cluster_name() {
        let settings = Settings::resolve(
            Flags {
                cluster_id: Some("c.example.com".into()),
                ..flags()
            },
            &LinuxHost,
        )
        .unwrap();
        let cluster = settings.cluster.unwrap();
        assert_eq!(cluster.internal_suffix, ".internal.c.example.com");
        assert_eq!(cluster.public_name, "api.c.example.com");
        assert_eq!(cluster.dns, DnsKind::Zones);
        let gossip = Settings::resolve(
            Flags {
                cluster_id: Some("g.k8s.local".into()),
                dns_internal_suffix: Some("internal.x.example.com".into()),
                ..flags()
            },
            &LinuxHost,
        )
        .unwrap()
        .cluster
        .unwrap();
        assert_eq!(gossip.dns, DnsKind::Hosts);
        assert_eq!(gossip.internal_suffix, ".internal.x.example.com");
    }

    #[test]
    fn the_spec_decides_where_names_go_when_dns_is_not_given() {
        let spec = |yaml: &str| -> crate::spec::ClusterSpec { yaml_serde::from_str(yaml).unwrap() };
        let none_new = spec("networking: {topology: {dns: {type: None}}}\n");
        let none_old = spec("topology: {dns: {type: None}}\n");
        let irsa = spec("iam: {useServiceAccountExternalPermissions: true}\n");
        let public = spec("topology: {dns: {type: Public}}\n");
        for (name, spec, dns) in [
            ("c.example.com", Some(&none_new), DnsKind::None),
            ("c.example.com", Some(&none_old), DnsKind::None),
            ("c.k8s.local", Some(&none_old), DnsKind::None),
            ("c.example.com", Some(&irsa), DnsKind::None),
            ("c.k8s.local", Some(&irsa), DnsKind::Hosts),
            ("c.example.com", Some(&public), DnsKind::Zones),
            ("c.example.com", None, DnsKind::Zones),
            ("c.k8s.local", None, DnsKind::Hosts),
        ] {
            let (got, note) = default_dns(name, spec, &crate::providers::aws::PROVIDER);
            assert_eq!(got, dns, "{name} {spec:?}");
            assert_eq!(note.is_some(), dns == DnsKind::None, "{name} {spec:?}");
        }
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for bad in [
            Flags {
                dns_internal_suffix: Some("bad_suffix..x".into()),
                ..flags()
            },
            Flags {
                zones: vec!["a/b/c".into()],
                ..flags()
            },
            Flags {
                cluster_id: Some("Bad_Name".into()),
                ..flags()
            },
            Flags {
                templates: Some("/nonexistent/templates".into()),
                ..flags()
            },
            Flags {
                availability_zone: Some("us-east-1a\nx".into()),
                ..flags()
            },
            Flags {
                root: Some("/nonexistent/root".into()),
                ..flags()
            },
        ] {
            assert_eq!(code(Settings::resolve(bad, &LinuxHost)), ExitCode::Usage);
        }
    }

    #[test]
    fn the_public_name_is_untrusted() {
        let name_rules = [ZoneRule::Name("example.com".into())];
        let check =
            |given, dns, rules: &[ZoneRule]| check_public_name(given, "c.example.com", dns, rules);
        assert_eq!(
            check("API.c.example.com.", DnsKind::Zones, &name_rules).unwrap(),
            "api.c.example.com"
        );
        assert!(check("k8s.example.com", DnsKind::Zones, &name_rules).is_ok());
        // Another cluster's API names: a copied spec's, a child cluster's, the internal one of
        // the cluster this one's name extends.
        for (other, owner) in [
            ("api.other.example.com", "other.example.com"),
            ("api.x.c.example.com", "x.c.example.com"),
            ("api.example.com", "example.com"),
            ("api.internal.c.example.com", "c.example.com"),
        ] {
            let err = check(other, DnsKind::Zones, &name_rules).unwrap_err();
            assert!(
                err.contains(&format!("cluster `{owner}`")),
                "{other}: {err}"
            );
        }
        // Without a named zone, only the cluster's own domain.
        assert!(check("k8s.example.com", DnsKind::Zones, &[ZoneRule::Any])
            .unwrap_err()
            .contains("no zone is named"));
        assert!(check("public.c.example.com", DnsKind::Zones, &[ZoneRule::Any]).is_ok());
        for (bad, dns, rules, needle) in [
            ("*.example.com", DnsKind::Zones, &name_rules[..], "wildcard"),
            ("example.com", DnsKind::Zones, &name_rules[..], "apex"),
            (
                "k8s.other.com",
                DnsKind::Zones,
                &name_rules[..],
                "allowed zone",
            ),
            (
                "registry.k8s.io",
                DnsKind::Hosts,
                &[ZoneRule::Any][..],
                "cluster's domain",
            ),
            (
                "6.6.6.6\tregistry.k8s.io",
                DnsKind::Hosts,
                &[ZoneRule::Any][..],
                "valid DNS name",
            ),
            (
                "a\nb.c.example.com",
                DnsKind::Zones,
                &[ZoneRule::Any][..],
                "valid DNS name",
            ),
        ] {
            let err = check(bad, dns, rules).unwrap_err();
            assert!(err.contains(needle), "{bad:?}: {err}");
        }
        // Zones by id are only known at publish time.
        assert!(check(
            "k8s.other.com",
            DnsKind::Zones,
            &[ZoneRule::Id("Z1".into())]
        )
        .is_ok());
    }

    #[test]
    fn zone_rules_precedence() {
        assert_eq!(
            zone_rules(&["*/Z9".into()], Some("example.com")).unwrap(),
            [ZoneRule::Id("Z9".into())]
        );
        assert_eq!(
            zone_rules(&[], Some("example.com")).unwrap(),
            [ZoneRule::Name("example.com".into())]
        );
        assert_eq!(zone_rules(&[], None).unwrap(), [ZoneRule::Any]);
        let err = zone_rules(&["a/b/c".into()], None).unwrap_err();
        assert!(err.is::<UsageError>());
        let err = zone_rules(&[], Some("bad zone!")).unwrap_err();
        assert!(!err.is::<UsageError>());
    }
}
