//! The Kubernetes API through kube-rs, from the kubeconfig nodeup writes for protokube
//! (`KUBECONFIG`, kOps: `/var/lib/kops/kubeconfig`: the local API server at `https://127.0.0.1`,
//! its CA, and a client certificate). Paths in the kubeconfig are host paths: they are taken
//! under `--root`, as every host path is, and its files are read through the host seam. A
//! credential plugin it names (`exec`) is run by protokube itself, on the node under `--root`,
//! and killed with what it started at the run's deadline; every request ends by it too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, ExecConfig, KubeConfigOptions, Kubeconfig};
use serde::Deserialize;

use super::KubernetesApi;
use crate::error::{caused_by, NotReady};
use crate::host::{ChildCommand, ChildEnd, FileKind, Host};
use crate::kube::certificate::check_client_credential;
use crate::paths::HostRoot;
use crate::plan::kops::BootstrapObject;
use crate::proxy::EgressProxies;
use crate::wait::{retry_until, Backoff, Deadline, Retry};

/// The largest kubeconfig read (kOps' is well under 16 KiB).
const MAX_KUBECONFIG_BYTES: u64 = 1 << 20;

/// Where a credential plugin named without a path is looked for when protokube has no `PATH`.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The API server the kubeconfig names.
pub(crate) struct KubeClient {
    client: kube::Client,
    server: String,
    deadline: Deadline,
}

impl KubeClient {
    /// A client from the kubeconfig at host path `kubeconfig` (absolute, checked by the
    /// settings; taken under `root`) on `host`; connecting, every request and the whole of
    /// every answer end by `deadline`.
    pub(crate) async fn connect(
        host: &dyn Host,
        root: &HostRoot,
        kubeconfig: &str,
        deadline: Deadline,
    ) -> Result<Self> {
        let path = root.resolve(kubeconfig)?;
        let bytes = host
            .read(&path, MAX_KUBECONFIG_BYTES)
            .with_context(|| {
                format!(
                    "reading the kubeconfig `{}` (KUBECONFIG; nodeup writes it on control-plane \
                     nodes)",
                    path.display()
                )
            })?
            .ok_or_else(|| {
                NotReady(format!(
                    "the kubeconfig `{}` (KUBECONFIG) is not there yet: nodeup writes it on \
                     control-plane nodes; retry later",
                    path.display()
                ))
            })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| anyhow!("the kubeconfig `{}` is not UTF-8", path.display()))?;
        let mut config = Kubeconfig::from_yaml(&text)
            .with_context(|| format!("kubeconfig `{}`", path.display()))?;
        for cluster in config
            .clusters
            .iter_mut()
            .filter_map(|c| c.cluster.as_mut())
        {
            under_root(root, &mut cluster.certificate_authority)?;
        }
        let user = current_user(&config);
        for named in &mut config.auth_infos {
            let Some(user_info) = named.auth_info.as_mut() else {
                continue;
            };
            under_root(root, &mut user_info.client_certificate)?;
            under_root(root, &mut user_info.client_key)?;
            under_root(root, &mut user_info.token_file)?;
            let connecting_as = user.as_deref() == Some(named.name.as_str());
            let mut whose = format!("user `{}` of kubeconfig `{}`", named.name, path.display());
            if let Some(exec) = user_info.exec.take() {
                // Only the user the run connects as runs its plugin; the others' are dropped.
                if connecting_as {
                    let credential =
                        run_credential_plugin(host, root, Path::new(kubeconfig), &exec, deadline)
                            .await?;
                    credential.apply(user_info)?;
                    whose = format!("the credential plugin's answer for {whose}");
                }
            }
            if connecting_as {
                check_client_certificate(host, user_info, &whose)?;
            }
        }
        let named_proxy = context_proxy(&config);
        let mut config =
            kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig `{}`", path.display()))?;
        let remaining = deadline.remaining();
        // protokube's steps wait and retry themselves, within the run's deadline, and say
        // what the server last answered; kube-rs' own retries would hide it.
        config.default_retry = false;
        config.connect_timeout = Some(remaining);
        config.read_timeout = Some(remaining);
        config.write_timeout = Some(remaining);
        // The kubeconfig's own `proxy-url` wins; else the node's proxy settings as Go reads
        // them (kube-rs' own reading proxies even what `NO_PROXY` exempts, loopback included).
        config.proxy_url =
            match named_proxy {
                Some(url) => Some(url.parse().with_context(|| {
                    format!("the `proxy-url` of kubeconfig `{}`", path.display())
                })?),
                None => EgressProxies::from_env(&[])
                    .route(&config.cluster_url)
                    .map(|route| route.url.parse())
                    .transpose()
                    .context("the node's egress proxy (`HTTPS_PROXY`) is not a URL")?,
            };
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config)
            .with_context(|| format!("a Kubernetes client for `{server}`"))?;
        Ok(Self {
            client,
            server,
            deadline,
        })
    }

    /// Makes one request — a read or a write alike — until it is answered or the run's
    /// deadline comes: the connection, every read and the whole answer end by the deadline (a
    /// server that sends one byte a second does not hold the run), and an API server that does
    /// not answer yet (refused, 5xx, 429: one still coming up) is asked again with backoff,
    /// never judged on a first attempt. Writes are safe to repeat: a label patch is the same
    /// patch, a create that went through the first time answers "already exists".
    async fn request<T, F, Fut>(&self, mut send: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        let answered = retry_until(self.deadline, backoff, u32::MAX, |_| {
            let attempt = self.deadline.run(send());
            async move {
                match attempt.await {
                    Ok(Ok(answer)) => Ok(Retry::Done(answer)),
                    Ok(Err(err)) => {
                        let err = api_error(err, &self.server);
                        if !caused_by::<NotReady>(&err) {
                            return Err(err);
                        }
                        tracing::debug!("{}; asking again", crate::error::one_line(&err));
                        Ok(Retry::Again(Some(err)))
                    }
                    Err(()) => Err(self.no_answer()),
                }
            }
        })
        .await?;
        answered.map_err(|gave_up| gave_up.last.unwrap_or_else(|| self.no_answer()))
    }

    /// The "not ready" of a request the deadline cut short.
    fn no_answer(&self) -> anyhow::Error {
        NotReady(format!(
            "the Kubernetes API at `{}` does not answer within --timeout; retry later",
            self.server
        ))
        .into()
    }
}

