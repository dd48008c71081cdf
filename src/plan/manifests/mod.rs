//! Static-pod manifests: flags from componentconfig (`flags`), the etcd member pod (`etcd`), the
//! template engine and Pod validation (`templates`), and here which manifests a node gets, their
//! template contexts, and the file changes that put them in place. Pure.

pub(crate) mod etcd;
pub(crate) mod flags;
pub(crate) mod nodeup;
pub(crate) mod templates;
pub(crate) mod upgrade;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use yaml_serde::Mapping;

use crate::paths::HostRoot;
use crate::plan::files::{
    plan_file, plan_log_file, plan_symlink, relative_target, FileChange, FileFact,
};
use crate::plan::manifests::etcd::{etcd_image, etcd_ports, pod_params, EtcdOptions, MemberInputs};
use crate::plan::manifests::flags::FlagTable;
use crate::plan::manifests::nodeup::{ComponentArgs, Distribution};
use crate::plan::manifests::upgrade::{check_upgrade, EtcdEndpoint, EtcdVersion, VERSION_FILE};
use crate::plan::state::MountedVolume;
use crate::spec::ClusterSpec;

/// Where a manifest goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// `/etc/kubernetes/manifests/<name>.manifest`.
    Static,
    /// On the etcd volume mounted at this host path (`<mount>/k8s.io/manifests/<name>.manifest`),
    /// with `/etc/kubernetes/manifests/<name>.manifest` a symlink to it.
    OnVolume {
        volume_id: String,
        mountpoint: String,
        /// The pod's data directory on the volume, e.g. `var/etcd/data`.
        data_dir: String,
        /// The etcd version the pod runs (from its image's tag, else the spec's version);
        /// `None` when neither says.
        etcd_version: Option<EtcdVersion>,
        /// The etcd cluster key (`main`, `events`, …).
        etcd_cluster: String,
        /// Where the running pod reports its version (boxed: the variant stays small).
        client: Box<EtcdEndpoint>,
    },
}

/// A rendered, validated manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// File stem: `etcd`, `etcd-events`, `kube-apiserver`, …
    pub name: String,
    pub(crate) template: String,
    pub contents: String,
    pub(crate) placement: Placement,
    /// Host path of a log file the pod mounts (created if missing, never truncated) and its mode.
    pub(crate) log_file: (String, u32),
}

/// What a node renders from.
#[derive(Clone, Debug)]
pub struct RenderInputs<'a> {
    pub cluster_name: &'a str,
    /// Starts with a dot: `.internal.<cluster>`.
    pub internal_suffix: &'a str,
    pub master: bool,
    pub spec: &'a ClusterSpec,
    pub mounted: &'a [MountedVolume],
    pub etcd: &'a EtcdOptions,
    /// The node's distribution, where nodeup's defaults depend on it.
    pub distribution: Distribution,
    /// Only the etcd pods (the old protokube's scope, run without a spec): the kube-* pods
    /// stay nodeup's.
    pub etcd_only: bool,
}

/// A control-plane or node component and its spec section.
struct Component {
    name: &'static str,
    section: &'static str,
    spec_path: &'static str,
    default_cpu: &'static str,
    log_mode: u32,
}

const API_SERVER: Component = Component {
    name: "kube-apiserver",
    section: "KubeAPIServerConfig",
    spec_path: "spec.kubeAPIServer",
    default_cpu: "150m",
    log_mode: 0o400,
};
const CONTROLLER_MANAGER: Component = Component {
    name: "kube-controller-manager",
    section: "KubeControllerManagerConfig",
    spec_path: "spec.kubeControllerManager",
    default_cpu: "100m",
    log_mode: 0o400,
};
const SCHEDULER: Component = Component {
    name: "kube-scheduler",
    section: "KubeSchedulerConfig",
    spec_path: "spec.kubeScheduler",
    default_cpu: "100m",
    log_mode: 0o400,
};
const PROXY: Component = Component {
    name: "kube-proxy",
    section: "KubeProxyConfig",
    spec_path: "spec.kubeProxy",
    default_cpu: "100m",
    log_mode: 0o400,
};

