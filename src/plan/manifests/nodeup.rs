//! nodeup's own part of each component's flags (kOps v1.30.3 `nodeup/pkg/model/kube_*.go`):
//! the certificate, key and kubeconfig paths it sets — replacing the spec's value, filling it in
//! when the spec leaves it empty, or appending to the spec's list, each as nodeup does for that
//! field — the flags it adds after building the spec's, and the host paths they need mounted.
//! The spec's values are never dropped silently: where nodeup replaces one, or passes a flag of
//! its own beside the spec's, a warning names the field. Pure.

use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use yaml_serde::{Mapping, Value};

use crate::plan::manifests::flags::FlagTable;
use crate::spec::ClusterSpec;

/// nodeup's `PathSrvKubernetes`.
const SRV: &str = "/srv/kubernetes";
/// The cloud config nodeup writes for the in-tree provider.
const IN_TREE_CLOUD_CONFIG: &str = "/etc/kubernetes/in-tree-cloud.config";
/// The webhook authentication config nodeup writes for `spec.authentication`.
const AUTHN_CONFIG: &str = "/etc/kubernetes/authn.config";

/// The node's Linux distribution, where nodeup's defaults depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Distribution {
    #[default]
    Other,
    /// Google's Container-Optimized OS.
    ContainerOs,
    /// Flatcar: `/usr` is read-only.
    Flatcar,
}

impl Distribution {
    /// From the text of `/etc/os-release` (its `ID`).
    pub(crate) fn from_os_release(text: &str) -> Self {
        let id = text
            .lines()
            .find_map(|l| l.strip_prefix("ID="))
            .map(|v| v.trim().trim_matches('"'));
        match id {
            Some("cos") => Distribution::ContainerOs,
            Some("flatcar") => Distribution::Flatcar,
            _ => Distribution::Other,
        }
    }

    /// Where kubelet's flex-volume plugins live when the spec does not say.
    fn volume_plugin_dir(self) -> &'static str {
        match self {
            Distribution::ContainerOs => "/home/kubernetes/flexvolume/",
            Distribution::Flatcar => "/var/lib/kubelet/volumeplugins/",
            Distribution::Other => "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
        }
    }
}

/// A host path a pod mounts beyond its template's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct HostMount {
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) read_only: bool,
}

/// A component's arguments after its binary, in kOps' order, and what else the spec asks of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ComponentArgs {
    pub(crate) flags: Vec<String>,
    /// Host paths to mount, in nodeup's order, after the template's own.
    pub(crate) mounts: Vec<HostMount>,
    /// kube-controller-manager's flex-volume plugin directory (mounted read-write).
    pub(crate) volume_plugin_dir: Option<String>,
    pub(crate) warnings: Vec<String>,
}

/// A component's spec section as nodeup edits it before building the flags.
struct Section<'a> {
    table: &'a FlagTable,
    flag_table_key: &'static str,
    path: &'static str,
    values: Mapping,
    warnings: Vec<String>,
}

impl<'a> Section<'a> {
    fn new(
        table: &'a FlagTable,
        flag_table_key: &'static str,
        path: &'static str,
        values: &Mapping,
    ) -> Self {
        Self {
            table,
            flag_table_key,
            path,
            values: values.clone(),
            warnings: Vec::new(),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key).filter(|v| !v.is_null())
    }

    /// Absent or null: a Go pointer field nodeup finds nil.
    fn is_unset(&self, key: &str) -> bool {
        self.get(key).is_none()
    }

    /// Unset or the empty string: a Go string field nodeup finds `""`.
    fn is_empty(&self, key: &str) -> bool {
        self.get(key).is_none_or(|v| v.as_str() == Some(""))
    }

    fn put(&mut self, key: &str, value: Value) {
        self.values.insert(Value::from(key), value);
    }

    /// nodeup always sets `key`: a different value from the spec is replaced, and named.
    fn set(&mut self, key: &str, value: &str) {
        if let Some(old) = self.get(key) {
            if old.as_str() != Some(value) && old.as_str() != Some("") {
                self.warnings.push(format!(
                    "`{}.{key}` ({}) is replaced by nodeup's `{value}`, as kOps does",
                    self.path,
                    describe(old)
                ));
            }
        }
        self.put(key, Value::from(value));
    }