/// The largest client certificate or key file read.
const MAX_CREDENTIAL_BYTES: u64 = 1 << 20;

/// Checks the client certificate and key `user` connects with, when it has both, naming where
/// each came from (`whose`: the user and the kubeconfig).
fn check_client_certificate(host: &dyn Host, user: &AuthInfo, whose: &str) -> Result<()> {
    use base64::Engine as _;
    let read = |data: Option<&str>,
                file: Option<&String>,
                field: &str|
     -> Result<Option<(Vec<u8>, String)>> {
        if let Some(data) = data {
            let from = format!("`{field}-data` of {whose}");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|err| anyhow!("{from} is not base64 ({err})"))?;
            return Ok(Some((bytes, from)));
        }
        let Some(file) = file else {
            return Ok(None);
        };
        let from = format!("`{file}`, the `{field}` of {whose}");
        let bytes = host
            .read(Path::new(file), MAX_CREDENTIAL_BYTES)
            .with_context(|| format!("reading {from}"))?
            .ok_or_else(|| anyhow!("{from} does not exist"))?;
        Ok(Some((bytes, from)))
    };
    let certificate = read(
        user.client_certificate_data.as_deref(),
        user.client_certificate.as_ref(),
        "client-certificate",
    )?;
    let key = read(
        user.client_key_data
            .as_ref()
            .map(secrecy::ExposeSecret::expose_secret),
        user.client_key.as_ref(),
        "client-key",
    )?;
    match (certificate, key) {
        (Some((certificate, certificate_from)), Some((key, key_from))) => check_client_credential(
            &certificate,
            &certificate_from,
            &key,
            &key_from,
            std::time::SystemTime::now(),
        ),
        (Some((_, from)), None) => bail!("{from} comes without its key (`client-key`)"),
        (None, Some((_, from))) => bail!("{from} comes without its certificate"),
        (None, None) => Ok(()),
    }
}

/// The user of the kubeconfig's current context (kube-rs' default).
fn current_user(config: &Kubeconfig) -> Option<String> {
    let context = config.current_context.as_deref()?;
    config
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone())
}

/// The `proxy-url` of the cluster of the kubeconfig's current context, if it names one.
fn context_proxy(config: &Kubeconfig) -> Option<String> {
    let context = config.current_context.as_deref()?;
    let cluster = config
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())?;
    config
        .clusters
        .iter()
        .find(|c| c.name == cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.proxy_url.clone())
        .filter(|url| !url.trim().is_empty())
}

/// A host path of the kubeconfig, taken under `--root`.
fn under_root(root: &HostRoot, path: &mut Option<String>) -> Result<()> {
    if let Some(host_path) = path.as_mut() {
        *host_path = root.resolve(host_path.as_str())?.display().to_string();
    }
    Ok(())
}

/// What a credential plugin printed (client-go's `ExecCredential`).
#[derive(Debug, Deserialize)]
struct ExecCredential {
    status: Option<ExecCredentialStatus>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
}