/// A quantity field (`cpuRequest: 100m`, `memoryLimit: 1Gi`, or a number) as text.
fn quantity(section: &Mapping, key: &str, path: &str) -> Result<Option<String>> {
    match section.get(key) {
        None | Some(yaml_serde::Value::Null) => Ok(None),
        Some(yaml_serde::Value::String(s)) => Ok(Some(s.clone())),
        Some(yaml_serde::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(anyhow!("`{path}.{key}` must be a quantity such as `100m`")),
    }
}

fn component_context(
    component: &Component,
    section: &Mapping,
    inputs: &RenderInputs<'_>,
    warnings: &mut Vec<String>,
) -> Result<tera::Context> {
    let path = component.spec_path;
    let image = section
        .get("image")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| anyhow!("`{path}.image` is not set; use the completed cluster spec"))?;
    let internal_api_name = format!("api.internal.{}", inputs.cluster_name);
    let api_server_url = if inputs.master {
        "https://127.0.0.1".to_owned()
    } else {
        format!("https://{internal_api_name}")
    };
    let table = FlagTable::builtin();
    let args: ComponentArgs = match component.name {
        "kube-apiserver" => nodeup::api_server(table, inputs.spec, section)?,
        "kube-controller-manager" => {
            nodeup::controller_manager(table, inputs.spec, section, inputs.distribution)?
        }
        "kube-scheduler" => nodeup::scheduler(table, section)?,
        _ => nodeup::proxy(table, section, &api_server_url)?,
    };
    warnings.extend(args.warnings);
    let mut ctx = tera::Context::new();
    ctx.insert("image", image);
    ctx.insert("args", &args.flags);
    ctx.insert("mounts", &args.mounts);
    ctx.insert("volume_plugin_dir", &args.volume_plugin_dir);
    ctx.insert(
        "cpu_request",
        &quantity(section, "cpuRequest", path)?.unwrap_or_else(|| component.default_cpu.to_owned()),
    );
    ctx.insert("cpu_limit", &quantity(section, "cpuLimit", path)?);
    ctx.insert("memory_request", &quantity(section, "memoryRequest", path)?);
    ctx.insert("memory_limit", &quantity(section, "memoryLimit", path)?);
    ctx.insert("cluster_name", inputs.cluster_name);
    ctx.insert("master_public_name", &inputs.spec.master_public_name);
    ctx.insert("internal_api_name", &internal_api_name);
    let (dns_internal, dns_external) = api_server_dns_annotations(inputs.spec, &internal_api_name);
    ctx.insert("dns_internal", &dns_internal);
    ctx.insert("dns_external", &dns_external);
    let secure_port = match section.get("securePort") {
        None | Some(yaml_serde::Value::Null) => 443,
        Some(v) => v
            .as_u64()
            .filter(|p| (1..=65535).contains(p))
            .ok_or_else(|| anyhow!("`{path}.securePort` must be a port number"))?,
    };
    ctx.insert("secure_port", &secure_port);
    ctx.insert("api_server_url", &api_server_url);
    Ok(ctx)
}

/// kube-apiserver's `dns.alpha.kubernetes.io/internal` and `/external` annotations (read by
/// dns-controller), by nodeup's rule (`buildAnnotations`, kOps v1.30.3
/// `nodeup/pkg/model/kube_apiserver.go`): none on a cluster without DNS; `internal` unless the
/// API's load balancer serves the internal name; `external` (the public name) only when
/// `spec.api.dns` is set — with a load balancer, kOps' alias stays in place.
pub(crate) fn api_server_dns_annotations(
    spec: &ClusterSpec,
    internal_api_name: &str,
) -> (Option<String>, Option<String>) {
    if spec.uses_none_dns() {
        return (None, None);
    }
    let internal =
        (!spec.load_balancer_serves_internal_api()).then(|| internal_api_name.to_owned());
    let external = spec
        .master_public_name
        .as_deref()
        .filter(|name| spec.api_dns() && !name.is_empty())
        .map(str::to_owned);
    (internal, external)
}

