//! Keystone v3 as gophercloud reads the `OS_*` variables nodeup writes
//! (`nodeup/pkg/model/protokube.go`: `OS_APPLICATION_CREDENTIAL_*`, `OS_USERNAME`, `OS_PASSWORD`,
//! `OS_PROJECT_*` or `OS_TENANT_*`, `OS_DOMAIN_*`, `OS_AUTH_URL`, `OS_REGION_NAME`): an
//! application credential, else a user and password scoped to the project; the token from
//! `X-Subject-Token`, and the compute endpoint of the token's catalogue (public, in
//! `OS_REGION_NAME` when set).

use anyhow::{anyhow, bail, Context as _, Result};
use hyper::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::UsageError;
use crate::providers::rest::{Call, Rest};

/// The body of `POST /auth/tokens` from the variables `var` gives; a usage error naming the
/// variables when they say no credential.
pub(crate) fn auth_body(var: &dyn Fn(&str) -> Option<String>) -> Result<Value, UsageError> {
    let get = |names: &[&str]| names.iter().find_map(|n| var(n).filter(|v| !v.is_empty()));
    if let (Some(id), Some(secret)) = (
        get(&["OS_APPLICATION_CREDENTIAL_ID"]),
        get(&["OS_APPLICATION_CREDENTIAL_SECRET"]),
    ) {
        return Ok(json!({"auth": {"identity": {
            "methods": ["application_credential"],
            "application_credential": {"id": id, "secret": secret},
        }}}));
    }
    let (Some(user), Some(password)) = (get(&["OS_USERNAME"]), get(&["OS_PASSWORD"])) else {
        return Err(UsageError(
            "--cloud openstack: no credential: set `OS_APPLICATION_CREDENTIAL_ID` and \
             `OS_APPLICATION_CREDENTIAL_SECRET`, or `OS_USERNAME` and `OS_PASSWORD` (nodeup writes \
             them to /etc/sysconfig/protokube)"
                .to_owned(),
        ));
    };
    let domain = |name_vars: &[&str], id_vars: &[&str]| match (get(name_vars), get(id_vars)) {
        (Some(name), _) => json!({"name": name}),
        (None, Some(id)) => json!({"id": id}),
        (None, None) => json!({"id": "default"}),
    };
    let user_domain = domain(
        &["OS_USER_DOMAIN_NAME", "OS_DOMAIN_NAME"],
        &["OS_USER_DOMAIN_ID", "OS_DOMAIN_ID"],
    );
    let project = if let Some(id) = get(&["OS_PROJECT_ID", "OS_TENANT_ID"]) {
        json!({"id": id})
    } else if let Some(name) = get(&["OS_PROJECT_NAME", "OS_TENANT_NAME"]) {
        json!({"name": name, "domain": domain(
            &["OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME"],
            &["OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_ID"],
        )})
    } else {
        return Err(UsageError(
            "--cloud openstack: `OS_USERNAME` is set but no project: set `OS_PROJECT_ID` or \
             `OS_PROJECT_NAME`"
                .to_owned(),
        ));
    };
    Ok(json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": user_domain, "password": password,
        }}},
        "scope": {"project": project},
    }}))
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    token: Token,
}

#[derive(Debug, Deserialize)]
struct Token {
    catalog: Vec<CatalogEntry>,
}

#[derive(Debug, Deserialize)]
struct CatalogEntry {
    #[serde(rename = "type")]
    kind: String,
    endpoints: Vec<CatalogEndpoint>,
}

#[derive(Debug, Deserialize)]
struct CatalogEndpoint {
    interface: String,
    region: Option<String>,
    url: String,
}

/// A token and the compute endpoint its catalogue names.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) token: String,
    pub(crate) compute: String,
}

/// Asks Keystone (`keystone`, at `OS_AUTH_URL`) for a token with `body`; the token and the
/// public compute endpoint (in `region`, when given).
pub(crate) async fn authenticate(
    keystone: &Rest,
    body: Value,
    region: Option<&str>,
) -> Result<Session> {
    let call = Call {
        operation: "identity.tokens.create",
        method: Method::POST,
        path: "auth/tokens",
        body: Some(body),
    };
    let answer = keystone.send(&call).await?;
    let token = answer
        .headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| anyhow!("Keystone's token answer carries no `X-Subject-Token`"))?
        .to_owned();
    let read: TokenAnswer =
        serde_json::from_slice(&answer.body).context("reading Keystone's token answer")?;
    let compute = compute_endpoint(&read.token.catalog, region)?;
    Ok(Session { token, compute })
}

