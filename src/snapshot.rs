//! What the run knows: the node's identity, the cluster's names, the cloud's facts (the
//! cluster's etcd volumes, its running masters) and the host's (mounted etcd volumes), each
//! fetched once, on first use. Steps update it as they apply — or, with `--dry-run`, as their
//! plan would leave it — so a later step plans from what an earlier one did (render reads the
//! volumes mount mounted from here, DNS the attachments claim made).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::cloud::AttachmentState;
use crate::cloud::{
    tags, Cloud, CloudClients, CloudVolume, DeviceNaming, InstanceInfo, MetadataWords, Placement,
    VolumeAttachment, VolumeQuery,
};
use crate::host::{FileKind, Host};
use crate::identity::{self, NodeIdentity};
use crate::paths::{volume_mountpoint, HostRoot, MANIFEST_DIR, STATE_FILE};
use crate::plan::etcd_owner::{is_own_etcd_link, Declined, EtcdOwner, ManifestFile};
use crate::plan::files::FileFact;
use crate::plan::mounts::{mounted_at, MountEntry};
use crate::plan::static_pods::MAX_STATIC_POD_BYTES;
use crate::plan::volumes::{classify, Discovery, EtcdVolume, ProviderFacts};
use crate::settings::{Cluster, Settings};
use crate::state::{MountedVolume, State, Verified};

/// Which of the cluster's volumes a run asks the cloud for: those in this node's zone (mount,
/// discover-volumes), or those in every zone (DNS needs every member's attachment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VolumeScope {
    Zone,
    Region,
}

/// The run's facts, filled on first use.
pub(crate) struct Snapshot<'a> {
    /// The run's settings: the run's one carrier of them (steps ask the snapshot), replaced
    /// when the node's cluster and role are learned.
    settings: Arc<Settings>,
    cloud: &'a dyn Cloud,
    host: &'a dyn Host,
    scope: VolumeScope,
    identity: Option<NodeIdentity>,
    clients: Option<CloudClients>,
    cluster: Option<Cluster>,
    discovery: Option<Discovery>,
    /// The cloud's volume answer `discovery` was classified from.
    volume_answer: Option<Vec<CloudVolume>>,
    masters: Option<Vec<InstanceInfo>>,
    mounted: Option<Vec<MountedVolume>>,
    etcd_owner: Option<EtcdOwner>,
    /// The manifest directory and its entries, listed once.
    manifest_dir: Option<(PathBuf, Vec<String>)>,
    /// The state file as read once this run (empty when missing or unreadable) and, when it
    /// could not be read, why; updated when a step writes it.
    state: Option<(State, Option<String>)>,
    /// etcd-manager owns the etcd volumes here: they are not even listed.
    volumes_left: bool,
    /// Volumes attached or mounted only in this dry run's plan: nothing on the host to read.
    planned: BTreeSet<String>,
}

impl<'a> Snapshot<'a> {
    pub(crate) fn new(
        settings: &Settings,
        cloud: &'a dyn Cloud,
        host: &'a dyn Host,
        scope: VolumeScope,
    ) -> Self {
        Self {
            cluster: settings.cluster.clone(),
            settings: Arc::new(settings.clone()),
            cloud,
            host,
            scope,
            identity: None,
            clients: None,
            discovery: None,
            volume_answer: None,
            masters: None,
            mounted: None,
            etcd_owner: None,
            manifest_dir: None,
            state: None,
            volumes_left: false,
            planned: BTreeSet::new(),
        }
    }

    /// The run's settings.
    pub(crate) fn settings(&self) -> Arc<Settings> {
        Arc::clone(&self.settings)
    }

    /// This snapshot for `settings` that know more of the node (its cluster and role, learned
    /// from its tags): what does not depend on them — the identity, the cloud clients, the
    /// state file as read or written — is kept, not asked for again.
    pub(crate) fn learned(self, settings: Settings) -> Self {
        let mut next = Snapshot::new(&settings, self.cloud, self.host, self.scope);
        next.identity = self.identity;
        next.clients = self.clients;
        next.state = self.state;
        next
    }