/// Renders and validates every manifest this node gets; nothing is written here. A member the
/// pod cannot be made for (a name an edited state file made unsafe) is skipped with a warning;
/// an etcd cluster without an image to run is an error.
pub fn render_all(
    tera: &tera::Tera,
    inputs: &RenderInputs<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Manifest>> {
    let mut manifests = Vec::new();
    if inputs.master {
        manifests.extend(render_etcd(tera, inputs, warnings)?);
        if inputs.etcd_only {
            return Ok(manifests);
        }
        for component in [&API_SERVER, &CONTROLLER_MANAGER, &SCHEDULER] {
            let section = match component.section {
                "KubeAPIServerConfig" => &inputs.spec.kube_api_server,
                "KubeControllerManagerConfig" => &inputs.spec.kube_controller_manager,
                _ => &inputs.spec.kube_scheduler,
            };
            let section = section.as_ref().ok_or_else(|| {
                anyhow!(
                    "`{}` is missing; use the completed cluster spec",
                    component.spec_path
                )
            })?;
            manifests.push(render_component(
                tera, component, section, inputs, warnings,
            )?);
        }
    }
    if inputs.etcd_only {
        return Ok(manifests);
    }
    match &inputs.spec.kube_proxy {
        Some(section)
            if section.get("enabled").and_then(yaml_serde::Value::as_bool) == Some(false) =>
        {
            tracing::info!("kube-proxy is disabled in the spec (spec.kubeProxy.enabled: false)");
        }
        Some(_) if inputs.master && inputs.spec.isolate_masters == Some(true) => {
            tracing::info!("no kube-proxy on this control-plane node (spec.isolateMasters: true)");
        }
        Some(section) => manifests.push(render_component(tera, &PROXY, section, inputs, warnings)?),
        None => bail!("`spec.kubeProxy` is missing; use the completed cluster spec"),
    }
    Ok(manifests)
}

/// The etcd pods of the members mounted here, one per etcd cluster key (two mounted volumes of
/// one key are an error); a member the pod cannot be made for is skipped with a warning.
fn render_etcd(
    tera: &tera::Tera,
    inputs: &RenderInputs<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Manifest>> {
    let clusters = &inputs.spec.etcd_clusters;
    let ports = etcd_ports(
        clusters,
        inputs
            .mounted
            .iter()
            .flat_map(|v| v.etcd.iter().map(|m| m.cluster.as_str())),
    )?;
    let mut manifests = Vec::new();
    let mut seen_keys: Vec<&str> = Vec::new();
    for volume in inputs.mounted {
        for membership in &volume.etcd {
            if seen_keys.contains(&membership.cluster.as_str()) {
                bail!(
                    "two mounted volumes hold etcd cluster `{}`; unmount one of them",
                    membership.cluster
                );
            }
            seen_keys.push(&membership.cluster);
            let key = membership.cluster.as_str();
            let image = etcd_image(inputs.etcd, clusters, key)?;
            let mountpoint = volume.mountpoint.display().to_string();
            let member_inputs = MemberInputs {
                spec: clusters.iter().find(|c| c.name == key),
                options: inputs.etcd,
                image: &image,
                ports: *ports
                    .get(key)
                    .ok_or_else(|| anyhow!("no ports for etcd cluster `{key}`"))?,
                internal_suffix: inputs.internal_suffix,
                ipv6: inputs.spec.is_ipv6(),
            };
            let params = match pod_params(membership, &mountpoint, &member_inputs) {
                Ok(params) => params,
                Err(err) => {
                    warnings.push(format!(
                        "volume `{}`: {}",
                        volume.volume_id,
                        crate::error::one_line(&err)
                    ));
                    continue;
                }
            };
            let contents = templates::render(tera, "etcd.yaml", &params.context())?;
            templates::validate_pod(&contents, "etcd.yaml")?;
            manifests.push(Manifest {
                log_file: (params.log_file.clone(), 0o644),
                name: params.cluster_name.clone(),
                template: "etcd.yaml".into(),
                contents,
                placement: Placement::OnVolume {
                    volume_id: volume.volume_id.clone(),
                    mountpoint,
                    data_dir: format!("var/etcd/{}", params.data_dir_name),
                    etcd_version: EtcdVersion::of_image(&image).or_else(|| {
                        clusters
                            .iter()
                            .find(|c| c.name == key)
                            .and_then(|c| c.version.as_deref())
                            .and_then(EtcdVersion::parse)
                    }),
                    etcd_cluster: key.to_string(),
                    client: Box::new(params.client_endpoint(inputs.spec.is_ipv6())),
                },
            });
        }
    }
    Ok(manifests)
}

fn render_component(
    tera: &tera::Tera,
    component: &Component,
    section: &Mapping,
    inputs: &RenderInputs<'_>,
    warnings: &mut Vec<String>,
) -> Result<Manifest> {
    let template = format!("{}.yaml", component.name);
    let ctx = component_context(component, section, inputs, warnings)
        .with_context(|| format!("building the {} manifest", component.name))?;
    let contents = templates::render(tera, &template, &ctx)?;
    templates::validate_pod(&contents, &template)?;
    Ok(Manifest {
        name: component.name.to_owned(),
        template,
        contents,
        placement: Placement::Static,
        log_file: (
            format!("/var/log/{}.log", component.name),
            component.log_mode,
        ),
    })
}

/// Where a node's manifests go on this host, resolved by the render step (so `/etc/kubernetes`
/// or `/var/log` may be symlinks) and given to planning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) root: HostRoot,
    /// The manifest directory kubelet reads, resolved.
    pub(crate) manifest_dir: PathBuf,
    /// The directory of the pods' log files, resolved.
    pub(crate) log_dir: PathBuf,
    /// Per etcd volume id: its manifest directory on the volume, resolved and checked.
    pub(crate) volume_dirs: BTreeMap<String, PathBuf>,
}

/// Where a manifest's files go, as paths under the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManifestPaths {
    /// The manifest file: in the manifest directory, or on its etcd volume.
    pub(crate) file: PathBuf,
    /// For a manifest on a volume: the link in the manifest directory and its relative target.
    pub(crate) link: Option<(PathBuf, PathBuf)>,
    /// The log file the pod mounts.
    pub(crate) log: PathBuf,
}

