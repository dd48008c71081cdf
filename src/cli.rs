//! The command line: global flags (each with its `PROTOKUBE_*` variable) and the subcommands.
// The doc comments here are the command line's help text (clap shows them as written, with
// `<root>` and `[default: …]`), not rustdoc: rustdoc's HTML and link checks do not apply.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::error::UsageError;
use std::collections::BTreeMap;

use crate::cloud::provider::{Endpoint, Provider};
use crate::flags::{DnsChoice, DnsKind, Flags, OutputArg};
use crate::logging::LogFormat;
use crate::plan::kops::KopsUnit;
use crate::plan::manifests::etcd::EtcdOptions;
use crate::providers::Registered;
use crate::report::OutputFormat;
use crate::settings::DEFAULT_KUBECONFIG;

/// Where kOps' protokube container (`--containerized=true`, kOps 1.12–1.20) has the host's root.
pub(crate) const CONTAINER_ROOT: &str = "/rootfs";

/// `--cloud`: its words, its help and its default are the registry's (one list of providers).
impl clap::ValueEnum for Registered {
    fn value_variants<'a>() -> &'a [Self] {
        crate::providers::all()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.provider.name).help(self.provider.summary))
    }
}

/// Every provider's endpoint flags (`--<cloud>-…-endpoint`), as each provider declares them in
/// its own folder: the API roots given, flag → value.
#[derive(Clone, Debug, Default)]
pub(crate) struct EndpointFlags(pub(crate) BTreeMap<String, String>);

impl EndpointFlags {
    /// Each provider's endpoints, with the provider.
    fn declared() -> impl Iterator<Item = (&'static Provider, &'static Endpoint)> {
        crate::providers::all()
            .iter()
            .flat_map(|r| r.provider.endpoints.iter().map(move |e| (r.provider, e)))
    }
}

impl clap::FromArgMatches for EndpointFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = Self::declared()
            .filter_map(|(_, endpoint)| {
                let id = endpoint.flag.trim_start_matches('-');
                let value = matches.get_one::<String>(id)?;
                Some((endpoint.flag.to_owned(), value.clone()))
            })
            .collect();
        Ok(Self(given))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for EndpointFlags {
    fn augment_args(mut command: clap::Command) -> clap::Command {
        for (provider, endpoint) in Self::declared() {
            let long = endpoint.flag.trim_start_matches('-');
            command = command.arg(
                clap::Arg::new(long)
                    .long(long)
                    .global(true)
                    .value_name("URL")
                    .env(endpoint.variable)
                    .help(format!(
                        "{} (with `--cloud {}`) [default: `{}`]",
                        endpoint.what, provider.name, endpoint.default
                    )),
            );
        }
        command
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// Bring a Kubernetes control plane up on cloud machines before the Kubernetes API exists.
///
/// protokube finds the cluster's etcd volumes by tag, claims, attaches and mounts them, renders
/// static-pod manifests and publishes the DNS names etcd peers, nodes and users need. Every command
/// is one-shot and idempotent: a second run on a converged node changes nothing and says so.
///
/// Without a subcommand, protokube runs as the old daemon did under kOps' nodeup
/// (protokube.service): `sync` now and every minute until SIGTERM, accepting the old flags.
///
/// Exit codes: 0 done, 1 failed, 2 changed (with --detailed-exitcode), 64 usage error,
/// 75 not ready yet (retry later).
#[derive(Debug, Parser)]
#[command(
    name = "protokube",
    version,
    long_version = crate::version::LONG_VERSION,
    max_term_width = 100
)]
pub struct Cli {
    /// The cloud this node runs on.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = Registered::default(),
        env = "PROTOKUBE_CLOUD"
    )]
    pub(crate) cloud: Registered,

    #[command(flatten)]
    pub(crate) endpoints: EndpointFlags,

    #[command(flatten)]
    pub(crate) global: Flags,

    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    #[command(flatten)]
    pub(crate) legacy: LegacyArgs,

    /// The flags that tell nodeup's unit version, as the command line itself gives them (an
    /// operator's `PROTOKUBE_*` variable never does): filled by [`Cli::parse_from`].
    #[arg(skip)]
    pub(crate) unit: UnitFlags,
}