    /// The node this run works on: its devices and files.
    pub(crate) fn host(&self) -> &'a dyn Host {
        self.host
    }

    /// How the cloud names the devices of attached volumes.
    pub(crate) fn devices(&self) -> &'a dyn DeviceNaming {
        self.cloud.devices()
    }

    /// How the cloud's operators see kOps' metadata keys.
    pub(crate) fn words(&self) -> &'a dyn MetadataWords {
        self.cloud.words()
    }

    /// What the volume rules need of the cloud.
    pub(crate) fn provider_facts(&self) -> ProviderFacts<'a> {
        ProviderFacts {
            devices: self.cloud.devices(),
            words: self.cloud.words(),
        }
    }

    /// This node's identity: flags first, the metadata service for the rest.
    pub(crate) async fn identity(&mut self) -> Result<&NodeIdentity> {
        if self.identity.is_none() {
            let resolved =
                identity::resolve(&self.settings.identity, self.cloud.metadata()).await?;
            self.identity = Some(resolved);
        }
        self.identity
            .as_ref()
            .ok_or_else(|| anyhow!("identity not resolved"))
    }

    /// The cloud clients for this node's region.
    pub(crate) async fn clients(&mut self) -> Result<CloudClients> {
        if self.clients.is_none() {
            let identity = self.identity().await?;
            let placement = Placement {
                region: identity.region.clone(),
                zone: identity.availability_zone.clone(),
            };
            self.clients = Some(self.cloud.connect(&placement).await?);
        }
        self.clients
            .clone()
            .ok_or_else(|| anyhow!("cloud clients not connected"))
    }

    /// The cluster's names: from the settings, else from this instance's `KubernetesCluster` tag.
    pub(crate) async fn cluster(&mut self) -> Result<Cluster> {
        if let Some(cluster) = &self.cluster {
            return Ok(cluster.clone());
        }
        let instance_id = self.identity().await?.instance_id.clone();
        let found = self
            .clients()
            .await?
            .instances
            .instance_tags(&instance_id)
            .await
            .context("finding the cluster name")?;
        let name = tags::cluster_of(&instance_id, &found, self.words())?;
        let cluster = self.settings.cluster_named(&name).with_context(|| {
            format!(
                "cluster `{name}` (from the instance's {})",
                self.words().name(tags::CLUSTER)
            )
        })?;
        self.cluster = Some(cluster.clone());
        Ok(cluster)
    }

    /// Leaves the etcd volumes to their owner (etcd-manager): from now on the run sees none and
    /// asks the cloud for none.
    pub(crate) fn leave_volumes(&mut self) {
        self.volumes_left = true;
    }

    /// The cluster's etcd volumes (one listing per run, in this run's scope) and the ones skipped.
    pub(crate) async fn discovery(&mut self) -> Result<&Discovery> {
        if self.discovery.is_none() {
            let query = self.volume_query().await?;
            let found = if self.volumes_left {
                Vec::new()
            } else {
                self.clients().await?.volumes.find_volumes(&query).await?
            };
            self.record_volume_answer(&query, found);
        }
        self.discovery
            .as_ref()
            .ok_or_else(|| anyhow!("volumes not discovered"))
    }

    /// The full check's two independent questions, asked at once: the cluster's volumes and
    /// its running masters.
    pub(crate) async fn fetch_volumes_and_masters(&mut self) -> Result<()> {
        let query = self.volume_query().await?;
        let clients = self.clients().await?;
        if self.volumes_left {
            let masters = clients.instances.running_masters(&query.cluster).await?;
            self.record_volume_answer(&query, Vec::new());
            self.masters = Some(masters);
            return Ok(());
        }
        let (volumes, masters) = tokio::try_join!(
            clients.volumes.find_volumes(&query),
            clients.instances.running_masters(&query.cluster)
        )?;
        self.record_volume_answer(&query, volumes);
        self.masters = Some(masters);
        Ok(())
    }

    /// Takes the volumes from the recorded check instead of asking the cloud.
    pub(crate) async fn trust(&mut self, recorded: &Verified) -> Result<()> {
        let query = self.volume_query().await?;
        self.record_volume_answer(&query, recorded.volumes.clone());
        Ok(())
    }

    /// Takes the masters from a worker's recorded check instead of asking the cloud.
    pub(crate) fn trust_masters(&mut self, masters: Vec<InstanceInfo>) {
        self.masters = Some(masters);
    }

    /// The cloud's answer the volumes were classified from (after [`Snapshot::discovery`]).
    pub(crate) fn volume_answer(&self) -> Option<&[CloudVolume]> {
        self.volume_answer.as_deref()
    }

    /// The cluster's etcd volumes, when this run has listed them.
    pub(crate) fn discovery_known(&self) -> Option<&Discovery> {
        self.discovery.as_ref()
    }

    /// The cluster's running masters, when they have been asked for.
    pub(crate) fn masters_known(&self) -> Option<&[InstanceInfo]> {
        self.masters.as_deref()
    }

    /// The volume query of this run's scope.
    async fn volume_query(&mut self) -> Result<VolumeQuery> {
        let cluster = self.cluster().await?.name;
        let zone = match self.scope {
            VolumeScope::Zone => Some(self.identity().await?.availability_zone.clone()),
            VolumeScope::Region => None,
        };
        Ok(VolumeQuery { cluster, zone })
    }

    fn record_volume_answer(&mut self, query: &VolumeQuery, found: Vec<CloudVolume>) {
        tracing::debug!(
            "{} volume(s) of cluster `{}` in `{}`",
            found.len(),
            query.cluster,
            query.zone.as_deref().unwrap_or("every zone")
        );
        self.discovery = Some(classify(
            &query.cluster,
            query.zone.as_deref(),
            found.clone(),
            self.provider_facts(),
        ));
        self.volume_answer = Some(found);
    }

    /// The cluster's etcd volumes in this node's zone.
    pub(crate) async fn volumes_here(&mut self) -> Result<Vec<EtcdVolume>> {
        let zone = self.identity().await?.availability_zone.clone();
        Ok(self
            .discovery()
            .await?
            .volumes
            .iter()
            .filter(|v| v.zone == zone)
            .cloned()
            .collect())
    }

    /// The cluster's running control-plane instances.
    pub(crate) async fn masters(&mut self) -> Result<Vec<InstanceInfo>> {
        if self.masters.is_none() {
            let cluster = self.cluster().await?.name;
            let masters = self
                .clients()
                .await?
                .instances
                .running_masters(&cluster)
                .await?;
            self.masters = Some(masters);
        }
        Ok(self.masters.clone().unwrap_or_default())
    }

    /// Records that `volume_id` is now attached to this instance as `device` (or, with
    /// `planned`, would be in this dry run), so later steps see it without asking again.
    pub(crate) fn record_attachment(
        &mut self,
        volume_id: &str,
        instance_id: &str,
        device: &str,
        planned: bool,
    ) {
        if let Some(volume) = self
            .discovery
            .as_mut()
            .and_then(|d| d.volumes.iter_mut().find(|v| v.id == volume_id))
        {
            volume.attachment = Some(VolumeAttachment {
                instance_id: instance_id.to_owned(),
                device: device.to_owned(),
                state: AttachmentState::Attached,
                attach_time: None,
                root: false,
                read_only: false,
            });
        }
        if planned {
            self.mark_planned(volume_id);
        }
    }

    /// Records that `volume_id` is detached (or, with dry run, would be).
    pub(crate) fn record_detachment(&mut self, volume_id: &str) {
        if let Some(volume) = self
            .discovery
            .as_mut()
            .and_then(|d| d.volumes.iter_mut().find(|v| v.id == volume_id))
        {
            volume.attachment = None;
        }
    }

    /// Sets `volume_id` aside for the rest of the run: attached here but not this node's to
    /// mount or publish (a second volume of a key that something else still holds, so it could
    /// not be detached). Seen as attached nowhere, as a detached one is.
    pub(crate) fn set_aside(&mut self, volume_id: &str) {
        self.record_detachment(volume_id);
    }

    /// Marks `volume_id` as attached or mounted only in this dry run's plan.
    pub(crate) fn mark_planned(&mut self, volume_id: &str) {
        self.planned.insert(volume_id.to_owned());
    }

    /// Whether `volume_id` is attached or mounted only in this dry run's plan.
    pub(crate) fn is_planned(&self, volume_id: &str) -> bool {
        self.planned.contains(volume_id)
    }

    /// The state file (`<root>/var/lib/protokube/state.json`), read once per run; missing or
    /// unreadable counts as empty (the mount step rewrites it from what it mounts).
    pub(crate) fn state(&mut self) -> Result<&State> {
        Ok(&self.read_state()?.0)
    }

    /// The state file, read once per run; one that cannot be read is an error.
    pub(crate) fn state_strict(&mut self) -> Result<&State> {
        match self.read_state()? {
            (_, Some(why)) => Err(anyhow!("{why}")),
            (state, None) => Ok(state),
        }
    }

    /// The state as a step of this run has just written it.
    pub(crate) fn record_state(&mut self, state: State) {
        self.state = Some((state, None));
    }

    fn read_state(&mut self) -> Result<&(State, Option<String>)> {
        if self.state.is_none() {
            let path = self.settings.root.own(STATE_FILE)?;
            self.state = Some(match State::load(self.host, &path) {
                Ok(state) => (state.unwrap_or_else(|| State::new(Vec::new())), None),
                Err(err) => {
                    tracing::debug!("{err:#}");
                    (State::new(Vec::new()), Some(crate::error::one_line(&err)))
                }
            });
        }
        self.state
            .as_ref()
            .ok_or_else(|| anyhow!("state file not read"))
    }

    /// Records the etcd volumes mounted here after the mount step (or as its plan would leave
    /// them).
    pub(crate) fn record_mounted(&mut self, mounted: Vec<MountedVolume>) {
        self.mounted = Some(mounted);
    }

    /// The etcd volumes mounted here: what the mount step recorded in this run, else the state
    /// file, trusted only where the mount table agrees: each volume at its own mount point,
    /// mounted from the device the file names (its etcd manifest lives on it).
    pub(crate) fn mounted(&mut self) -> Result<Vec<MountedVolume>> {
        if self.mounted.is_none() {
            let volumes = self.state_strict()?.volumes.clone();
            let root = &self.settings.root;
            let path = root.own(STATE_FILE)?;
            for volume in &volumes {
                check_recorded_mount(self.host, root, volume).with_context(|| {
                    format!(
                        "`{}` records volume `{}`, which is not trusted; run `protokube mount` \
                         (it rewrites the file from what it mounts)",
                        path.display(),
                        volume.volume_id
                    )
                })?;
            }
            self.mounted = Some(volumes);
        }
        Ok(self.mounted.clone().unwrap_or_default())
    }

    /// The resolved manifest directory and its entries' names, sorted (none when it is
    /// missing): listed once per run.
    pub(crate) fn manifest_dir(&mut self) -> Result<(PathBuf, Vec<String>)> {
        if self.manifest_dir.is_none() {
            let dir = self.settings.root.resolve(MANIFEST_DIR)?;
            let names = self
                .host
                .list(&dir)
                .context("listing the static-pod manifests")?
                .unwrap_or_default();
            self.manifest_dir = Some((dir, names));
        }
        self.manifest_dir
            .clone()
            .ok_or_else(|| anyhow!("manifest directory not listed"))
    }

    /// Who owns etcd on this node, decided once per run: nobody protokube knows where the unit
    /// says `--manage-etcd=false`, else from the static-pod manifests: kOps' etcd-manager where
    /// its pods are there (by content, whatever the file names), else protokube.
    pub(crate) fn etcd_owner(&mut self) -> Result<&EtcdOwner> {
        let declined = self.settings.etcd_declined;
        if self.etcd_owner.is_none() && declined == Some(Declined::ManageEtcdFalse) {
            self.etcd_owner = Some(EtcdOwner::Declined(Declined::ManageEtcdFalse));
        }
        if self.etcd_owner.is_none() {
            let (dir, names) = self.manifest_dir()?;
            let owner = read_etcd_owner(self.host, &self.settings.root, &dir, &names);
            // A kOps ≥ 1.23 unit: etcd-manager's where its pods are (said so), and never
            // protokube's where they are not (yet), or cannot be read.
            self.etcd_owner = Some(match (owner, declined) {
                (owner @ EtcdOwner::EtcdManager { .. }, _) => owner,
                (_, Some(why)) => EtcdOwner::Declined(why),
                (owner, None) => owner,
            });
        }
        self.etcd_owner
            .as_ref()
            .ok_or_else(|| anyhow!("etcd owner not decided"))
    }

    /// The mount table of this mount namespace, read now (a mount changes it).
    pub(crate) fn mount_table(&self) -> Result<Vec<MountEntry>> {
        self.host.mount_table()
    }
}