impl Manifest {
    /// The paths this manifest occupies in `layout`.
    pub(crate) fn paths(&self, layout: &Layout) -> Result<ManifestPaths> {
        let file_name = format!("{}.manifest", self.name);
        let in_manifest_dir = layout.manifest_dir.join(&file_name);
        let (file, link) = match &self.placement {
            Placement::Static => (in_manifest_dir, None),
            Placement::OnVolume { volume_id, .. } => {
                let dir = layout.volume_dirs.get(volume_id).ok_or_else(|| {
                    anyhow!("no manifest directory resolved for volume `{volume_id}`")
                })?;
                let on_volume = dir.join(&file_name);
                let target = relative_target(
                    &layout.root.host_path_of(&in_manifest_dir),
                    &layout.root.host_path_of(&on_volume),
                );
                (on_volume, Some((in_manifest_dir, target)))
            }
        };
        let log_name = Path::new(&self.log_file.0)
            .file_name()
            .ok_or_else(|| anyhow!("log file `{}` has no name", self.log_file.0))?;
        Ok(ManifestPaths {
            file,
            link,
            log: layout.log_dir.join(log_name),
        })
    }
}

/// One etcd pod on a volume: its manifest name, etcd cluster key and version.
type VolumePod<'a> = (&'a str, &'a str, Option<EtcdVersion>);

/// The etcd pods on each volume.
fn pods_by_volume(manifests: &[Manifest]) -> BTreeMap<&str, Vec<VolumePod<'_>>> {
    let mut by_volume: BTreeMap<&str, Vec<VolumePod<'_>>> = BTreeMap::new();
    for manifest in manifests {
        if let Placement::OnVolume {
            volume_id,
            etcd_version,
            etcd_cluster,
            ..
        } = &manifest.placement
        {
            by_volume.entry(volume_id).or_default().push((
                &manifest.name,
                etcd_cluster,
                *etcd_version,
            ));
        }
    }
    by_volume
}

/// The etcd versions the members of each etcd cluster recorded on their volumes, as the cloud's
/// answer shows them (the volumes' version tags): etcd cluster key → `[(volume id, version)]`.
pub(crate) type MemberVersions = BTreeMap<String, Vec<(String, EtcdVersion)>>;

/// A volume's version tag to write: `(volume id, etcd cluster key, version)`.
pub(crate) type VersionTag = (String, String, EtcdVersion);

/// The whole etcd cluster may go to `wanted` only when no other member is more than one minor
/// behind it (etcd needs every member on 3.5 before any runs 3.6).
fn check_members(
    key: &str,
    volume_id: &str,
    wanted: EtcdVersion,
    members: &MemberVersions,
) -> Result<(), String> {
    for (other, recorded) in members.get(key).into_iter().flatten() {
        if other == volume_id {
            continue;
        }
        if (recorded.major, recorded.minor + 1) < (wanted.major, wanted.minor) {
            return Err(format!(
                "the member of etcd `{key}` on volume `{other}` last ran etcd {recorded}, and an \
                 etcd cluster upgrades one minor version at a time with every member: bring \
                 every member to {}.{}.x first, then set {wanted}",
                wanted.major,
                wanted.minor.saturating_sub(1)
            ));
        }
    }
    Ok(())
}

/// Where the etcd version one etcd cluster's data last ran is recorded on its volume: one record
/// per etcd cluster, so clusters sharing a volume upgrade one at a time. A volume holding one
/// cluster (kOps' layout) keeps `etcd-version`; one holding several has `<pod>.etcd-version`
/// each.
fn record_path(dir: &Path, pod: &str, pods_on_volume: usize) -> PathBuf {
    if pods_on_volume == 1 {
        dir.join(VERSION_FILE)
    } else {
        dir.join(format!("{pod}.{VERSION_FILE}"))
    }
}