/// What the command line itself says of the flags that tell which kOps version's nodeup wrote
/// the unit: nodeup writes them on the command line, and the settings file an operator adds
/// (`PROTOKUBE_CLUSTER_ID`, …) must not make a 1.21–1.23 unit look like 1.24, nor a container
/// unit like a host one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UnitFlags {
    /// `--containerized=…` on the command line.
    pub(crate) containerized: Option<bool>,
    /// `--cluster-id` on the command line.
    pub(crate) cluster_id: bool,
    /// `--manage-etcd` on the command line (nodeup writes it up to kOps 1.22, always).
    pub(crate) manage_etcd: bool,
    /// A `--gossip-*` flag on the command line (nodeup writes them on gossip clusters; an
    /// operator's `PROTOKUBE_GOSSIP_*` variable, which `protokube gossip` reads too, does not
    /// make the old daemon's unit a gossip cluster's).
    pub(crate) gossip_flags: bool,
}

/// The flags kOps' nodeup and older kOps versions give protokube in its unit
/// (`--cloud=aws --containerized=false --node-name=… --v=4 …`). Those with no meaning here are
/// accepted and named in one warning; the etcd ones apply when no subcommand is given.
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Without a subcommand (kOps' protokube.service)")]
pub(crate) struct LegacyArgs {
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,

    /// klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv.
    #[arg(
        long = "v",
        value_name = "N",
        global = true,
        hide = true,
        env = "PROTOKUBE_V"
    )]
    pub(crate) klog_verbosity: Option<u8>,

    /// Gossip DNS (the old flag): true means `--dns hosts`.
    #[arg(long, value_name = "BOOL", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), env = "PROTOKUBE_GOSSIP")]
    pub(crate) gossip: Option<bool>,

    /// kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the
    /// host's root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH
    /// when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a
    /// control-plane node where it is not running.
    #[arg(long, value_name = "BOOL", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), env = "PROTOKUBE_CONTAINERIZED")]
    pub(crate) containerized: Option<bool>,

    /// kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy`
    /// ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing.
    #[arg(long, value_name = "BOOL", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), env = "PROTOKUBE_INITIALIZE_RBAC")]
    pub(crate) initialize_rbac: Option<bool>,

    /// kOps ≤ 1.22: false means etcd is not protokube's on this node (etcd-manager runs it).
    #[arg(long, value_name = "BOOL", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), env = "PROTOKUBE_MANAGE_ETCD")]
    pub(crate) manage_etcd: Option<bool>,

    /// kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for
    /// etcd (comma-separated), each removed while it still holds kOps' placeholder address.
    #[arg(
        long,
        value_name = "NAMES",
        global = true,
        hide = true,
        value_delimiter = ',',
        env = "PROTOKUBE_REMOVE_DNS_NAMES"
    )]
    pub(crate) remove_dns_names: Vec<String>,

    #[command(flatten)]
    pub(crate) ignored: IgnoredLegacyArgs,
}

/// Flags of the old daemon that mean nothing here: accepted, named once in a warning.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct IgnoredLegacyArgs {
    #[arg(
        long,
        value_name = "SECONDS",
        global = true,
        hide = true,
        env = "PROTOKUBE_DNS_UPDATE_INTERVAL"
    )]
    pub(crate) dns_update_interval: Option<String>,
    #[arg(
        long,
        value_name = "SERVER",
        global = true,
        hide = true,
        env = "PROTOKUBE_DNS_SERVER"
    )]
    pub(crate) dns_server: Option<String>,
    #[arg(long, value_name = "BOOL", global = true, hide = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), env = "PROTOKUBE_APPLY_TAINTS")]
    pub(crate) apply_taints: Option<bool>,
    #[arg(
        long,
        value_name = "IMAGE",
        global = true,
        hide = true,
        env = "PROTOKUBE_ETCD_BACKUP_IMAGE"
    )]
    pub(crate) etcd_backup_image: Option<String>,
    #[arg(
        long,
        value_name = "STORE",
        global = true,
        hide = true,
        env = "PROTOKUBE_ETCD_BACKUP_STORE"
    )]
    pub(crate) etcd_backup_store: Option<String>,
}

