//! Every flag of the command line, declared once (name, help, `PROTOKUBE_*` variable,
//! default, parser), and the words a flag may take. `cli.rs` parses them with the subcommands;
//! the settings validate them.
// The doc comments here are the command line's help text (clap shows them as written, with
// `<root>` and `[default: …]`), not rustdoc: rustdoc's HTML and link checks do not apply.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::Args;

use crate::cloud::provider::Provider;
use crate::logging::LogFormat;
use crate::plan::blank::BlankCheck;
use crate::plan::kops::KopsUnit;
use crate::plan::manifests::etcd::EtcdOptions;
use crate::report::OutputFormat;

/// Every flag, declared once: its name, help text, `PROTOKUBE_*` variable, default and parser
/// (clap reads this struct; `Settings::resolve` validates it). The global
/// flags may come before or after the subcommand; the values after them (`#[arg(skip)]`) are
/// what the command line says in other ways (the subcommand, the old daemon's flags), filled
/// in by `Cli::flags`.
#[derive(Clone, Debug, Default, Args)]
#[group(skip)]
pub(crate) struct Flags {
    /// A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes
    /// to its state store.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "PROTOKUBE_CLUSTER_SPEC"
    )]
    pub(crate) cluster_spec: Option<PathBuf>,

    /// Cluster name [default: metadata.name of the spec, else the instance's KubernetesCluster tag].
    #[arg(long, global = true, value_name = "NAME", env = "PROTOKUBE_CLUSTER_ID")]
    pub(crate) cluster_id: Option<String>,

    /// This node is a control-plane node (volumes, etcd, control-plane manifests, API records).
    #[arg(
        long,
        global = true,
        env = "PROTOKUBE_MASTER",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "false",
        default_missing_value = "true",
        value_parser = BoolishValueParser::new(),
    )]
    pub(crate) master: bool,

    /// Directory the host's `/` is found at; every host path is taken under it [default: `/`,
    /// `/rootfs` with kOps' `--containerized=true`].
    #[arg(long, global = true, value_name = "DIR", env = "PROTOKUBE_ROOT")]
    pub(crate) root: Option<PathBuf>,

    /// This instance's id (on GCE its name) [default: from the instance metadata service].
    #[arg(long, global = true, value_name = "ID", env = "PROTOKUBE_INSTANCE_ID")]
    pub(crate) instance_id: Option<String>,

    /// This instance's availability zone [default: from the instance metadata service].
    #[arg(
        long,
        global = true,
        value_name = "ZONE",
        env = "PROTOKUBE_AVAILABILITY_ZONE"
    )]
    pub(crate) availability_zone: Option<String>,

    /// The instance's region [default: from the instance metadata service].
    #[arg(long, global = true, value_name = "REGION", env = "PROTOKUBE_REGION")]
    pub(crate) region: Option<String>,

    /// This instance's private IP address, IPv4 or IPv6, taken as its own beside those the
    /// cloud lists for it [default: those the cloud lists].
    #[arg(long, global = true, value_name = "IP", env = "PROTOKUBE_INTERNAL_IP")]
    pub(crate) internal_ip: Option<IpAddr>,

    /// This instance's public IP address, IPv4 or IPv6, taken as its own beside those the
    /// cloud lists for it [default: those the cloud lists].
    #[arg(long, global = true, value_name = "IP", env = "PROTOKUBE_EXTERNAL_IP")]
    pub(crate) external_ip: Option<IpAddr>,

    /// Where DNS records go: `zones` (the cloud's DNS service: Route53 on AWS, Cloud DNS on GCE;
    /// also called by its name, `route53`, `clouddns`, or kOps', `aws-route53`,
    /// `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps' `gossip`) or `none`
    /// [default: hosts for `.k8s.local` clusters, else zones].
    #[arg(long, global = true, value_name = "WHERE", value_parser = parse_dns, env = "PROTOKUBE_DNS")]
    pub(crate) dns: Option<DnsChoice>,

    /// DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default:
    /// spec.dnsZone, else the longest-suffix zone].
    #[arg(
        long = "zone",
        global = true,
        value_name = "RULE",
        env = "PROTOKUBE_ZONE",
        value_delimiter = ','
    )]
    pub(crate) zones: Vec<String>,

    /// Suffix of internal names such as etcd peers [default: `.internal.<cluster>`].
    #[arg(
        long,
        global = true,
        value_name = "SUFFIX",
        env = "PROTOKUBE_DNS_INTERNAL_SUFFIX"
    )]
    pub(crate) dns_internal_suffix: Option<String>,

    /// Directory of Tera templates that override the built-in ones (same file names).
    #[arg(long, global = true, value_name = "DIR", env = "PROTOKUBE_TEMPLATES")]
    pub(crate) templates: Option<PathBuf>,

    /// Compute and report every change, make none.
    #[arg(long, global = true, env = "PROTOKUBE_DRY_RUN")]
    pub(crate) dry_run: bool,

    /// Report format on stdout.
    #[arg(
        short = 'o',
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "PROTOKUBE_OUTPUT"
    )]
    pub(crate) output: OutputArg,

    /// Exit 2 when something was changed (or would be, with --dry-run).
    #[arg(long, global = true, env = "PROTOKUBE_DETAILED_EXITCODE")]
    pub(crate) detailed_exitcode: bool,

    /// One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud
    /// call, Kubernetes API request, credential plugin and child tool ends by it, then the run
    /// is "not ready" (exit 75).
    #[arg(long, global = true, value_name = "DURATION", default_value = "5m", value_parser = parse_timeout, env = "PROTOKUBE_TIMEOUT")]
    pub(crate) timeout: Duration,

    /// How long a converged node trusts what its last full check of the cloud found: within it,
    /// `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a
    /// gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change,
    /// the cloud is checked in full. `0` checks fully every run.
    #[arg(long, global = true, value_name = "DURATION", default_value = "15m", value_parser = parse_duration, env = "PROTOKUBE_VERIFY_INTERVAL")]
    pub(crate) verify_interval: Duration,

    /// stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal)
    /// or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "PROTOKUBE_LOG_FORMAT"
    )]
    pub(crate) log_format: LogFormatArg,

    /// After every run (failed runs and dry runs too), write Prometheus text-format metrics to
    /// FILE, atomically, for node-exporter's textfile collector.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "PROTOKUBE_METRICS_FILE"
    )]
    pub(crate) metrics_file: Option<PathBuf>,

    /// More log output on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", env = "PROTOKUBE_VERBOSE")]
    pub(crate) verbose: u8,

    /// Only errors on stderr.
    #[arg(short, long, global = true, env = "PROTOKUBE_QUIET")]
    pub(crate) quiet: bool,

    /// How much of a device is read to prove it blank before a format: `sampled` (the first
    /// 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "sampled",
        env = "PROTOKUBE_BLANK_CHECK"
    )]
    pub(crate) blank_check: BlankCheckArg,

    /// No progress bars, even on a terminal.
    #[arg(long, global = true, env = "PROTOKUBE_NO_PROGRESS")]
    pub(crate) no_progress: bool,

    /// Addon channels to apply on a control-plane node with kOps' `channels` tool
    /// (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of
    /// `sync` when given.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        value_delimiter = ',',
        env = "PROTOKUBE_CHANNELS"
    )]
    pub(crate) channels: Vec<String>,

    /// Give this control-plane node kOps' mandatory labels through the Kubernetes API
    /// (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with
    /// --node-name.
    #[arg(
        long,
        global = true,
        env = "PROTOKUBE_BOOTSTRAP_MASTER_NODE_LABELS",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "false",
        default_missing_value = "true",
        value_parser = BoolishValueParser::new(),
    )]
    pub(crate) bootstrap_master_node_labels: bool,

    /// This node's name in Kubernetes (its Node object), for the labels.
    #[arg(long, global = true, value_name = "NAME", env = "PROTOKUBE_NODE_NAME")]
    pub(crate) node_name: Option<String>,

    /// Take over DNS names of this cluster's own set that exist with only A/AAAA records and no
    /// ownership TXT (left by kOps' dns-controller or the old protokube): the TXT is written
    /// beside them. Without it such names are left alone with a warning.
    #[arg(long, global = true, env = "PROTOKUBE_ADOPT")]
    pub(crate) adopt: bool,

    #[command(flatten)]
    pub(crate) gossip: GossipFlags,

    /// `--cloud`: the provider (the command line parses it from the registry).
    #[arg(skip)]
    pub(crate) provider: Option<&'static Provider>,
    /// The API root flags given (a provider's endpoint flags): flag → value.
    #[arg(skip)]
    pub(crate) endpoints: BTreeMap<String, String>,

    /// The etcd flags of the command given (the old daemon's, or the subcommand's).
    #[arg(skip)]
    pub(crate) etcd: EtcdOptions,
    /// `publish-dns --wait`: wait for the DNS service to have the changes in effect.
    #[arg(skip)]
    pub(crate) wait: bool,
    /// `reset --detach`.
    #[arg(skip)]
    pub(crate) detach: bool,
    /// The command renders manifests (`render-manifests`, `sync`): on a master, every etcd
    /// cluster of the spec must say which etcd to run.
    #[arg(skip)]
    pub(crate) renders: bool,
    /// The old daemon's invocation (no subcommand): without a spec, only volumes, etcd pods
    /// and DNS, as the old protokube did.
    #[arg(skip)]
    pub(crate) legacy: bool,
    /// `KUBECONFIG` (a host path).
    #[arg(skip)]
    pub(crate) kubeconfig: String,
    /// The command talks to the Kubernetes API (`label-node`, `apply-channels`).
    #[arg(skip)]
    pub(crate) talks_to_kubernetes: bool,
    /// The kOps version the old daemon's unit flags place this run in.
    #[arg(skip)]
    pub(crate) kops: KopsUnit,
    /// `--containerized=true`: protokube runs in kOps' container, the host at `--root`.
    #[arg(skip)]
    pub(crate) containerized: bool,
    /// `--initialize-rbac=true`.
    #[arg(skip)]
    pub(crate) initialize_rbac: bool,
    /// `--manage-etcd`, when given.
    #[arg(skip)]
    pub(crate) manage_etcd: Option<bool>,
    /// A unit line of kOps 1.23 or later: the old daemon's invocation with
    /// `--containerized=false` and no `--manage-etcd` on its command line.
    #[arg(skip)]
    pub(crate) kops_123_unit: bool,
    /// `--remove-dns-names` (kOps ≤ 1.22 beside etcd-manager), as given.
    #[arg(skip)]
    pub(crate) remove_dns_names: Vec<String>,
    /// The old daemon's unit is a gossip cluster's (`--gossip=true`, `--dns=gossip`, a
    /// `--gossip-*` flag, or a `.k8s.local` cluster id): the member runs beside its runs.
    #[arg(skip)]
    pub(crate) gossip_member: bool,
}