/// The volume manifest directory of `volume_id`.
fn volume_dir<'a>(layout: &'a Layout, volume_id: &str) -> Result<&'a PathBuf> {
    layout
        .volume_dirs
        .get(volume_id)
        .ok_or_else(|| anyhow!("no manifest directory resolved for volume `{volume_id}`"))
}

/// Where each etcd cluster records the etcd version its data last ran.
pub(crate) fn version_record_paths(
    layout: &Layout,
    manifests: &[Manifest],
) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (volume_id, pods) in pods_by_volume(manifests) {
        let dir = volume_dir(layout, volume_id)?;
        paths.extend(
            pods.iter()
                .map(|(pod, _, _)| record_path(dir, pod, pods.len())),
        );
    }
    Ok(paths)
}

/// The etcd version each running etcd pod reported on its client port this run, by manifest
/// name (`etcd`, `etcd-events`); a pod that did not answer is absent.
pub(crate) type ReportedVersions = BTreeMap<String, EtcdVersion>;

/// The etcd version guard: each etcd pod's version checked against the version its etcd
/// cluster's data last ran — what the running etcd reports now, else the record on this volume
/// — and against the versions the other members recorded (a downgrade, a skipped minor, or an
/// upgrade past a member left behind is an error naming the volume and what to do). The record
/// is written only with a version etcd reported (a version written but never run does not
/// block going back), and the volume's version tag follows the record. Checked before anything
/// is written; the records are written before the manifests.
pub(crate) fn plan_version_records(
    layout: &Layout,
    manifests: &[Manifest],
    facts: &BTreeMap<PathBuf, FileFact>,
    members: &MemberVersions,
    reported: &ReportedVersions,
) -> Result<(Vec<FileChange>, Vec<VersionTag>)> {
    let mut changes = Vec::new();
    let mut tags = Vec::new();
    for (volume_id, pods) in pods_by_volume(manifests) {
        let dir = volume_dir(layout, volume_id)?;
        for (pod, key, wanted) in &pods {
            let path = record_path(dir, pod, pods.len());
            let fact = facts.get(&path).unwrap_or(&FileFact::Missing);
            let recorded = match fact {
                FileFact::File { bytes, .. } => Some(
                    std::str::from_utf8(bytes)
                        .ok()
                        .and_then(EtcdVersion::parse)
                        .ok_or_else(|| {
                            anyhow!(
                                "`{}` on volume `{volume_id}` does not hold an etcd version \
                                 (`3.5.13`); write the version its data last ran there",
                                path.display()
                            )
                        })?,
                ),
                FileFact::Missing => None,
                FileFact::Symlink(_) | FileFact::Other => bail!(
                    "`{}` on volume `{volume_id}` is not a regular file",
                    path.display()
                ),
            };
            let reported = reported.get(*pod).copied();
            let last_ran = reported.or(recorded);
            if let Some(wanted) = wanted {
                let refuse =
                    |why: String| anyhow!("refusing to run `{pod}` on volume `{volume_id}`: {why}");
                if let Some(last_ran) = last_ran {
                    check_upgrade(last_ran, *wanted).map_err(refuse)?;
                }
                check_members(key, volume_id, *wanted, members).map_err(refuse)?;
            }
            if let Some(reported) = reported {
                let mut change = plan_file(&path, fact, &format!("{reported}\n"), 0o644);
                change.detail = format!("etcd {reported} (the version `{pod}` reports running)");
                changes.push(change);
            }
            let Some(last_ran) = last_ran else {
                continue;
            };
            let tagged = members
                .get(*key)
                .into_iter()
                .flatten()
                .any(|(id, version)| id == volume_id && *version == last_ran);
            if !tagged {
                tags.push(((*volume_id).to_owned(), (*key).to_owned(), last_ran));
            }
        }
    }
    Ok((changes, tags))
}