/// The credential a plugin gave: a bearer token, or a client certificate and key (PEM).
enum Credential {
    Token(String),
    Certificate { certificate: String, key: String },
}

impl Credential {
    /// Puts the credential into the user's entry in the kubeconfig's own form.
    fn apply(self, user: &mut AuthInfo) -> Result<()> {
        use base64::Engine as _;
        let entry = match self {
            Credential::Token(token) => serde_json::json!({ "token": token }),
            Credential::Certificate { certificate, key } => {
                let base64 = base64::engine::general_purpose::STANDARD;
                serde_json::json!({
                    "client-certificate-data": base64.encode(certificate),
                    "client-key-data": base64.encode(key),
                })
            }
        };
        let given: AuthInfo = serde_json::from_value(entry)?;
        user.token = given.token.or(user.token.take());
        user.client_certificate_data = given
            .client_certificate_data
            .or(user.client_certificate_data.take());
        user.client_key_data = given.client_key_data.or(user.client_key_data.take());
        Ok(())
    }
}

/// Runs the kubeconfig's credential plugin on the node, under `--root`, until the deadline.
async fn run_credential_plugin(
    host: &dyn Host,
    root: &HostRoot,
    kubeconfig: &Path,
    exec: &ExecConfig,
    deadline: Deadline,
) -> Result<Credential> {
    let named = exec
        .command
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| anyhow!("the kubeconfig's `exec` names no command"))?;
    let program = plugin_path(host, root, kubeconfig, named)?;
    let mut command = ChildCommand::new(program.clone(), exec.args.clone().unwrap_or_default());
    for variable in exec.env.iter().flatten() {
        if let (Some(name), Some(value)) = (variable.get("name"), variable.get("value")) {
            command.env.push((name.clone(), value.clone()));
        }
    }
    let info = serde_json::json!({
        "apiVersion": exec.api_version.as_deref().unwrap_or("client.authentication.k8s.io/v1"),
        "kind": "ExecCredential",
        "spec": { "interactive": false },
    });
    command
        .env
        .push(("KUBERNETES_EXEC_INFO".to_owned(), info.to_string()));
    let what = format!("the kubeconfig's credential plugin `{}`", program.display());
    let output = host
        .run(&command, deadline)
        .await
        .with_context(|| format!("running {what}"))?;
    match output.end {
        ChildEnd::Killed => {
            return Err(NotReady(format!(
                "{what} did not finish within --timeout (it and what it started were killed); \
                 retry later"
            ))
            .into())
        }
        ChildEnd::Exited {
            success: false,
            status,
        } => {
            let said = String::from_utf8_lossy(&output.stderr);
            match said.trim() {
                "" => bail!("{what} failed ({status}) and said nothing on stderr"),
                said => bail!("{what} failed ({status}): {said}"),
            }
        }
        ChildEnd::Exited { success: true, .. } => {}
    }
    let credential: ExecCredential = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{what} did not print an ExecCredential"))?;
    let status = credential
        .status
        .ok_or_else(|| anyhow!("{what} printed an ExecCredential without `status`"))?;
    match (
        status.token,
        status.client_certificate_data,
        status.client_key_data,
    ) {
        (Some(token), _, _) if !token.is_empty() => Ok(Credential::Token(token)),
        (_, Some(certificate), Some(key)) => Ok(Credential::Certificate { certificate, key }),
        _ => bail!(
            "{what} printed an ExecCredential with neither a token nor a client certificate and \
             key"
        ),
    }
}

/// Where the plugin `command` is on the node, under `--root`: a path (relative to the
/// kubeconfig's directory, as client-go takes it), or a name looked for on protokube's `PATH`.
fn plugin_path(
    host: &dyn Host,
    root: &HostRoot,
    kubeconfig: &Path,
    command: &str,
) -> Result<PathBuf> {
    if command.contains('/') {
        let host_path = match kubeconfig.parent() {
            Some(dir) if Path::new(command).is_relative() => dir.join(command),
            _ => PathBuf::from(command),
        };
        return root.resolve(host_path);
    }
    let search = std::env::var("PATH").unwrap_or_else(|_| DEFAULT_PATH.to_owned());
    for dir in search.split(':').filter(|d| d.starts_with('/')) {
        let candidate = root.resolve(Path::new(dir).join(command))?;
        if host.kind(&candidate)? == FileKind::File {
            return Ok(candidate);
        }
    }
    bail!(
        "the kubeconfig's credential plugin `{command}` is on no directory of PATH (`{search}`) \
         under `{}`",
        root.dir().display()
    )
}