impl IgnoredLegacyArgs {
    /// The flags given, as typed (`--node-name`), in a fixed order.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        let taints = self.apply_taints.map(|_| String::new());
        [
            ("--apply-taints", &taints),
            ("--dns-server", &self.dns_server),
            ("--dns-update-interval", &self.dns_update_interval),
            ("--etcd-backup-image", &self.etcd_backup_image),
            ("--etcd-backup-store", &self.etcd_backup_store),
        ]
        .into_iter()
        .filter(|(_, value)| value.is_some())
        .map(|(name, _)| name)
        .collect()
    }
}

/// The subcommands.
#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// List this cluster's etcd volumes in this node's availability zone (read-only).
    ///
    /// One server-side-filtered DescribeVolumes (tag:KubernetesCluster, tag-key k8s.io/role/master,
    /// availability-zone). Volumes that match but cannot be used (malformed k8s.io/etcd/* tag, root
    /// device, no etcd tag) are named in `warnings`.
    DiscoverVolumes,

    /// Claim, attach and mount this node's etcd volumes (control-plane nodes only).
    ///
    /// Volumes are claimed in kOps' order (main, events, others), at most one per etcd cluster per
    /// node; AttachVolume is the lock between nodes. A device is formatted (ext4) only when blkid
    /// finds no signature and the data read is all zeros; anything else that is not ext4 is refused.
    /// Mounts at <root>/mnt/master-<volume id> and records them in
    /// <root>/var/lib/protokube/state.json.
    Mount,

    /// Write the static-pod manifests: etcd per mounted member and the control plane on masters,
    /// kube-proxy on every node.
    ///
    /// Flags come from the cluster spec's componentconfig sections by kOps' rules; every value is
    /// quoted into YAML and each manifest is checked to be a valid v1 Pod before anything is written.
    /// Files are replaced atomically and only when their bytes change. An etcd manifest lives on its
    /// volume (<mount>/k8s.io/manifests/) with a symlink in /etc/kubernetes/manifests.
    RenderManifests(RenderArgs),

    /// Publish the names etcd peers, nodes and users need, to Route53 or /etc/hosts.
    ///
    /// Records are a function of cloud state (volume attachments, running masters), so every node
    /// computes the same answer: etcd-<member><suffix> and etcd-<key>-<member><suffix> to the private
    /// IP of the instance the member's volume is attached to, api.internal.<cluster> to the masters'
    /// private IPs, the public API name to their public IPs. Route53 (masters only): only the
    /// cluster's names are read, one change batch per zone, TTL 60, records owned through a TXT
    /// record beside them. Hosts: kOps' guarded block in <root>/etc/hosts.
    PublishDns(PublishArgs),

    /// Discover, mount, render and publish in one run (what boot scripts and timers call).
    ///
    /// Control-plane nodes (--master) run all four steps; other nodes render kube-proxy and, for
    /// gossip (`hosts`) DNS, update /etc/hosts. One lock for the whole run, one combined report,
    /// and the cloud asked once per kind of fact: a converged master makes one AWS call
    /// (DescribeInstances) and writes nothing; volumes and records are checked in full every
    /// --verify-interval and whenever that answer changes. Stops at the first failure (exit 75
    /// when a step is not ready yet).
    Sync(SyncArgs),

    /// Undo this node's part, for a master being retired or a node being repurposed.
    ///
    /// Removes the manifests protokube writes (etcd's links first, so kubelet stops etcd), waits
    /// (bounded by --timeout) until no process uses the etcd volumes and unmounts them (exit 75,
    /// leaving the node as it was, while one is still in use), detaches them with --detach, takes
    /// this node's addresses out of the DNS names this cluster owns (a name left with none is
    /// deleted with its TXT), removes the managed /etc/hosts block and the state file. Never
    /// formats, never deletes a volume, never touches a name it does not own. `sync` afterwards
    /// brings the node back.
    Reset(ResetArgs),

    /// Apply the cluster's addon channels with kOps' channels tool (control-plane nodes).
    ///
    /// For each --channels URL runs `<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`
    /// with protokube's environment, as kOps' protokube did up to kOps 1.35. Every channel is
    /// tried; one that fails is named and makes the run fail (exit 1). A run that outlasts
    /// --timeout is "not ready" (exit 75). --dry-run runs nothing.
    ApplyChannels,

    /// Give this node kOps' mandatory control-plane labels through the Kubernetes API.
    ///
    /// node-role.kubernetes.io/control-plane, kops.k8s.io/kops-controller-pki and
    /// node.kubernetes.io/exclude-from-external-load-balancers, all empty, patched (strategic
    /// merge) onto --node-name only when one is missing or different. The API is reached with
    /// the kubeconfig at KUBECONFIG (default /var/lib/kops/kubeconfig, under --root). An API
    /// server that does not answer, or a node not registered yet, is "not ready" (exit 75).
    LabelNode,

    /// Print the build: version, git commit, build date, rustc, target and enabled features
    /// (`-o json` for one object).
    Version,

    /// Be a member of kOps' gossip network (`*.k8s.local` clusters) and keep the hosts block
    /// from its view, until stopped.
    ///
    /// mesh (--gossip-protocol, port 3999) and memberlist (--gossip-protocol-secondary, port
    /// 4000), whole members wire-compatible with kOps' protokube and dns-controller: mesh dials
    /// the peers its topology names, memberlist probes, suspects, declares the dead and leaves
    /// when stopped. Seeds are the cloud's control-plane instances (asked again every hour, every
    /// minute after an error or while no peer answers) and --gossip-seed; this node publishes
    /// `dns/local/NS/local` so dns-controller can publish. The A and AAAA records of the primary
    /// protocol's view (as kOps reads it: memberlist has no authentication) go into kOps' block
    /// of <root>/etc/hosts within a second of a change (in place, only when its lines change);
    /// deleted names leave it; a name outside the gossip zone `local`, a value that is not an
    /// address, or a version more than an hour ahead of this node's clock is refused with a
    /// warning. --once joins, takes the view, writes it and exits (75 when no peer answered);
    /// with --dry-run it prints the view and the block instead, `-o json` the records.
    Gossip(GossipArgs),
}