/// The public compute endpoint of `catalog` (in `region` when given), an `http(s)://` URL ending
/// in `/`.
fn compute_endpoint(catalog: &[CatalogEntry], region: Option<&str>) -> Result<String> {
    let found = catalog
        .iter()
        .filter(|e| e.kind == "compute")
        .flat_map(|e| &e.endpoints)
        .find(|e| e.interface == "public" && region.is_none_or(|r| e.region.as_deref() == Some(r)))
        .ok_or_else(|| {
            anyhow!(
                "Keystone's catalogue has no public compute endpoint{}",
                region
                    .map(|r| format!(" in region `{r}` (OS_REGION_NAME)"))
                    .unwrap_or_default()
            )
        })?;
    let url = found.url.trim();
    let plain = (url.starts_with("https://") || url.starts_with("http://"))
        && url
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'?' | b'#' | b'"' | b'\\'));
    if !plain {
        bail!(
            "Keystone's compute endpoint `{}` is not a URL",
            url.escape_debug()
        );
    }
    Ok(if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_credential_is_what_gophercloud_reads_from_nodeups_variables() {
        let app = auth_body(&vars(&[
            ("OS_APPLICATION_CREDENTIAL_ID", "ac1"),
            ("OS_APPLICATION_CREDENTIAL_SECRET", "s"),
            ("OS_USERNAME", "ignored"),
        ]))
        .unwrap();
        assert_eq!(
            app["auth"]["identity"]["methods"][0],
            "application_credential"
        );
        assert_eq!(
            app["auth"]["identity"]["application_credential"]["id"],
            "ac1"
        );
        let user = auth_body(&vars(&[
            ("OS_USERNAME", "kops"),
            ("OS_PASSWORD", "p"),
            ("OS_TENANT_NAME", "proj"),
            ("OS_DOMAIN_NAME", "corp"),
        ]))
        .unwrap();
        let password = &user["auth"]["identity"]["password"]["user"];
        assert_eq!(password["domain"]["name"], "corp");
        assert_eq!(user["auth"]["scope"]["project"]["name"], "proj");
        assert_eq!(user["auth"]["scope"]["project"]["domain"]["name"], "corp");
        let by_id = auth_body(&vars(&[
            ("OS_USERNAME", "u"),
            ("OS_PASSWORD", "p"),
            ("OS_PROJECT_ID", "p1"),
        ]))
        .unwrap();
        assert_eq!(by_id["auth"]["scope"]["project"], json!({"id": "p1"}));
        assert_eq!(
            by_id["auth"]["identity"]["password"]["user"]["domain"],
            json!({"id": "default"})
        );
        let none = auth_body(&vars(&[("OS_PASSWORD", "p")])).unwrap_err();
        assert!(none.0.contains("OS_APPLICATION_CREDENTIAL_ID") && none.0.contains("OS_USERNAME"));
    }

    #[test]
    fn the_compute_endpoint_is_the_catalogues_public_one_in_the_region() {
        let catalog: Vec<CatalogEntry> = serde_json::from_value(json!([
            {"type": "identity", "endpoints": [{"interface": "public", "region": "r1", "url": "https://k/v3"}]},
            {"type": "compute", "endpoints": [
                {"interface": "internal", "region": "r1", "url": "https://internal/v2.1"},
                {"interface": "public", "region": "r2", "url": "https://nova-r2/v2.1"},
                {"interface": "public", "region": "r1", "url": "https://nova-r1/v2.1"},
            ]},
        ]))
        .unwrap();
        assert_eq!(
            compute_endpoint(&catalog, Some("r1")).unwrap(),
            "https://nova-r1/v2.1/"
        );
        assert_eq!(
            compute_endpoint(&catalog, None).unwrap(),
            "https://nova-r2/v2.1/"
        );
        assert!(compute_endpoint(&catalog, Some("r3"))
            .unwrap_err()
            .to_string()
            .contains("OS_REGION_NAME"));
        let evil: Vec<CatalogEntry> = serde_json::from_value(json!([
            {"type": "compute", "endpoints": [{"interface": "public", "region": null, "url": "file:///etc/passwd"}]},
        ]))
        .unwrap();
        assert!(compute_endpoint(&evil, None).is_err());
    }
}