/// kOps' gossip flags (`protokube gossip`, and the old daemon's unit on a gossip cluster).
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Gossip (kOps' gossip DNS)")]
#[allow(
    clippy::struct_field_names,
    reason = "each field is its flag, named as kOps names it (`--gossip-…`)"
)]
pub(crate) struct GossipFlags {
    /// The primary gossip protocol: `mesh` or `memberlist` (kOps' default: mesh).
    #[arg(
        long,
        global = true,
        value_name = "PROTOCOL",
        env = "PROTOKUBE_GOSSIP_PROTOCOL"
    )]
    pub(crate) gossip_protocol: Option<String>,

    /// Where the primary protocol listens [default: 0.0.0.0:3999].
    #[arg(
        long,
        global = true,
        value_name = "ADDRESS",
        env = "PROTOKUBE_GOSSIP_LISTEN"
    )]
    pub(crate) gossip_listen: Option<String>,

    /// The primary protocol's secret (mesh encrypts with it; empty: no secret, still encrypted).
    #[arg(
        long,
        global = true,
        value_name = "SECRET",
        env = "PROTOKUBE_GOSSIP_SECRET",
        hide_env_values = true
    )]
    pub(crate) gossip_secret: Option<String>,

    /// The secondary gossip protocol [default: memberlist]; an empty value for none.
    #[arg(
        long,
        global = true,
        value_name = "PROTOCOL",
        env = "PROTOKUBE_GOSSIP_PROTOCOL_SECONDARY"
    )]
    pub(crate) gossip_protocol_secondary: Option<String>,

    /// Where the secondary protocol listens [default: 0.0.0.0:4000].
    #[arg(
        long,
        global = true,
        value_name = "ADDRESS",
        env = "PROTOKUBE_GOSSIP_LISTEN_SECONDARY"
    )]
    pub(crate) gossip_listen_secondary: Option<String>,

    /// The secondary protocol's secret (not the primary's by default, as in kOps).
    #[arg(
        long,
        global = true,
        value_name = "SECRET",
        env = "PROTOKUBE_GOSSIP_SECRET_SECONDARY",
        hide_env_values = true
    )]
    pub(crate) gossip_secret_secondary: Option<String>,

    /// Seeds of the primary protocol beside the cloud's control-plane instances: IP (dialled on
    /// the protocol's port) or IP:PORT, comma-separated.
    #[arg(
        long,
        global = true,
        value_name = "ADDRESS",
        value_delimiter = ',',
        env = "PROTOKUBE_GOSSIP_SEED"
    )]
    pub(crate) gossip_seed: Vec<String>,

    /// Seeds of the secondary protocol beside the cloud's, as --gossip-seed.
    #[arg(
        long,
        global = true,
        value_name = "ADDRESS",
        value_delimiter = ',',
        env = "PROTOKUBE_GOSSIP_SEED_SECONDARY"
    )]
    pub(crate) gossip_seed_secondary: Vec<String>,

    /// The most connections per protocol [default: kOps' variable GOSSIP_DNS_CONN_LIMIT; 0 or
    /// unset: 1024].
    #[arg(
        long,
        global = true,
        value_name = "N",
        env = "PROTOKUBE_GOSSIP_CONN_LIMIT"
    )]
    pub(crate) gossip_conn_limit: Option<usize>,
}