    /// nodeup sets `key` only when the spec leaves it unset (a pointer field).
    fn fill_when_unset(&mut self, key: &str, value: Value) {
        if self.is_unset(key) {
            self.put(key, value);
        }
    }

    /// nodeup sets `key` only when the spec leaves it empty (a string field).
    fn fill_when_empty(&mut self, key: &str, value: &str) {
        if self.is_empty(key) {
            self.put(key, Value::from(value));
        }
    }

    /// The spec's list `key` (empty when unset); anything but a list of strings is an error.
    fn list(&self, key: &str) -> Result<Vec<String>> {
        let Some(value) = self.get(key) else {
            return Ok(Vec::new());
        };
        value
            .as_sequence()
            .and_then(|items| {
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .ok_or_else(|| anyhow!("`{}.{key}` must be a list of strings", self.path))
    }

    fn put_list(&mut self, key: &str, items: Vec<String>) {
        self.put(
            key,
            Value::Sequence(items.into_iter().map(Value::from).collect()),
        );
    }

    /// nodeup appends `item` to the spec's list `key`.
    fn append(&mut self, key: &str, item: &str) -> Result<()> {
        let mut items = self.list(key)?;
        items.push(item.to_owned());
        self.put_list(key, items);
        Ok(())
    }

    /// The flags: the section's by the flag table, then `added` (nodeup's own, appended before
    /// kOps sorts the list), sorted, then `trailing` (appended after the sort).
    fn finish(self, added: &[String], trailing: Vec<String>) -> Result<ComponentArgs> {
        let Section {
            table,
            flag_table_key,
            path,
            values,
            mut warnings,
        } = self;
        let mut flags = table.build(flag_table_key, &values, path)?;
        let spec_flags = flags.clone();
        flags.extend(added.iter().cloned());
        flags.sort();
        for own in added {
            let name = flag_name(own);
            let Some(theirs) = spec_flags.iter().find(|f| flag_name(f) == name) else {
                continue;
            };
            let field = table
                .section(flag_table_key)
                .find(|f| f.flag.as_deref() == Some(name.trim_start_matches("--")))
                .map_or_else(|| name.to_owned(), |f| format!("{path}.{}", f.key));
            let last = flags
                .iter()
                .rev()
                .find(|f| flag_name(f) == name)
                .unwrap_or(own);
            warnings.push(format!(
                "`{field}` gives `{theirs}`, passed beside nodeup's own `{own}` as kOps does; the \
                 component takes the last of them, `{last}`"
            ));
        }
        flags.extend(trailing);
        Ok(ComponentArgs {
            flags,
            warnings,
            ..ComponentArgs::default()
        })
    }
}

fn flag_name(flag: &str) -> &str {
    flag.split_once('=').map_or(flag, |(name, _)| name)
}

fn describe(value: &Value) -> String {
    match value.as_str() {
        Some(s) => format!("`{s}`"),
        None => yaml_serde::to_string(value)
            .map(|s| format!("`{}`", s.trim()))
            .unwrap_or_default(),
    }
}

/// The OIDC fields go through spec.authentication.oidc on their way to nodeup: the required
/// claims become a map (the last value of a claim wins), printed back sorted.
fn oidc_required_claims(s: &mut Section<'_>) -> Result<()> {
    if !s.is_unset("oidcRequiredClaim") {
        let mut claims = std::collections::BTreeMap::new();
        for claim in s.list("oidcRequiredClaim")? {
            let (name, value) = claim.split_once('=').ok_or_else(|| {
                anyhow!(
                    "`spec.kubeAPIServer.oidcRequiredClaim`: `{}` is not `claim=value`",
                    claim.escape_debug()
                )
            })?;
            claims.insert(name.to_owned(), value.to_owned());
        }
        let claims = claims
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s.put_list("oidcRequiredClaim", claims);
    }
    Ok(())
}

/// `admissionControl` is moved to `enableAdmissionPlugins` (the flags exclude each other).
fn admission_plugins(s: &mut Section<'_>) -> Result<()> {
    let admission_control = s.list("admissionControl")?;
    if !admission_control.is_empty() {
        if !s.is_unset("enableAdmissionPlugins")
            && s.list("enableAdmissionPlugins")? != admission_control
        {
            s.warnings.push(
                "`spec.kubeAPIServer.enableAdmissionPlugins` is replaced by \
                 `spec.kubeAPIServer.admissionControl`, as kOps does"
                    .to_owned(),
            );
        }
        s.put_list("enableAdmissionPlugins", admission_control);
        s.put_list("admissionControl", Vec::new());
    }
    Ok(())
}

/// kube-apiserver (`kube_apiserver.go`).
pub(crate) fn api_server(
    table: &FlagTable,
    spec: &ClusterSpec,
    values: &Mapping,
) -> Result<ComponentArgs> {
    let kapi = format!("{SRV}/kube-apiserver");
    let mut s = Section::new(table, "KubeAPIServerConfig", "spec.kubeAPIServer", values);
    oidc_required_claims(&mut s)?;
    admission_plugins(&mut s)?;
    if spec.encryption_config == Some(true) {
        s.set(
            "encryptionProviderConfig",
            &format!("{kapi}/encryptionconfig.yaml"),
        );
    }
    let authentication = |key: &str| {
        spec.authentication
            .as_ref()
            .and_then(|a| a.get(key))
            .is_some_and(|v| !v.is_null())
    };
    if authentication("aws") {
        s.set("authenticationTokenWebhookConfigFile", AUTHN_CONFIG);
    }
    s.append(
        "serviceAccountKeyFile",
        &format!("{kapi}/service-account.pub"),
    )?;
    s.fill_when_unset(
        "serviceAccountSigningKeyFile",
        Value::from(format!("{kapi}/service-account.key")),
    );
    s.set("etcdCaFile", &format!("{kapi}/etcd-ca.crt"));
    s.set("etcdCertFile", &format!("{kapi}/etcd-client.crt"));
    s.set("etcdKeyFile", &format!("{kapi}/etcd-client.key"));
    s.set(
        "requestheaderClientCAFile",
        &format!("{kapi}/apiserver-aggregator-ca.crt"),
    );
    s.set(
        "proxyClientCertFile",
        &format!("{kapi}/apiserver-aggregator.crt"),
    );
    s.set(
        "proxyClientKeyFile",
        &format!("{kapi}/apiserver-aggregator.key"),
    );
    s.set(
        "kubeletClientCertificate",
        &format!("{kapi}/kubelet-api.crt"),
    );
    s.set("kubeletClientKey", &format!("{kapi}/kubelet-api.key"));
    s.fill_when_empty("clientCAFile", &format!("{SRV}/ca.crt"));
    s.set("tlsCertFile", &format!("{kapi}/server.crt"));
    s.set("tlsPrivateKeyFile", &format!("{kapi}/server.key"));

    let mut mounts = Vec::new();
    let string = |key: &str| s.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let parent = |path: &str| {
        std::path::Path::new(path)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    };
    let audit_log = string("auditLogPath");
    if !audit_log.is_empty() && audit_log != "-" {
        mounts.push(HostMount {
            name: "auditlogpathdir".into(),
            path: parent(&audit_log),
            read_only: false,
        });
    }
    let audit_policy = string("auditPolicyFile");
    if !audit_policy.is_empty() && parent(&audit_policy) != kapi {
        mounts.push(HostMount {
            name: "auditconfigdir".into(),
            path: parent(&audit_policy),
            read_only: true,
        });
    }
    if authentication("aws") || authentication("kopeio") {
        mounts.push(HostMount {
            name: "authn-config".into(),
            path: AUTHN_CONFIG.into(),
            read_only: true,
        });
    }
    let issuers = s
        .list("additionalServiceAccountIssuers")?
        .into_iter()
        .map(|issuer| format!("--service-account-issuer={issuer}"))
        .collect();
    let mut args = s.finish(&[format!("--cloud-config={IN_TREE_CLOUD_CONFIG}")], issuers)?;
    args.mounts = mounts;
    Ok(args)
}

/// kube-controller-manager (`kube_controller_manager.go`).
pub(crate) fn controller_manager(
    table: &FlagTable,
    spec: &ClusterSpec,
    values: &Mapping,
    distribution: Distribution,
) -> Result<ComponentArgs> {
    let kcm = format!("{SRV}/kube-controller-manager");
    let mut s = Section::new(
        table,
        "KubeControllerManagerConfig",
        "spec.kubeControllerManager",
        values,
    );
    s.set("rootCAFile", &format!("{SRV}/ca.crt"));
    s.set(
        "serviceAccountPrivateKeyFile",
        &format!("{kcm}/service-account.key"),
    );
    // nodeup issues a serving certificate only when the spec names none.
    if s.is_unset("tlsCertFile") {
        s.set("tlsCertFile", &format!("{kcm}/server.crt"));
        s.set("tlsPrivateKeyFile", &format!("{kcm}/server.key"));
    }
    let plugin_dir = match spec.kubelet_setting(true, "volumePluginDirectory") {
        None => distribution.volume_plugin_dir().to_owned(),
        Some(Value::String(dir)) if dir.is_empty() => distribution.volume_plugin_dir().to_owned(),
        Some(Value::String(dir)) => dir.clone(),
        Some(_) => bail!("`spec.masterKubelet.volumePluginDirectory` / `spec.kubelet.volumePluginDirectory` must be a path"),
    };
    let kubeconfig = "/var/lib/kube-controller-manager/kubeconfig";
    let added = [
        format!("--cloud-config={IN_TREE_CLOUD_CONFIG}"),
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        format!("--cluster-signing-cert-file={kcm}/ca.crt"),
        format!("--cluster-signing-key-file={kcm}/ca.key"),
        format!("--flex-volume-plugin-dir={plugin_dir}"),
    ];
    let mut args = s.finish(&added, Vec::new())?;
    args.volume_plugin_dir = Some(plugin_dir);
    Ok(args)
}

/// kube-scheduler (`kube_scheduler.go`).
pub(crate) fn scheduler(table: &FlagTable, values: &Mapping) -> Result<ComponentArgs> {
    let sched = format!("{SRV}/kube-scheduler");
    let mut s = Section::new(table, "KubeSchedulerConfig", "spec.kubeScheduler", values);
    if s.is_unset("tlsCertFile") {
        s.set("tlsCertFile", &format!("{sched}/server.crt"));
        s.set("tlsPrivateKeyFile", &format!("{sched}/server.key"));
    }
    let kubeconfig = "/var/lib/kube-scheduler/kubeconfig";
    let added = [
        "--config=/var/lib/kube-scheduler/config.yaml".to_owned(),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
    ];
    s.finish(&added, Vec::new())
}

/// kube-proxy (`kube_proxy.go`); `api_server_url` is where it finds the API.
pub(crate) fn proxy(
    table: &FlagTable,
    values: &Mapping,
    api_server_url: &str,
) -> Result<ComponentArgs> {
    let mut s = Section::new(table, "KubeProxyConfig", "spec.kubeProxy", values);
    s.fill_when_empty("master", api_server_url);
    s.fill_when_unset("conntrackMaxPerCore", Value::from(131_072));
    let added = [
        "--kubeconfig=/var/lib/kube-proxy/kubeconfig".to_owned(),
        "--oom-score-adj=-998".to_owned(),
    ];
    s.finish(&added, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(yaml: &str) -> Mapping {
        yaml_serde::from_str(yaml).unwrap()
    }

    fn spec(yaml: &str) -> ClusterSpec {
        yaml_serde::from_str(yaml).unwrap()
    }

    fn api(spec_yaml: &str, section: &str) -> ComponentArgs {
        api_server(FlagTable::builtin(), &spec(spec_yaml), &mapping(section)).unwrap()
    }

    fn with(flags: &[String], prefix: &str) -> Vec<String> {
        flags
            .iter()
            .filter(|f| f.starts_with(prefix))
            .cloned()
            .collect()
    }

    #[test]
    fn service_account_keys_are_appended_to_the_specs() {
        let args = api("{}", "serviceAccountKeyFile: [/srv/old-sa.pub]\n");
        assert_eq!(
            with(&args.flags, "--service-account-key-file="),
            [
                "--service-account-key-file=/srv/kubernetes/kube-apiserver/service-account.pub",
                "--service-account-key-file=/srv/old-sa.pub",
            ]
        );
        assert!(args.warnings.is_empty(), "{:?}", args.warnings);
    }

    #[test]
    fn values_nodeup_only_fills_in_come_from_the_spec_when_set() {
        let args = api(
            "{}",
            "clientCAFile: /etc/ca.pem\nserviceAccountSigningKeyFile: /etc/sa.key\n",
        );
        assert_eq!(
            with(&args.flags, "--client-ca-file="),
            ["--client-ca-file=/etc/ca.pem"]
        );
        assert_eq!(
            with(&args.flags, "--service-account-signing-key-file="),
            ["--service-account-signing-key-file=/etc/sa.key"]
        );
        let args = api("{}", "{}");
        assert_eq!(
            with(&args.flags, "--client-ca-file="),
            ["--client-ca-file=/srv/kubernetes/ca.crt"]
        );
        // A string nodeup finds empty is filled; an empty pointer value is kept (no flag).
        let args = api("{}", "clientCAFile: ''\nserviceAccountSigningKeyFile: ''\n");
        assert_eq!(
            with(&args.flags, "--client-ca-file="),
            ["--client-ca-file=/srv/kubernetes/ca.crt"]
        );
        assert!(with(&args.flags, "--service-account-signing-key-file=").is_empty());
    }

    #[test]
    fn values_nodeup_always_sets_replace_the_spec_with_a_warning() {
        let args = api(
            "{}",
            "etcdCaFile: /etc/my-ca.crt\ntlsCertFile: /etc/my.crt\n",
        );
        assert_eq!(
            with(&args.flags, "--etcd-cafile="),
            ["--etcd-cafile=/srv/kubernetes/kube-apiserver/etcd-ca.crt"]
        );
        assert_eq!(args.warnings.len(), 2, "{:?}", args.warnings);
        assert!(args.warnings[0].contains("spec.kubeAPIServer.etcdCaFile"));
        assert!(args.warnings[1].contains("spec.kubeAPIServer.tlsCertFile"));
    }

    #[test]
    fn the_api_server_list_is_sorted_then_extra_issuers_follow() {
        let args = api(
            "{}",
            "serviceAccountIssuer: https://a\nadditionalServiceAccountIssuers: [https://z, https://b]\n",
        );
        let n = args.flags.len();
        assert_eq!(
            args.flags[n - 2..],
            [
                "--service-account-issuer=https://z",
                "--service-account-issuer=https://b"
            ]
        );
        let mut sorted = args.flags[..n - 2].to_vec();
        sorted.sort();
        assert_eq!(args.flags[..n - 2], sorted);
        assert!(args
            .flags
            .contains(&"--cloud-config=/etc/kubernetes/in-tree-cloud.config".into()));
    }

    #[test]
    fn authentication_encryption_audit_and_admission_control() {
        let args = api(
            "authentication: {aws: {}}\nencryptionConfig: true\n",
            "auditLogPath: /var/log/audit/a.log\nauditPolicyFile: /etc/kubernetes/audit/p.yaml\n\
             admissionControl: [A, B]\nenableAdmissionPlugins: [C]\n\
             oidcRequiredClaim: [b=2, a=1, b=3]\n",
        );
        for flag in [
            "--authentication-token-webhook-config-file=/etc/kubernetes/authn.config",
            "--encryption-provider-config=/srv/kubernetes/kube-apiserver/encryptionconfig.yaml",
            "--enable-admission-plugins=A,B",
            "--oidc-required-claim=a=1",
            "--oidc-required-claim=b=3",
        ] {
            assert!(
                args.flags.contains(&flag.to_owned()),
                "{flag}: {:?}",
                args.flags
            );
        }
        assert!(with(&args.flags, "--admission-control=").is_empty());
        assert_eq!(with(&args.flags, "--oidc-required-claim=").len(), 2);
        assert!(
            args.warnings[0].contains("enableAdmissionPlugins"),
            "{:?}",
            args.warnings
        );
        let mounts: Vec<(&str, &str, bool)> = args
            .mounts
            .iter()
            .map(|m| (m.name.as_str(), m.path.as_str(), m.read_only))
            .collect();
        assert_eq!(
            mounts,
            [
                ("auditlogpathdir", "/var/log/audit", false),
                ("auditconfigdir", "/etc/kubernetes/audit", true),
                ("authn-config", "/etc/kubernetes/authn.config", true),
            ]
        );
        let err = api_server(
            FlagTable::builtin(),
            &spec("{}"),
            &mapping("oidcRequiredClaim: [nope]\n"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("oidcRequiredClaim"), "{err}");
    }

    #[test]
    fn serving_certificates_are_issued_only_when_the_spec_names_none() {
        let table = FlagTable::builtin();
        let kcm = controller_manager(
            table,
            &spec("{}"),
            &mapping("tlsCertFile: /etc/kcm.crt\ntlsPrivateKeyFile: /etc/kcm.key\n"),
            Distribution::Other,
        )
        .unwrap();
        assert_eq!(
            with(&kcm.flags, "--tls-"),
            [
                "--tls-cert-file=/etc/kcm.crt",
                "--tls-private-key-file=/etc/kcm.key"
            ]
        );
        let kcm =
            controller_manager(table, &spec("{}"), &mapping("{}"), Distribution::Other).unwrap();
        assert_eq!(
            with(&kcm.flags, "--tls-"),
            [
                "--tls-cert-file=/srv/kubernetes/kube-controller-manager/server.crt",
                "--tls-private-key-file=/srv/kubernetes/kube-controller-manager/server.key"
            ]
        );
        let sched = scheduler(table, &mapping("tlsCertFile: /etc/s.crt\n")).unwrap();
        assert_eq!(with(&sched.flags, "--tls-"), ["--tls-cert-file=/etc/s.crt"]);
    }

    #[test]
    fn flags_nodeup_adds_beside_the_specs_are_kept_and_named() {
        let table = FlagTable::builtin();
        let sched = scheduler(
            table,
            &mapping("authenticationKubeconfig: /etc/my.kubeconfig\n"),
        )
        .unwrap();
        assert_eq!(
            with(&sched.flags, "--authentication-kubeconfig="),
            [
                "--authentication-kubeconfig=/etc/my.kubeconfig",
                "--authentication-kubeconfig=/var/lib/kube-scheduler/kubeconfig"
            ]
        );
        assert_eq!(sched.warnings.len(), 1);
        assert!(
            sched.warnings[0].contains("spec.kubeScheduler.authenticationKubeconfig")
                && sched.warnings[0]
                    .ends_with("`--authentication-kubeconfig=/var/lib/kube-scheduler/kubeconfig`"),
            "{}",
            sched.warnings[0]
        );
    }

    #[test]
    fn the_flex_volume_directory_follows_the_kubelet_and_the_distribution() {
        let table = FlagTable::builtin();
        let dir = |spec_yaml: &str, distribution| {
            controller_manager(table, &spec(spec_yaml), &mapping("{}"), distribution)
                .unwrap()
                .volume_plugin_dir
                .unwrap()
        };
        assert_eq!(
            dir("{}", Distribution::Other),
            "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
        );
        assert_eq!(
            dir("{}", Distribution::Flatcar),
            "/var/lib/kubelet/volumeplugins/"
        );
        assert_eq!(
            dir(
                "kubelet: {volumePluginDirectory: /k}\n",
                Distribution::Flatcar
            ),
            "/k"
        );
        assert_eq!(
            dir(
                "kubelet: {volumePluginDirectory: /k}\nmasterKubelet: {volumePluginDirectory: /m}\n",
                Distribution::Other
            ),
            "/m"
        );
        assert_eq!(
            Distribution::from_os_release("NAME=\"Flatcar\"\nID=flatcar\n"),
            Distribution::Flatcar
        );
        assert_eq!(
            Distribution::from_os_release("ID=\"cos\"\n"),
            Distribution::ContainerOs
        );
        assert_eq!(
            Distribution::from_os_release("ID=debian\n"),
            Distribution::Other
        );
    }

    #[test]
    fn kube_proxy_defaults_yield_to_the_spec() {
        let table = FlagTable::builtin();
        let defaults = proxy(table, &mapping("{}"), "https://127.0.0.1").unwrap();
        assert_eq!(
            defaults.flags,
            [
                "--conntrack-max-per-core=131072",
                "--kubeconfig=/var/lib/kube-proxy/kubeconfig",
                "--master=https://127.0.0.1",
                "--oom-score-adj=-998"
            ]
        );
        let given = proxy(
            table,
            &mapping("master: https://lb\nconntrackMaxPerCore: 0\n"),
            "https://127.0.0.1",
        )
        .unwrap();
        assert!(given.flags.contains(&"--master=https://lb".to_owned()));
        assert!(given
            .flags
            .contains(&"--conntrack-max-per-core=0".to_owned()));
    }
}