/// Flags of `gossip`.
#[derive(Clone, Debug, Default, Args)]
#[group(skip)]
pub struct GossipArgs {
    /// Join, take the view, write the hosts block and exit (timers, by hand).
    #[arg(long, env = "PROTOKUBE_ONCE")]
    pub(crate) once: bool,
}

/// Flags of `reset`.
#[derive(Clone, Debug, Default, Args)]
#[group(skip)]
pub struct ResetArgs {
    /// Also detach the etcd volumes from this instance (so another master can claim them).
    #[arg(long, env = "PROTOKUBE_DETACH")]
    pub(crate) detach: bool,
}

/// Flags of `render-manifests`.
#[derive(Clone, Debug, Default, Args)]
#[group(skip)]
pub struct RenderArgs {
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,
}

/// Flags of `publish-dns`.
#[derive(Clone, Debug, Default, Args)]
#[group(skip)]
pub struct PublishArgs {
    /// Wait until Route53 reports the change INSYNC (bounded by --timeout).
    #[arg(long, env = "PROTOKUBE_WAIT")]
    pub(crate) wait: bool,
}

/// Flags of `sync`: those of every step.
#[derive(Clone, Debug, Default, Args)]
pub struct SyncArgs {
    #[command(flatten)]
    pub(crate) render: RenderArgs,

    #[command(flatten)]
    pub(crate) dns: PublishArgs,
}