/// The kind of place names go (`--dns zones|hosts|none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DnsKind {
    /// The zones of the cloud's own DNS service (its provider says which).
    Zones,
    /// The guarded block in /etc/hosts (gossip-style `.k8s.local` clusters).
    Hosts,
    /// Publish nothing.
    None,
}

/// `--dns` as given: the kind of place, and for the zones the name the service was called by
/// (ours or kOps'), which the cloud's provider must answer to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DnsChoice {
    pub(crate) kind: DnsKind,
    pub(crate) called: Option<String>,
    /// Called `gossip` (kOps' word up to 1.22: the unit of a gossip cluster).
    pub(crate) gossip: bool,
}

impl DnsChoice {
    /// `--dns` of this kind, named by its kind.
    pub(crate) fn of(kind: DnsKind) -> Self {
        Self {
            kind,
            called: None,
            gossip: false,
        }
    }

    pub(crate) fn is_gossip(&self) -> bool {
        self.gossip
    }
}

/// The values of the flags that take one of a few words, as clap parses and documents them;
/// each maps onto the domain's own type (clap stays in this file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputArg {
    #[default]
    Text,
    Json,
    Yaml,
}

impl From<OutputArg> for OutputFormat {
    fn from(arg: OutputArg) -> Self {
        match arg {
            OutputArg::Text => Self::Text,
            OutputArg::Json => Self::Json,
            OutputArg::Yaml => Self::Yaml,
        }
    }
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormatArg {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

impl From<LogFormatArg> for LogFormat {
    fn from(arg: LogFormatArg) -> Self {
        match arg {
            LogFormatArg::Text => Self::Text,
            LogFormatArg::Json => Self::Json,
        }
    }
}

/// `--blank-check`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BlankCheckArg {
    /// The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all
    /// (a device no larger is read whole).
    #[default]
    Sampled,
    /// Every byte of the device.
    Full,
}

impl From<BlankCheckArg> for BlankCheck {
    fn from(arg: BlankCheckArg) -> Self {
        match arg {
            BlankCheckArg::Sampled => Self::Sampled,
            BlankCheckArg::Full => Self::Full,
        }
    }
}

/// `--dns`: `zones` (the cloud's own DNS service), `hosts` (kOps' `gossip`), `none`, or the
/// name of a cloud's zone service (ours, `route53`, and kOps', `aws-route53`), which the
/// cloud's provider must answer to (checked with the provider, by the settings).
fn parse_dns(value: &str) -> Result<DnsChoice, String> {
    match value {
        "zones" => Ok(DnsChoice::of(DnsKind::Zones)),
        "hosts" => Ok(DnsChoice::of(DnsKind::Hosts)),
        "gossip" => Ok(DnsChoice {
            gossip: true,
            ..DnsChoice::of(DnsKind::Hosts)
        }),
        "none" => Ok(DnsChoice::of(DnsKind::None)),
        called
            if !called.is_empty()
                && called
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            Ok(DnsChoice {
                kind: DnsKind::Zones,
                called: Some(called.to_owned()),
                gossip: false,
            })
        }
        other => Err(format!(
            "`{}` is not where names go: `zones` (the cloud's DNS service, or its name), \
             `hosts` or `none`",
            other.escape_debug()
        )),
    }
}

/// `--timeout`: a duration of at least [`crate::wait::MIN_TIMEOUT`].
fn parse_timeout(value: &str) -> Result<Duration, String> {
    let timeout = parse_duration(value)?;
    if timeout < crate::wait::MIN_TIMEOUT {
        return Err(format!(
            "`{value}` is under one second: a run could not even ask the cloud who it is and would never converge; give at least `1s` (e.g. `90s`, `5m`)"
        ));
    }
    Ok(timeout)
}

/// Parses a Go-style or humantime duration/// Parses a Go-style or humantime duration: `90s`, `5m`, `1h30m`, `1m0s`.
fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value)
        .map_err(|err| format!("`{value}` is not a duration like `90s` or `5m` ({err})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_under_a_second_is_refused() {
        for short in ["0", "0s", "1ms", "999ms"] {
            let err = parse_timeout(short).unwrap_err();
            assert!(err.contains("under one second"), "{short}: {err}");
        }
        assert_eq!(parse_timeout("1s"), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn durations_in_go_and_human_form() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
    }
}