/// The file changes that put `manifests` in place in `layout`, given what is at each path now
/// (`facts`, keyed by the paths of [`Manifest::paths`]; a path missing from `facts` counts as
/// missing): per manifest its file, its link, and its log file when missing. Mode 0644.
pub(crate) fn plan_writes(
    layout: &Layout,
    manifests: &[Manifest],
    facts: &BTreeMap<PathBuf, FileFact>,
) -> Result<Vec<FileChange>> {
    let fact = |path: &PathBuf| facts.get(path).unwrap_or(&FileFact::Missing);
    let mut changes = Vec::new();
    for manifest in manifests {
        let paths = manifest.paths(layout)?;
        changes.push(plan_file(
            &paths.file,
            fact(&paths.file),
            &manifest.contents,
            0o644,
        ));
        if let Some((link, target)) = &paths.link {
            changes.push(plan_symlink(link, fact(link), target));
        }
        changes.extend(plan_log_file(
            &paths.log,
            fact(&paths.log),
            manifest.log_file.1,
        ));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::files::Desired;
    use crate::report::Action;

    fn manifest(name: &str, placement: Placement) -> Manifest {
        Manifest {
            name: name.into(),
            template: format!("{name}.yaml"),
            contents: "kind: Pod\n".into(),
            placement,
            log_file: (format!("/var/log/{name}.log"), 0o644),
        }
    }

    fn layout() -> Layout {
        Layout {
            root: HostRoot::new("/r"),
            manifest_dir: "/r/etc/kubernetes/manifests".into(),
            log_dir: "/r/var/log".into(),
            volume_dirs: [(
                "vol-1".to_owned(),
                PathBuf::from("/r/var/mnt/master-vol-1/k8s.io/manifests"),
            )]
            .into(),
        }
    }

    fn on_volume(name: &str) -> Manifest {
        manifest(
            name,
            Placement::OnVolume {
                volume_id: "vol-1".into(),
                mountpoint: "/mnt/master-vol-1".into(),
                data_dir: "var/etcd/data".into(),
                etcd_version: EtcdVersion::parse("3.5.13"),
                etcd_cluster: if name == "etcd" { "main" } else { "events" }.into(),
                client: Box::new(EtcdEndpoint {
                    port: if name == "etcd" { 4001 } else { 4002 },
                    ipv6: false,
                    tls: None,
                }),
            },
        )
    }

    /// `name`'s pod on vol-1, wanting etcd `version`.
    fn wanting(name: &str, version: &str) -> Manifest {
        let mut pod = on_volume(name);
        if let Placement::OnVolume { etcd_version, .. } = &mut pod.placement {
            *etcd_version = EtcdVersion::parse(version);
        }
        pod
    }

    fn v(text: &str) -> EtcdVersion {
        EtcdVersion::parse(text).unwrap()
    }

    const RECORD: &str = "/r/var/mnt/master-vol-1/k8s.io/manifests/etcd-version";

    /// The record files, `(path, text)`.
    fn records(files: &[(&str, &str)]) -> BTreeMap<PathBuf, FileFact> {
        files
            .iter()
            .map(|(path, text)| {
                (
                    PathBuf::from(path),
                    FileFact::File {
                        bytes: text.as_bytes().to_vec(),
                        mode: 0o644,
                    },
                )
            })
            .collect()
    }

    /// The etcd versions the running pods report, by manifest name.
    fn reporting(pods: &[(&str, &str)]) -> ReportedVersions {
        pods.iter()
            .map(|(name, version)| ((*name).to_owned(), v(version)))
            .collect()
    }

    /// The guard's plan for `pods` with no other member known.
    fn guard(
        pods: &[Manifest],
        facts: &BTreeMap<PathBuf, FileFact>,
        reported: &ReportedVersions,
    ) -> Result<(Vec<FileChange>, Vec<VersionTag>)> {
        plan_version_records(&layout(), pods, facts, &MemberVersions::new(), reported)
    }

    #[test]
    fn etcd_clusters_sharing_a_volume_upgrade_one_at_a_time() {
        let dir = "/r/var/mnt/master-vol-1/k8s.io/manifests";
        // main upgraded to 3.5 first, events still on 3.4: both run on.
        let facts = records(&[
            (&format!("{dir}/etcd.etcd-version"), "3.5.13\n"),
            (&format!("{dir}/etcd-events.etcd-version"), "3.4.23\n"),
        ]);
        let running = reporting(&[("etcd", "3.5.13"), ("etcd-events", "3.4.23")]);
        let pods = [wanting("etcd", "3.5.13"), wanting("etcd-events", "3.4.23")];
        let changes = guard(&pods, &facts, &running).unwrap().0;
        assert_eq!(changes.len(), 2);
        assert!(changes.iter().all(|c| c.action == Action::Unchanged));
        // events' own record still guards it: 3.4 to 3.6 is refused.
        let pods = [wanting("etcd", "3.5.13"), wanting("etcd-events", "3.6.0")];
        let err = guard(&pods, &facts, &running).unwrap_err().to_string();
        assert!(err.contains("etcd-events") && err.contains("3.5"), "{err}");
    }

    #[test]
    fn an_etcd_cluster_upgrades_only_with_every_member_one_minor_behind_at_most() {
        let layout = layout();
        let pod = wanting("etcd", "3.6.0");
        let facts = records(&[(RECORD, "3.5.13\n")]);
        let members = |other: &str| -> MemberVersions {
            [(
                "main".to_owned(),
                vec![
                    ("vol-1".to_owned(), v("3.5.13")),
                    ("vol-2".to_owned(), v(other)),
                ],
            )]
            .into()
        };
        let nothing = ReportedVersions::new();
        // A member still on 3.4: this one may not go to 3.6 (mixed minors).
        let err = plan_version_records(
            &layout,
            std::slice::from_ref(&pod),
            &facts,
            &members("3.4.23"),
            &nothing,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("vol-2") && err.contains("3.5.x first"),
            "{err}"
        );
        // Every member on 3.5: the upgrade goes. Until etcd 3.6 reports running, the record
        // and the tag stay 3.5.13.
        let (changes, tags) = plan_version_records(
            &layout,
            std::slice::from_ref(&pod),
            &facts,
            &members("3.5.13"),
            &nothing,
        )
        .unwrap();
        assert!(
            changes.is_empty() && tags.is_empty(),
            "{changes:?} {tags:?}"
        );
        // Once it does, the record and this volume's tag follow.
        let running = reporting(&[("etcd", "3.6.0")]);
        let (changes, tags) =
            plan_version_records(&layout, &[pod], &facts, &members("3.5.13"), &running).unwrap();
        assert_eq!(changes[0].action, Action::Update);
        assert_eq!(tags, [("vol-1".to_owned(), "main".to_owned(), v("3.6.0"))]);
    }

    #[test]
    fn the_version_record_holds_what_etcd_reported_and_guards_upgrades() {
        let layout = layout();
        let record = PathBuf::from(RECORD);
        assert_eq!(
            version_record_paths(&layout, &[on_volume("etcd")]).unwrap(),
            std::slice::from_ref(&record)
        );
        // Two etcd clusters on one volume: a record each, so each upgrades on its own.
        let paths =
            version_record_paths(&layout, &[on_volume("etcd"), on_volume("etcd-events")]).unwrap();
        let dir = PathBuf::from("/r/var/mnt/master-vol-1/k8s.io/manifests");
        assert_eq!(
            paths,
            [
                dir.join("etcd.etcd-version"),
                dir.join("etcd-events.etcd-version")
            ]
        );
        let pod = [on_volume("etcd")];
        let nothing = ReportedVersions::new();
        // First run, etcd not started yet: nothing recorded, nothing tagged.
        let (changes, tags) = guard(&pod, &BTreeMap::new(), &nothing).unwrap();
        assert!(changes.is_empty() && tags.is_empty());
        // Once etcd reports its version, it is recorded and tagged.
        let running = reporting(&[("etcd", "3.5.13")]);
        let (changes, tags) = guard(&pod, &BTreeMap::new(), &running).unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].action, Action::Create);
        assert_eq!(
            changes[0].desired,
            Desired::File {
                bytes: b"3.5.13\n".to_vec(),
                mode: 0o644
            }
        );
        assert_eq!(tags.len(), 1);
        // Converged.
        let same = guard(&pod, &records(&[(RECORD, "3.5.13\n")]), &running)
            .unwrap()
            .0;
        assert_eq!(same[0].action, Action::Unchanged);
        // One minor up: allowed; the record stays until the new etcd reports.
        let (up, tags) = guard(&pod, &records(&[(RECORD, "3.4.23\n")]), &nothing).unwrap();
        assert!(up.is_empty());
        assert_eq!(tags, [("vol-1".to_owned(), "main".to_owned(), v("3.4.23"))]);
        // Back a minor, or two ahead: refused, naming the volume.
        let err = guard(&pod, &records(&[(RECORD, "3.6.0\n")]), &nothing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("vol-1") && err.contains("3.6.0"), "{err}");
        let err = guard(&pod, &records(&[(RECORD, "3.3.0\n")]), &nothing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("one minor version at a time"), "{err}");
        // What etcd reports outranks the file: data a 3.6 etcd runs now is not 3.5's.
        let err = guard(
            &pod,
            &records(&[(RECORD, "3.5.13\n")]),
            &reporting(&[("etcd", "3.6.1")]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("3.6.1"), "{err}");
        let err = guard(&pod, &records(&[(RECORD, "garbage")]), &nothing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not hold an etcd version"), "{err}");
        // An image without a version: no guard, but what etcd reports is still recorded.
        let mut unknown = on_volume("etcd");
        if let Placement::OnVolume { etcd_version, .. } = &mut unknown.placement {
            *etcd_version = None;
        }
        let (changes, _) = guard(
            &[unknown],
            &records(&[(RECORD, "3.6.0\n")]),
            &reporting(&[("etcd", "3.6.2")]),
        )
        .unwrap();
        assert_eq!(changes[0].action, Action::Update);
    }

    #[test]
    fn a_failed_upgrade_rolls_back_and_one_that_ran_does_not() {
        let on_35 = records(&[(RECORD, "3.5.13\n")]);
        let nothing = ReportedVersions::new();
        // 3.5 → 3.6: allowed; etcd 3.6 never comes up, so nothing is recorded…
        let (changes, _) = guard(&[wanting("etcd", "3.6.0")], &on_35, &nothing).unwrap();
        assert!(changes.is_empty());
        // …and going back to 3.5 is allowed.
        assert!(guard(&[wanting("etcd", "3.5.13")], &on_35, &nothing).is_ok());
        // Had 3.6 run, its record would say so, and 3.5 could no longer read the data.
        let (changes, _) = guard(
            &[wanting("etcd", "3.6.0")],
            &on_35,
            &reporting(&[("etcd", "3.6.0")]),
        )
        .unwrap();
        assert_eq!(
            changes[0].desired,
            Desired::File {
                bytes: b"3.6.0\n".to_vec(),
                mode: 0o644
            }
        );
        let on_36 = records(&[(RECORD, "3.6.0\n")]);
        let err = guard(&[wanting("etcd", "3.5.13")], &on_36, &nothing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("3.6.0") && err.contains("3.5.13"), "{err}");
    }

    #[test]
    fn etcd_manifests_go_on_their_volume_behind_a_relative_link() {
        // /mnt is a symlink to var/mnt on this host: the link points at the resolved place.
        let paths = on_volume("etcd").paths(&layout()).unwrap();
        assert_eq!(
            paths.file,
            Path::new("/r/var/mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
        );
        let (link, target) = paths.link.unwrap();
        assert_eq!(link, Path::new("/r/etc/kubernetes/manifests/etcd.manifest"));
        assert_eq!(
            target,
            Path::new("../../../var/mnt/master-vol-1/k8s.io/manifests/etcd.manifest")
        );
        assert_eq!(paths.log, Path::new("/r/var/log/etcd.log"));
        let mut unknown = layout();
        unknown.volume_dirs.clear();
        assert!(on_volume("etcd").paths(&unknown).is_err());
    }

    #[test]
    fn writes_are_planned_from_what_is_on_disk() {
        let layout = layout();
        let manifests = [manifest("kube-proxy", Placement::Static), on_volume("etcd")];
        // A fresh node: everything is created, in order file, link, log per manifest.
        let fresh = plan_writes(&layout, &manifests, &BTreeMap::new()).unwrap();
        let summary: Vec<(String, Action)> = fresh
            .iter()
            .map(|c| (c.path.display().to_string(), c.action))
            .collect();
        let create = |p: &str| (p.to_owned(), Action::Create);
        assert_eq!(
            summary,
            [
                create("/r/etc/kubernetes/manifests/kube-proxy.manifest"),
                create("/r/var/log/kube-proxy.log"),
                create("/r/var/mnt/master-vol-1/k8s.io/manifests/etcd.manifest"),
                create("/r/etc/kubernetes/manifests/etcd.manifest"),
                create("/r/var/log/etcd.log"),
            ]
        );
        // As the plan leaves it: nothing to do, and existing log files are not reported.
        let facts: BTreeMap<PathBuf, FileFact> = fresh
            .iter()
            .map(|c| {
                let fact = match &c.desired {
                    Desired::File { bytes, mode } => FileFact::File {
                        bytes: bytes.clone(),
                        mode: *mode,
                    },
                    Desired::Symlink(target) => FileFact::Symlink(target.clone()),
                    Desired::LogFile { mode } => FileFact::File {
                        bytes: vec![],
                        mode: *mode,
                    },
                    Desired::Absent => FileFact::Missing,
                };
                (c.path.clone(), fact)
            })
            .collect();
        let converged = plan_writes(&layout, &manifests, &facts).unwrap();
        assert_eq!(converged.len(), 3);
        assert!(converged.iter().all(|c| c.action == Action::Unchanged));
    }
}