/// Symlinks followed from one manifest-directory entry before giving up (as Linux's `ELOOP`).
const MAX_MANIFEST_LINKS: usize = 40;

/// Reads the manifest directory's files as kubelet reads them (dot files ignored, directories
/// not entered, symlinks followed — inside the root) and decides who owns etcd.
fn read_etcd_owner(host: &dyn Host, root: &HostRoot, dir: &Path, names: &[String]) -> EtcdOwner {
    // Where protokube's etcd links lead: `/mnt`, and the place it is a symlink to.
    let mut mount_dirs = vec![PathBuf::from("/mnt")];
    if let Ok(resolved) = root.resolve("/mnt") {
        mount_dirs.push(root.host_path_of(&resolved));
    }
    let read: Vec<(&str, ReadManifest)> = names
        .iter()
        .filter(|name| !name.starts_with('.'))
        .map(|name| {
            let read = read_manifest(host, root, &dir.join(name), &mount_dirs);
            (name.as_str(), read)
        })
        .collect();
    EtcdOwner::from_manifests(
        dir.to_owned(),
        read.iter().map(|(name, read)| {
            let file = match read {
                ReadManifest::Bytes(bytes) => ManifestFile::Bytes(bytes),
                ReadManifest::OwnLink => ManifestFile::OwnLink,
                ReadManifest::Skipped => ManifestFile::Skipped,
                ReadManifest::Unreadable(why) => ManifestFile::Unreadable(why),
            };
            (*name, file)
        }),
    )
}

