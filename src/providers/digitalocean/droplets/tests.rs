//! DigitalOcean's droplets against a local HTTP answer (mockito): this droplet from the
//! metadata service, the control plane by the exact cluster tag over every page, and what is
//! refused. The shapes are DigitalOcean's API reference's (`GET /v2/droplets`) and its metadata
//! service's (`/metadata/v1/`).

use std::time::Duration;

use mockito::{Matcher, Server as MockServer};
use serde_json::{json, Value};

use super::*;
use crate::providers::digitalocean::{API, METADATA, PROVIDER};
use crate::providers::rest::{Calls, Rest};
use crate::wait::Deadline;

fn droplet(id: u64, name: &str, tags: &[&str], private: Option<&str>) -> Value {
    let mut v4: Vec<Value> = private
        .map(|ip| json!({"ip_address": ip, "netmask": "255.255.0.0", "gateway": "10.10.0.1", "type": "private"}))
        .into_iter()
        .collect();
    v4.push(json!({"ip_address": "203.0.113.9", "netmask": "255.255.255.0", "gateway": "203.0.113.1", "type": "public"}));
    json!({"id": id, "name": name, "status": "active", "tags": tags, "networks": {"v4": v4, "v6": []},
           "region": {"slug": "nyc1", "name": "New York 1"}})
}

fn droplets_at(url: &str) -> Droplets {
    let deadline = Deadline::after(Duration::from_secs(10));
    let calls = Calls::default();
    let metadata = Rest::new(
        &METADATA,
        &format!("{url}/metadata/v1/"),
        &[],
        deadline,
        calls.clone(),
        true,
    )
    .unwrap();
    let api = Rest::new(
        &API,
        &format!("{url}/v2/"),
        &[("authorization", "Bearer t0ken".to_owned())],
        deadline,
        calls,
        false,
    )
    .unwrap();
    Droplets::new(Clients::from_parts(
        &PROVIDER,
        metadata,
        Some(api),
        "DIGITALOCEAN_ACCESS_TOKEN",
    ))
}

#[tokio::test]
async fn this_droplet_is_its_hostname_region_and_cluster_tag() {
    let mut mock = MockServer::new_async().await;
    mock.mock("GET", "/metadata/v1/hostname")
        .with_body("nodes-nyc1-1")
        .create_async()
        .await;
    mock.mock("GET", "/metadata/v1/region")
        .with_body("nyc1")
        .create_async()
        .await;
    mock.mock("GET", "/metadata/v1/tags")
        .with_body("KubernetesCluster:c-k8s-local\nkops-instance-role:Node\n")
        .create_async()
        .await;
    let droplets = droplets_at(&mock.url());
    assert_eq!(
        droplets
            .get(MetadataItem::InstanceId)
            .await
            .unwrap()
            .unwrap(),
        "nodes-nyc1-1"
    );
    assert_eq!(
        droplets.get(MetadataItem::Region).await.unwrap().unwrap(),
        "nyc1"
    );
    let found = droplets.instance_tags("nodes-nyc1-1").await.unwrap();
    assert_eq!(found.get(tags::CLUSTER).unwrap(), "c-k8s-local");
    assert!(!found.contains_key(tags::CONTROL_PLANE_ROLE));
}

#[tokio::test]
async fn the_seeds_are_the_droplets_of_exactly_the_clusters_tag_on_every_page() {
    let mut mock = MockServer::new_async().await;
    let tag = "KubernetesCluster:c-k8s-local";
    let first = mock
        .mock("GET", "/v2/droplets")
        .match_header("authorization", "Bearer t0ken")
        .match_query(Matcher::AllOf(vec![
            Matcher::UrlEncoded("tag_name".into(), tag.into()),
            Matcher::UrlEncoded("per_page".into(), "200".into()),
            Matcher::UrlEncoded("page".into(), "1".into()),
        ]))
        .with_body(json!({
            "droplets": [
                droplet(1, "master-1", &[tag, "kops-instance-role:ControlPlane"], Some("10.10.0.2")),
                droplet(2, "nodes-1", &[tag, "kops-instance-role:Node"], Some("10.10.0.3")),
            ],
            "links": {"pages": {"next": "https://api.digitalocean.com/v2/droplets?page=2", "last": "https://api.digitalocean.com/v2/droplets?page=2"}},
            "meta": {"total": 3},
        }).to_string())
        .create_async()
        .await;
    let second = mock
        .mock("GET", "/v2/droplets")
        .match_query(Matcher::UrlEncoded("page".into(), "2".into()))
        .with_body(json!({
            "droplets": [
                droplet(3, "master-2", &[tag, "kops-instance-role:ControlPlane"], Some("10.10.0.4")),
                // Had the filter let it through: kOps' substring match would take it.
                droplet(4, "master-other", &["KubernetesCluster:c-k8s-local-2-k8s-local", "kops-instance-role:ControlPlane"], Some("10.9.0.4")),
            ],
            "links": {"pages": {"first": "https://api.digitalocean.com/v2/droplets?page=1", "prev": "https://api.digitalocean.com/v2/droplets?page=1"}},
            "meta": {"total": 4},
        }).to_string())
        .create_async()
        .await;
    let seeds = droplets_at(&mock.url())
        .running_masters("c.k8s.local")
        .await
        .unwrap();
    let found: Vec<(String, Vec<IpAddr>)> =
        seeds.into_iter().map(|i| (i.id, i.private_ips)).collect();
    assert_eq!(
        found,
        [
            ("master-1".to_owned(), vec!["10.10.0.2".parse().unwrap()]),
            ("master-2".to_owned(), vec!["10.10.0.4".parse().unwrap()]),
        ]
    );
    first.assert_async().await;
    second.assert_async().await;
}

#[tokio::test]
async fn a_refused_scope_names_the_token_and_what_it_lacks() {
    let mut mock = MockServer::new_async().await;
    mock.mock("GET", "/v2/droplets")
        .match_query(Matcher::Any)
        .with_status(403)
        .with_body(json!({"id": "forbidden", "message": "You do not have access for the attempted action."}).to_string())
        .create_async()
        .await;
    let err = droplets_at(&mock.url())
        .running_masters("c.k8s.local")
        .await
        .unwrap_err();
    let denied = crate::cloud::AccessDenied::in_chain(&err).expect("a refused permission");
    assert!(denied.permission.contains("droplet:read"), "{denied}");
    assert!(denied.detail.contains("HTTP 403 forbidden"), "{denied}");
    mock.mock("GET", "/metadata/v1/hostname")
        .with_body("evil\n10.0.0.1 api")
        .create_async()
        .await;
    mock.mock("GET", "/metadata/v1/region")
        .with_body("nyc1")
        .create_async()
        .await;
    mock.mock("GET", "/metadata/v1/tags")
        .with_body("")
        .create_async()
        .await;
    let err = droplets_at(&mock.url())
        .get(MetadataItem::InstanceId)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a host name"), "{err:#}");
}