/// Legacy protokube flags for etcd; they override the spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub(crate) struct EtcdArgs {
    /// etcd image for every etcd pod [default: spec.etcdClusters[].image, else
    /// registry.k8s.io/etcd:<version>-0].
    #[arg(long, value_name = "IMAGE", env = "PROTOKUBE_ETCD_IMAGE")]
    pub(crate) etcd_image: Option<String>,

    /// etcd election timeout in milliseconds [default: spec leaderElectionTimeout].
    #[arg(long, value_name = "MS", env = "PROTOKUBE_ETCD_ELECTION_TIMEOUT")]
    pub(crate) etcd_election_timeout: Option<u32>,

    /// etcd heartbeat interval in milliseconds [default: spec heartbeatInterval].
    #[arg(long, value_name = "MS", env = "PROTOKUBE_ETCD_HEARTBEAT_INTERVAL")]
    pub(crate) etcd_heartbeat_interval: Option<u32>,

    /// CA file for etcd clients (ETCD_TRUSTED_CA_FILE).
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_TLS_CA")]
    pub(crate) tls_ca: Option<String>,

    /// Server certificate (ETCD_CERT_FILE); with --tls-key, etcd serves https.
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_TLS_CERT")]
    pub(crate) tls_cert: Option<String>,

    /// Server key (ETCD_KEY_FILE).
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_TLS_KEY")]
    pub(crate) tls_key: Option<String>,

    /// CA file for peers (ETCD_PEER_TRUSTED_CA_FILE).
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_PEER_CA")]
    pub(crate) peer_ca: Option<String>,

    /// Peer certificate (ETCD_PEER_CERT_FILE).
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_PEER_CERT")]
    pub(crate) peer_cert: Option<String>,

    /// Peer key (ETCD_PEER_KEY_FILE).
    #[arg(long, value_name = "FILE", env = "PROTOKUBE_PEER_KEY")]
    pub(crate) peer_key: Option<String>,

    /// Require client certificates (ETCD_CLIENT_CERT_AUTH, ETCD_PEER_CLIENT_CERT_AUTH); kOps
    /// writes `--tls-auth=true`.
    #[arg(
        long,
        env = "PROTOKUBE_TLS_AUTH",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "false",
        default_missing_value = "true",
        value_parser = BoolishValueParser::new(),
    )]
    pub(crate) tls_auth: bool,
}

impl EtcdArgs {
    fn options(&self) -> EtcdOptions {
        EtcdOptions {
            etcd_image: self.etcd_image.clone(),
            etcd_election_timeout: self.etcd_election_timeout,
            etcd_heartbeat_interval: self.etcd_heartbeat_interval,
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            peer_ca: self.peer_ca.clone(),
            peer_cert: self.peer_cert.clone(),
            peer_key: self.peer_key.clone(),
            tls_auth: self.tls_auth,
        }
    }
}

impl Command {
    /// The command's name as typed, for the report.
    pub fn name(&self) -> &'static str {
        match self {
            Command::DiscoverVolumes => "discover-volumes",
            Command::Mount => "mount",
            Command::RenderManifests(_) => "render-manifests",
            Command::PublishDns(_) => "publish-dns",
            Command::Sync(_) => "sync",
            Command::Reset(_) => "reset",
            Command::ApplyChannels => "apply-channels",
            Command::LabelNode => "label-node",
            Command::Version => "version",
            Command::Gossip(_) => "gossip",
        }
    }
}

impl Cli {
    /// Whether this is the old daemon's invocation: no subcommand.
    pub fn is_legacy(&self) -> bool {
        self.command.is_none()
    }

    /// The command to run: the subcommand, or `sync` for the old daemon's invocation.
    pub fn to_run(&self) -> Command {
        self.command
            .clone()
            .unwrap_or_else(|| Command::Sync(SyncArgs::default()))
    }

    /// Whether the command is `version`.
    pub fn is_version(&self) -> bool {
        matches!(self.command, Some(Command::Version))
    }

    /// `--quiet`.
    pub fn quiet(&self) -> bool {
        self.global.quiet
    }

    /// `--dry-run`.
    pub fn dry_run(&self) -> bool {
        self.global.dry_run
    }

    /// The report format (`-o`).
    pub fn output(&self) -> OutputFormat {
        self.global.output.into()
    }

    /// The stderr log format (`--log-format`).
    pub fn log_format(&self) -> LogFormat {
        self.global.log_format.into()
    }

    /// Parses the process's arguments (clap's errors and help are the caller's to handle).
    pub fn parse_args() -> Result<Self, clap::Error> {
        Self::parse_from(std::env::args_os())
    }