#[async_trait]
impl KubernetesApi for KubeClient {
    async fn ready(&self) -> Result<()> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let found = self
            .request(|| namespaces.get_opt("kube-system"))
            .await
            .context("asking the Kubernetes API for the `kube-system` namespace")?;
        match found {
            Some(_) => Ok(()),
            None => Err(NotReady(format!(
                "the Kubernetes API at `{}` answers, but its `kube-system` namespace does not \
                 exist yet (the API server is still starting its controllers)",
                self.server
            ))
            .into()),
        }
    }

    async fn node_labels(&self, name: &str) -> Result<Option<BTreeMap<String, String>>> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = self
            .request(|| nodes.get_opt(name))
            .await
            .with_context(|| format!("reading node `{name}`"))?;
        Ok(node.map(|n| n.metadata.labels.unwrap_or_default()))
    }

    async fn nodes_with_hostname(&self, hostname: &str) -> Result<Vec<String>> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let selector = format!("kubernetes.io/hostname={hostname}");
        let list = self
            .request(|| {
                let (nodes, params) = (&nodes, ListParams::default().labels(&selector));
                async move { nodes.list(&params).await }
            })
            .await
            .with_context(|| format!("listing the nodes labelled `{selector}`"))?;
        list.items
            .into_iter()
            .map(|node| {
                node.metadata
                    .name
                    .ok_or_else(|| anyhow!("the API listed a node without a name"))
            })
            .collect()
    }

    async fn patch_labels(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let patch = serde_json::json!({ "metadata": { "labels": labels } });
        let params = PatchParams::default();
        let patch = Patch::Strategic(&patch);
        self.request(|| nodes.patch(name, &params, &patch))
            .await
            .with_context(|| format!("labelling node `{name}`"))?;
        Ok(())
    }

    async fn exists(&self, object: &BootstrapObject) -> Result<bool> {
        let found = match *object {
            BootstrapObject::ServiceAccount { namespace, name } => {
                let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
                self.request(|| api.get_opt(name))
                    .await
                    .map(|o| o.is_some())
            }
            BootstrapObject::ClusterRoleBinding { name, .. } => {
                let api: Api<ClusterRoleBinding> = Api::all(self.client.clone());
                self.request(|| api.get_opt(name))
                    .await
                    .map(|o| o.is_some())
            }
        };
        found.with_context(|| format!("reading {}", object.describe()))
    }

    async fn create(&self, object: &BootstrapObject) -> Result<bool> {
        let params = PostParams::default();
        // Someone made it meanwhile (or a repeated create found the first one made): it
        // exists, and is left as it is.
        let made = |created: Result<(), kube::Error>| match created {
            Ok(()) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(err) => Err(err),
        };
        let created = match *object {
            BootstrapObject::ServiceAccount { namespace, name } => {
                let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
                let account = ServiceAccount {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        namespace: Some(namespace.to_owned()),
                        ..ObjectMeta::default()
                    },
                    ..ServiceAccount::default()
                };
                self.request(|| async { made(api.create(&params, &account).await.map(drop)) })
                    .await
            }
            BootstrapObject::ClusterRoleBinding {
                name,
                cluster_role,
                subject: (namespace, account),
            } => {
                let api: Api<ClusterRoleBinding> = Api::all(self.client.clone());
                let binding = ClusterRoleBinding {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        ..ObjectMeta::default()
                    },
                    role_ref: RoleRef {
                        api_group: "rbac.authorization.k8s.io".to_owned(),
                        kind: "ClusterRole".to_owned(),
                        name: cluster_role.to_owned(),
                    },
                    subjects: Some(vec![Subject {
                        kind: "ServiceAccount".to_owned(),
                        name: account.to_owned(),
                        namespace: Some(namespace.to_owned()),
                        ..Subject::default()
                    }]),
                };
                self.request(|| async { made(api.create(&params, &binding).await.map(drop)) })
                    .await
            }
        };
        created.with_context(|| format!("creating {}", object.describe()))
    }
}

/// An API server that does not answer (connection refused, timed out, 5xx, 429) is "not ready"
/// (exit 75); anything else it says is an error.
fn api_error(err: kube::Error, server: &str) -> anyhow::Error {
    match &err {
        kube::Error::Api(status) if status.code >= 500 || status.code == 429 => NotReady(format!(
            "the Kubernetes API at `{server}` answered {} ({}); retry later",
            status.code, status.message
        ))
        .into(),
        kube::Error::Api(status) => anyhow!(
            "the Kubernetes API at `{server}` refused: {} {} ({})",
            status.code,
            status.reason,
            status.message
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => NotReady(format!(
            "the Kubernetes API at `{server}` does not answer yet ({err}); retry later"
        ))
        .into(),
        _ => anyhow::Error::new(err),
    }
}
