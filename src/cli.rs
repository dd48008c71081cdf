//! The command line: global flags (each with its `PROTOKUBE_*` variable) and the subcommands.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::cmd;
use crate::identity::IdentityOverrides;
use crate::report::OutputFormat;

/// Bring a Kubernetes control plane up on cloud machines before the Kubernetes API exists.
///
/// protokube finds the cluster's etcd volumes by tag, claims, attaches and mounts them, renders
/// static-pod manifests and publishes the DNS names etcd peers, nodes and users need. Every command
/// is one-shot and idempotent: a second run on a converged node changes nothing and says so.
///
/// Exit codes: 0 done, 1 failed, 2 changed (with --detailed-exitcode), 64 usage error,
/// 75 not ready yet (retry later).
#[derive(Debug, Parser)]
#[command(name = "protokube", version, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    DiscoverVolumes(cmd::discover_volumes::Args),
    Mount(cmd::mount::Args),
    RenderManifests(cmd::render_manifests::Args),
    PublishDns(cmd::publish_dns::Args),
    Sync(cmd::sync::Args),
}

impl Command {
    /// The command's name as typed, for the report.
    pub fn name(&self) -> &'static str {
        match self {
            Command::DiscoverVolumes(_) => "discover-volumes",
            Command::Mount(_) => "mount",
            Command::RenderManifests(_) => "render-manifests",
            Command::PublishDns(_) => "publish-dns",
            Command::Sync(_) => "sync",
        }
    }
}

/// Where DNS records go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DnsProvider {
    /// Amazon Route53 hosted zones.
    Route53,
    /// The guarded block in /etc/hosts (gossip-style `.k8s.local` clusters).
    Hosts,
    /// Publish nothing.
    None,
}

/// Flags every command takes; they may come before or after the subcommand.
#[derive(Clone, Debug, Args)]
pub struct GlobalArgs {
    /// A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes
    /// to its state store.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "PROTOKUBE_CLUSTER_SPEC"
    )]
    pub cluster_spec: Option<PathBuf>,

    /// Cluster name [default: metadata.name of the spec, else the instance's KubernetesCluster tag].
    #[arg(long, global = true, value_name = "NAME", env = "PROTOKUBE_CLUSTER_ID")]
    pub cluster_id: Option<String>,

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
    pub master: bool,

    /// Directory the host's `/` is found at; every host path is taken under it.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        default_value = "/",
        env = "PROTOKUBE_ROOT"
    )]
    pub root: PathBuf,

    /// This instance's id [default: from the EC2 instance metadata service].
    #[arg(long, global = true, value_name = "ID", env = "PROTOKUBE_INSTANCE_ID")]
    pub instance_id: Option<String>,

    /// This instance's availability zone [default: from the instance metadata service].
    #[arg(
        long,
        global = true,
        value_name = "ZONE",
        env = "PROTOKUBE_AVAILABILITY_ZONE"
    )]
    pub availability_zone: Option<String>,

    /// AWS region [default: from the instance metadata service].
    #[arg(long, global = true, value_name = "REGION", env = "PROTOKUBE_REGION")]
    pub region: Option<String>,

    /// This instance's private IPv4 address [default: from the instance metadata service].
    #[arg(long, global = true, value_name = "IP", env = "PROTOKUBE_INTERNAL_IP")]
    pub internal_ip: Option<Ipv4Addr>,

    /// This instance's public IPv4 address [default: from the instance metadata service].
    #[arg(long, global = true, value_name = "IP", env = "PROTOKUBE_EXTERNAL_IP")]
    pub external_ip: Option<Ipv4Addr>,

    /// Where DNS records go [default: hosts for `.k8s.local` clusters, else route53].
    #[arg(long, global = true, value_enum, env = "PROTOKUBE_DNS")]
    pub dns: Option<DnsProvider>,

    /// Route53 zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID`
    /// [default: spec.dnsZone, else the longest-suffix hosted zone].
    #[arg(
        long = "zone",
        global = true,
        value_name = "RULE",
        env = "PROTOKUBE_ZONE",
        value_delimiter = ','
    )]
    pub zones: Vec<String>,

    /// Suffix of internal names such as etcd peers [default: `.internal.<cluster>`].
    #[arg(
        long,
        global = true,
        value_name = "SUFFIX",
        env = "PROTOKUBE_DNS_INTERNAL_SUFFIX"
    )]
    pub dns_internal_suffix: Option<String>,

    /// Directory of Tera templates that override the built-in ones (same file names).
    #[arg(long, global = true, value_name = "DIR", env = "PROTOKUBE_TEMPLATES")]
    pub templates: Option<PathBuf>,

    /// Compute and report every change, make none.
    #[arg(long, global = true, env = "PROTOKUBE_DRY_RUN")]
    pub dry_run: bool,

    /// Report format on stdout.
    #[arg(
        short = 'o',
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "PROTOKUBE_OUTPUT"
    )]
    pub output: OutputFormat,

    /// Exit 2 when something was changed (or would be, with --dry-run).
    #[arg(long, global = true, env = "PROTOKUBE_DETAILED_EXITCODE")]
    pub detailed_exitcode: bool,

    /// Upper bound on every wait, e.g. `90s`, `5m`.
    #[arg(long, global = true, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, env = "PROTOKUBE_TIMEOUT")]
    pub timeout: Duration,

    /// More log output on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", env = "PROTOKUBE_VERBOSE")]
    pub verbose: u8,

    /// Only errors on stderr.
    #[arg(short, long, global = true, env = "PROTOKUBE_QUIET")]
    pub quiet: bool,

    /// No progress bars, even on a terminal.
    #[arg(long, global = true, env = "PROTOKUBE_NO_PROGRESS")]
    pub no_progress: bool,
}

impl GlobalArgs {
    /// The identity values given as flags.
    pub fn identity_overrides(&self) -> IdentityOverrides {
        IdentityOverrides {
            instance_id: self.instance_id.clone(),
            availability_zone: self.availability_zone.clone(),
            region: self.region.clone(),
            internal_ip: self.internal_ip,
            external_ip: self.external_ip,
        }
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

/// Parses a Go-style or humantime duration: `90s`, `5m`, `1h30m`, `1m0s`.
fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value)
        .map_err(|err| format!("`{value}` is not a duration like `90s` or `5m` ({err})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_reads_its_protokube_variable() {
        let command = Cli::command();
        let subcommand_args = command.get_subcommands().flat_map(|c| c.get_arguments());
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
    fn durations_in_go_and_human_form() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
    }
}