    /// Parses `args` (the program's name first), noting which of the unit's version flags the
    /// command line itself gave (`UnitFlags`).
    pub fn parse_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::parser::ValueSource;
        use clap::FromArgMatches as _;
        let matches = Self::command().try_get_matches_from(args)?;
        let mut cli = Self::from_arg_matches(&matches)?;
        let on_command_line = |id: &str| {
            std::iter::once(&matches)
                .chain(matches.subcommand().map(|(_, sub)| sub))
                .any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
        };
        cli.unit = UnitFlags {
            containerized: cli
                .legacy
                .containerized
                .filter(|_| on_command_line("containerized")),
            cluster_id: on_command_line("cluster_id"),
            manage_etcd: on_command_line("manage_etcd"),
            gossip_flags: [
                "gossip_protocol",
                "gossip_listen",
                "gossip_secret",
                "gossip_protocol_secondary",
                "gossip_listen_secondary",
                "gossip_secret_secondary",
                "gossip_seed",
                "gossip_seed_secondary",
            ]
            .into_iter()
            .any(on_command_line),
        };
        Ok(cli)
    }

    /// The verbosity: `-v`s, or the old daemon's `--v=N` (klog's 4 is debug, 6 trace).
    pub fn verbosity(&self) -> u8 {
        let klog = match self.legacy.klog_verbosity {
            Some(n) if n >= 6 => 2,
            Some(n) if n >= 4 => 1,
            _ => 0,
        };
        self.global.verbose.max(klog)
    }

    /// The flags as plain values for [`crate::settings::Settings::resolve`]. The old daemon's
    /// flags are checked here: its etcd flags before a subcommand are a usage error.
    pub(crate) fn flags(&self) -> Result<Flags, UsageError> {
        let (etcd, wait) = self.etcd_and_wait()?;
        let containerized = self.legacy.containerized == Some(true);
        let mut flags = self.global.clone();
        // kOps' container mounts the host at /rootfs; a --root given wins.
        flags.root = flags
            .root
            .or_else(|| containerized.then(|| PathBuf::from(CONTAINER_ROOT)));
        if flags.dns.is_none() && self.legacy.gossip == Some(true) {
            flags.dns = Some(DnsChoice::of(DnsKind::Hosts));
        }
        flags.provider = Some(self.cloud.provider);
        flags.endpoints.clone_from(&self.endpoints.0);
        flags.etcd = etcd;
        flags.wait = wait;
        flags.detach = matches!(&self.command, Some(Command::Reset(args)) if args.detach);
        flags.renders = matches!(
            self.command,
            None | Some(Command::RenderManifests(_) | Command::Sync(_))
        );
        flags.legacy = self.is_legacy();
        flags.kubeconfig = std::env::var("KUBECONFIG")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_KUBECONFIG.to_owned());
        flags.talks_to_kubernetes = matches!(
            self.command,
            Some(Command::LabelNode | Command::ApplyChannels)
        );
        flags.kops = KopsUnit::from_flags(
            self.is_legacy(),
            self.unit.containerized,
            self.unit.cluster_id,
        );
        flags.containerized = containerized;
        flags.initialize_rbac = self.legacy.initialize_rbac == Some(true);
        flags.manage_etcd = self.legacy.manage_etcd;
        flags.remove_dns_names = self
            .legacy
            .remove_dns_names
            .iter()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect();
        if flags.gossip.gossip_conn_limit.is_none() {
            flags.gossip.gossip_conn_limit = kops_conn_limit()?;
        }
        flags.gossip_member = self.is_legacy()
            && (self.legacy.gossip == Some(true)
                || self.global.dns.as_ref().is_some_and(DnsChoice::is_gossip)
                || self.unit.gossip_flags
                || self
                    .global
                    .cluster_id
                    .as_deref()
                    .is_some_and(|id| id.trim_end_matches('.').ends_with(".k8s.local")));
        flags.kops_123_unit =
            self.is_legacy() && self.unit.containerized == Some(false) && !self.unit.manage_etcd;
        Ok(flags)
    }

    /// The etcd flags and `--wait` of the command given: the old daemon's etcd flags before a
    /// subcommand are a usage error.
    fn etcd_and_wait(&self) -> Result<(EtcdOptions, bool), UsageError> {
        let legacy_etcd = self.legacy.etcd.options();
        Ok(match &self.command {
            _ if self.command.is_some() && legacy_etcd != EtcdOptions::default() => {
                return Err(UsageError(
                    "the etcd flags (--etcd-image, --tls-*, --peer-*, …) go after the \
                     subcommand (`protokube sync --etcd-image …`), or without one"
                        .to_owned(),
                ));
            }
            None => (legacy_etcd, false),
            Some(Command::RenderManifests(args)) => (args.etcd.options(), false),
            Some(Command::PublishDns(args)) => (EtcdOptions::default(), args.wait),
            Some(Command::Sync(args)) => (args.render.etcd.options(), args.dns.wait),
            Some(
                Command::DiscoverVolumes
                | Command::Mount
                | Command::Reset(_)
                | Command::ApplyChannels
                | Command::LabelNode
                | Command::Version
                | Command::Gossip(_),
            ) => (EtcdOptions::default(), false),
        })
    }
}