/// One manifest-directory entry as read from the node.
enum ReadManifest {
    Bytes(Vec<u8>),
    OwnLink,
    Skipped,
    Unreadable(String),
}

/// Reads the entry at `path`: a symlink is protokube's own when it leads to its volume layout,
/// else followed inside the root as kubelet follows it on the host.
fn read_manifest(
    host: &dyn Host,
    root: &HostRoot,
    path: &Path,
    mount_dirs: &[PathBuf],
) -> ReadManifest {
    let unreadable = |why: String| ReadManifest::Unreadable(why);
    let mut current = path.to_owned();
    let mut links = 0;
    loop {
        let kind = match host.kind(&current) {
            Ok(kind) => kind,
            Err(err) => return unreadable(crate::error::one_line(&err)),
        };
        match kind {
            FileKind::Symlink(target) => {
                let host_path = root.host_path_of(&current);
                if links == 0 && is_own_etcd_link(&host_path, &target, mount_dirs) {
                    return ReadManifest::OwnLink;
                }
                links += 1;
                if links > MAX_MANIFEST_LINKS {
                    return unreadable("too many levels of symlinks".to_owned());
                }
                let next = match host_path.parent() {
                    Some(parent) if target.is_relative() => parent.join(&target),
                    _ => target,
                };
                current = match root.resolve(&next) {
                    Ok(resolved) => resolved,
                    Err(err) => return unreadable(crate::error::one_line(&err)),
                };
            }
            FileKind::Directory => return ReadManifest::Skipped,
            FileKind::Missing if links == 0 => return ReadManifest::Skipped,
            FileKind::Missing => {
                return unreadable(format!(
                    "a symlink to `{}`, which does not exist",
                    root.host_path_of(&current).display()
                ))
            }
            FileKind::Other => return unreadable("not a regular file".to_owned()),
            FileKind::File => {
                return match host.read(&current, MAX_STATIC_POD_BYTES) {
                    Ok(Some(bytes)) => ReadManifest::Bytes(bytes),
                    Ok(None) => unreadable("it went away while being read".to_owned()),
                    Err(err) => unreadable(crate::error::one_line(&err)),
                }
            }
        }
    }
}

/// A volume the state file records is at its own mount point, mounted from the recorded device.
fn check_recorded_mount(host: &dyn Host, root: &HostRoot, volume: &MountedVolume) -> Result<()> {
    let expected = volume_mountpoint(&volume.volume_id);
    if volume.mountpoint != expected {
        bail!(
            "its mount point is recorded as `{}`, not `{}`",
            volume.mountpoint.display(),
            expected.display()
        );
    }
    let mountpoint = root.volume_mountpoint(&volume.volume_id)?;
    let device = root.resolve(&volume.device)?;
    if matches!(host.fact(&device)?, FileFact::Missing) {
        bail!(
            "it is not mounted at `{}`: its device `{}` is not there",
            mountpoint.display(),
            volume.device.display()
        );
    }
    let devno = host
        .device_number(&device)
        .with_context(|| format!("recorded device `{}`", volume.device.display()))?;
    let table = host.mount_table()?;
    let mounted_here = mounted_at(&table, &mountpoint).is_some_and(|m| m.devno == devno)
        && host.mounted_device(&mountpoint)? == devno;
    if !mounted_here {
        bail!(
            "it is not mounted at `{}` from `{}`",
            mountpoint.display(),
            volume.device.display()
        );
    }
    Ok(())
}