/// kOps' `GOSSIP_DNS_CONN_LIMIT`, when set: a number, or a usage error naming it.
fn kops_conn_limit() -> Result<Option<usize>, UsageError> {
    match std::env::var("GOSSIP_DNS_CONN_LIMIT") {
        Ok(text) if !text.trim().is_empty() => text.trim().parse().map(Some).map_err(|_| {
            UsageError(format!(
                "GOSSIP_DNS_CONN_LIMIT `{}` is not a number of connections: give a whole number \
                 (0 for the default)",
                text.escape_debug()
            ))
        }),
        _ => Ok(None),
    }
}

/// A clap usage error as one line: the message, clap's tips, and where to find help.
pub fn usage_error_line(err: &clap::Error) -> String {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand
    ) {
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        return format!(
            "protokube: error: a subcommand is required ({}); see `protokube --help`",
            names.join(", ")
        );
    }
    let rendered = err.render().to_string();
    let mut parts: Vec<&str> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() {
            continue;
        }
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    format!(
        "protokube: error: {}; see `protokube --help`",
        parts.join("; ")
    )
}

/// The output format and the subcommand named in raw arguments, for reporting a usage error
/// in the format asked for when clap could not parse the whole command line.
pub fn scan_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> (OutputFormat, String) {
    use clap::ValueEnum as _;
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let mut output = std::env::var("PROTOKUBE_OUTPUT").ok();
    let mut command = String::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "-o" || arg == "--output" {
            output = args.get(i + 1).cloned();
            i += 1;
        } else if let Some(value) = arg
            .strip_prefix("--output=")
            .or_else(|| arg.strip_prefix("-o").filter(|v| !v.is_empty()))
        {
            output = Some(value.trim_start_matches('=').to_owned());
        } else if command.is_empty() && names.contains(arg) {
            command = arg.clone();
        }
        i += 1;
    }
    let format = output
        .and_then(|o| OutputArg::from_str(&o, true).ok())
        .map(OutputFormat::from)
        .unwrap_or_default();
    (format, command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_endpoint_flag_says_the_default_its_provider_holds() {
        let command = Cli::command();
        for registered in crate::providers::all() {
            for endpoint in registered.provider.endpoints {
                let flag = command
                    .get_arguments()
                    .find(|arg| arg.get_long() == endpoint.flag.strip_prefix("--"))
                    .unwrap();
                let help = flag.get_help().unwrap().to_string();
                assert!(
                    help.contains(&format!("[default: `{}`]", endpoint.default)),
                    "{help}"
                );
            }
        }
    }

    #[test]
    fn every_flag_reads_its_protokube_variable() {
        let command = Cli::command();
        let subcommand_args = command
            .get_subcommands()
            .flat_map(clap::Command::get_arguments);
        for arg in command.get_arguments().chain(subcommand_args) {
            if arg.is_positional() || ["help", "version"].contains(&arg.get_id().as_str()) {
                continue;
            }
            let long = arg.get_long().expect("every flag is a long flag");
            let expected = format!("PROTOKUBE_{}", long.to_uppercase().replace('-', "_"));
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert_eq!(env.as_deref(), Some(expected.as_str()), "--{long}");
        }
    }

    #[test]
    fn master_accepts_kops_style_values() {
        for (args, expected) in [
            (vec!["protokube", "discover-volumes"], false),
            (vec!["protokube", "--master", "discover-volumes"], true),
            (vec!["protokube", "--master=true", "discover-volumes"], true),
            (
                vec!["protokube", "discover-volumes", "--master=false"],
                false,
            ),
        ] {
            let cli = Cli::try_parse_from(&args).unwrap();
            assert_eq!(cli.global.master, expected, "{args:?}");
        }
    }

    #[test]
    fn every_boolean_flag_kops_writes_takes_true_or_false() {
        for value in ["true", "false"] {
            let expected = value == "true";
            let args: Vec<String> = [
                "--tls-auth",
                "--master",
                "--manage-etcd",
                "--containerized",
                "--initialize-rbac",
                "--bootstrap-master-node-labels",
                "--gossip",
                "--apply-taints",
            ]
            .iter()
            .map(|flag| format!("{flag}={value}"))
            .collect();
            let cli = Cli::try_parse_from(std::iter::once("protokube".to_owned()).chain(args))
                .unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!(cli.legacy.etcd.tls_auth, expected);
            assert_eq!(cli.global.master, expected);
            assert_eq!(cli.legacy.manage_etcd, Some(expected));
            assert_eq!(cli.legacy.containerized, Some(expected));
            assert_eq!(cli.legacy.initialize_rbac, Some(expected));
            assert_eq!(cli.global.bootstrap_master_node_labels, expected);
            assert_eq!(cli.legacy.gossip, Some(expected));
            assert_eq!(cli.legacy.ignored.apply_taints, Some(expected));
            let flags = cli.flags().unwrap();
            assert_eq!(flags.initialize_rbac, expected);
            assert_eq!(flags.root, expected.then(|| PathBuf::from("/rootfs")));
        }
        // A --root given wins over kOps' container root.
        let cli =
            Cli::try_parse_from(["protokube", "--containerized=true", "--root=/host"]).unwrap();
        assert_eq!(cli.flags().unwrap().root, Some(PathBuf::from("/host")));
    }

    #[test]
    fn the_old_daemons_unit_runs_the_member_on_a_gossip_clusters_command_line_only() {
        let member = |args: &[&str]| {
            let mut all = vec!["protokube", "--cloud=aws"];
            all.extend(args);
            Cli::parse_from(all).unwrap().flags().unwrap().gossip_member
        };
        assert!(member(&["--gossip=true"]));
        assert!(member(&["--dns=gossip"]));
        assert!(member(&["--gossip-listen=0.0.0.0:3999"]));
        assert!(member(&["--cluster-id=c.k8s.local"]));
        assert!(
            !member(&["--dns=hosts"]),
            "hosts alone is no gossip cluster"
        );
        assert!(!member(&["--cluster-id=c.example.com"]));
        assert!(
            !member(&["gossip"]),
            "the subcommand runs the member itself"
        );
    }

    #[test]
    fn a_timeout_under_a_second_is_a_usage_error() {
        let err = Cli::try_parse_from(["protokube", "--timeout", "0", "sync"]).unwrap_err();
        assert!(usage_error_line(&err).contains("--timeout"), "{err}");
    }

    #[test]
    fn usage_errors_are_one_line_with_the_tip() {
        let err =
            Cli::try_parse_from(["protokube", "--clusterid", "x", "discover-volumes"]).unwrap_err();
        let line = usage_error_line(&err);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("protokube: error: unexpected argument '--clusterid'"),
            "{line}"
        );
        assert!(line.contains("--cluster-id"), "{line}");
    }

    #[test]
    fn output_and_command_are_found_in_unparsable_arguments() {
        let scan = |args: &[&str]| {
            let (format, command) = scan_args(args.iter().map(std::ffi::OsString::from));
            (format, command)
        };
        assert_eq!(
            scan(&["sync", "-o", "json", "--bogus"]),
            (OutputFormat::Json, "sync".to_owned())
        );
        assert_eq!(
            scan(&["--output=yaml", "mount"]),
            (OutputFormat::Yaml, "mount".to_owned())
        );
        assert_eq!(scan(&["-ojson"]).0, OutputFormat::Json);
        assert_eq!(scan(&["-o", "xml"]).0, OutputFormat::Text);
    }
}
